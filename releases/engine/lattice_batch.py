"""The lattice path's exact samplers for many coordinates at once, in integer numpy.

Each function draws, for a whole vector of coordinates, what a scalar sampler of
:mod:`releases.engine.lattice_coins` draws for one, with the same law exactly (the route may
differ, and a seeded source gives other values). Loops run over rounds on the coordinates
still undecided, never over coordinates, and the rare coordinate whose uniform falls on a
bracket is finished by a scalar function that reads more bits of the same uniform. Every
decision is a comparison of integers:

* a uniform integer below ``n`` (:func:`below`): below ``2^31``, Lemire's multiply-and-reject
  on a 32-bit uniform ``w`` (``w n = 2^32 U + low``, refused when ``low < 2^32 mod n``: every
  ``U`` then has exactly ``floor(2^32 / n)`` accepted ``w``); above, 64 masked bits, refused at
  or above ``n``;
* a constant of the levels (:func:`flips`): a 32-bit uniform against the coin's 32-bit bracket;
* geometrics (:func:`geometric`) from their binary digits, each a constant coin of the level,
  and discrete Laplace draws (:func:`dlap`): a constant zero coin, then ``1 +`` a geometric
  with a fair sign;
* rejection loops run as trials, several per coordinate at once (:func:`first_accepted`).

Levels are any int64 ``s/t``: the only arithmetic on them is in the exact constants. This
module never imports Django.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import exact_bounds
from . import lattice_coins as coins

__all__ = ["halves", "below", "flips", "first_accepted", "geometric", "geometric_levels", "dlap", "signs"]

_TWO32 = 1 << 32
_LOW = np.int64(_TWO32 - 1)



def words(rng, n: int) -> np.ndarray:
    """``n`` uniform 64-bit words: ``rng.u64(n)`` for a buffer that has it, else
    ``rng.getrandbits(64 n)`` cut into words (each bit used once)."""
    if n <= 0:
        return np.empty(0, dtype=np.uint64)
    if hasattr(rng, "u64"):  # a buffer (releases.engine.lattice._Bits): its own block of words
        return rng.u64(n)
    raw = rng.getrandbits(64 * n).to_bytes(8 * n, "little")
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)

def halves(src, n: int) -> np.ndarray:
    """``n`` uniform 32-bit integers (int64): the two halves of ``ceil(n/2)`` words."""
    return words(src, (n + 1) // 2).view(np.uint32)[:n].astype(np.int64)


def below(src, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, ok)``: one trial of a uniform integer below each ``n`` (``1 <= n < 2^62``): ``u`` is
    uniform on ``[0, n)`` where ``ok``; a trial with ``ok`` false is refused. Bounds below
    ``2^31``: Lemire's multiply-and-reject on 32 bits; larger ones: 64 bits masked to the
    smallest power of two above ``n - 1``, refused at or above ``n`` (probability below 1/2)."""
    if not n.size or int(n.max()) < _TWO32 >> 1:
        x = halves(src, n.size) * n
        return x >> 32, (x & _LOW) >= (_TWO32 % n)
    mask = (n - 1).astype(np.uint64)
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(shift)
    u = (words(src, n.size) & mask).astype(np.int64)
    return u, u < n


def flips(src, table: list, which: np.ndarray) -> np.ndarray:
    """For each coordinate, a flip of the constant coin ``table[which[i]]`` (a
    :class:`~releases.engine.lattice_coins._Coin`; None for a coin no coordinate flips): a 32-bit
    uniform against its 32-bit bracket,
    finished by the coin itself in the rare case the uniform lies inside it."""
    if not which.size:
        return np.zeros(0, dtype=bool)
    pairs = np.take(_brackets32(tuple(table)), which, axis=0)  # a row gather: faster than pairs[which]
    w = halves(src, which.size)
    yes = w < pairs[:, 0]
    open_ = ~yes & (w < pairs[:, 1])
    if open_.any():
        for i in np.flatnonzero(open_).tolist():
            yes[i] = table[int(which[i])].finish(src, int(w[i]), 32)
    return yes


@lru_cache(maxsize=256)
def _brackets32(table: tuple) -> np.ndarray:
    """The coins' 32-bit brackets as rows of an int64 array, read-only, kept for the next call with
    the same coins (the key holds the coins themselves: a coin's bracket never changes)."""
    pairs = np.array([(0, 0) if c is None else c.brackets(32) for c in table], dtype=np.int64).reshape(-1, 2)
    pairs.flags.writeable = False
    return pairs


def signs(src, n: int) -> np.ndarray:
    """``n`` fair bits as booleans."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    return np.unpackbits(words(src, -(-n // 64)).view(np.uint8))[:n].astype(bool)


def _levels_of(s: np.ndarray, t: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct levels ``(s, t)`` and each coordinate's index among them."""
    if not s.size or ((s == s[0]).all() and (t == t[0]).all()):
        return ([(int(s[0]), int(t[0]))] if s.size else []), np.zeros(s.size, dtype=np.int64)
    base = int(t.max()) + 1
    if int(s.max()) * base + base < 1 << 63:  # one int64 key per level: a fast unique
        keys, which = np.unique(s * base + t, return_inverse=True)
        return [divmod(k, base) for k in keys.tolist()], which.reshape(-1)
    pairs, which = np.unique(np.stack([s, t], axis=1), axis=0, return_inverse=True)
    return [(a, b) for a, b in pairs.tolist()], which.reshape(-1)


#: At most this many coordinates left after a round of :func:`first_accepted` are finished one
#: by one (its ``rest``): a round of numpy calls costs about as much as some 50 scalar loops.
FEW = 48


def first_accepted(m: int, trial, rest=None) -> np.ndarray:
    """For each of ``m`` coordinates, the value of its first accepted trial of a rejection loop.

    ``trial(rows)`` runs one independent trial for each entry of ``rows`` (coordinates, each
    possibly several times) and returns ``(accepted, value)``. One trial per coordinate is run
    first, then three at once for those that need another round; the first accepted (in the
    order of ``rows``) is the coordinate's: the law of the scalar loop that tries until one is
    accepted. (The relaxation's loops keep at least about a third of their trials, most near
    all: one round of two trials each cost more than a round of one and a round of three for
    the few left.)
    ``rest(rows)``, if given, runs that scalar loop for each of ``rows`` (their values): once at
    most :data:`FEW` coordinates are left they are finished by it. Trials are independent and a
    refused one leaves nothing behind, so a loop started afresh after any number of refusals
    has the law of the loop it continues.
    """
    out = np.empty(m, dtype=np.int64)
    todo = np.arange(m)
    per = 1
    while todo.size:
        if rest is not None and per > 1 and todo.size <= FEW:
            out[todo] = rest(todo)
            break
        accepted, value = trial(np.repeat(todo, per))
        accepted = accepted.reshape(-1, per)
        has = accepted.any(axis=1)
        first = np.argmax(accepted, axis=1)[has]
        out[todo[has]] = value.reshape(-1, per)[has, first]
        todo = todo[~has]
        per = 3
    return out


#: Digits drawn beyond the first ``L`` (:func:`_digit_table`): the geometric above them has ratio
#: at most ``e^{-32}``, so it is 0 but with probability below ``1.3e-14`` (one constant coin).
_MORE = 6


class _Digits:
    """A level's binary-digit constants for :func:`geometric`: the coins of the digits below
    ``size = L + 6`` (:func:`~releases.engine.lattice_coins._digits`) with their 8-bit brackets
    (lower end and width, uint8) and 40-bit ones, and the coin ``top``, ``P(G >= 2^size) =
    e^{-2^size s/t}``."""

    __slots__ = ("s", "t", "size", "coins", "lo8", "width8", "lo40", "hi40", "top")

    def __init__(self, s: int, t: int):
        self.s, self.t = s, t
        self.size, self.coins = coins._digits(s, t, _MORE)
        # the 40-bit brackets of p_i = x / (1 + x), x = alpha^{2^i}, from one bracket of alpha squared
        # again and again (each operation rounds outwards); the 8-bit ones are their ends rounded out
        eb, bits, b40 = exact_bounds, 72 + self.size, []  # squaring doubles the relative width
        one, power = eb.exact(1, 1, bits), eb.exp_neg(s, t, bits)
        for _ in range(self.size):
            b40.append(eb.div(power, eb.add(one, power, bits), bits).scaled(40))
            power = eb.mul(power, power, bits)
        b40 = np.array(b40, dtype=np.int64).reshape(-1, 2)
        lo8, hi8 = b40[:, 0] >> 32, -(-b40[:, 1] >> 32)  # every p_i < 1/2: below 2^7
        self.lo8, self.width8 = lo8.astype(np.uint8), (hi8 - lo8).astype(np.uint8)
        self.lo40, self.hi40 = b40[:, 0], b40[:, 1]
        self.top = coins._Coin(lambda bits, x=s << self.size: exact_bounds.exp_neg(x, t, bits))


@lru_cache(maxsize=512)
def _digit_table(s: int, t: int) -> _Digits:
    return _Digits(s, t)


def _padded(tables: list, name: str, width: int, dtype) -> np.ndarray:
    """The tables' ``name`` arrays as rows of one array, each padded with zeros to ``width``
    (a padded digit's bracket is empty: it is never 1 and never read further)."""
    out = np.zeros((len(tables), width), dtype=dtype)
    for g, table in enumerate(tables):
        row = getattr(table, name)
        out[g, : row.size] = row
    return out


@lru_cache(maxsize=256)
def _brackets_of(tables: tuple) -> tuple:
    """The brackets of the :class:`_Digits` ``tables`` for :func:`geometric_levels`: ``width``
    (the most digits, and one), the tables' sizes (int64) and the 8-bit and 40-bit brackets, one
    row per table (read-only): its digits', then at column ``size`` those of its coin ``top``
    (``P(G >= 2^size)``, read as one more digit), then zeros to ``width``. Kept for the next call
    with the same tables (the key holds the tables themselves)."""
    width = max(d.size for d in tables) + 1
    arrays = [_padded(tables, name, width, dtype) for name, dtype in
              (("lo8", np.uint8), ("width8", np.uint8), ("lo40", np.int64), ("hi40", np.int64))]
    lo8, width8, lo40, hi40 = arrays
    for g, d in enumerate(tables):
        low, high = d.top.brackets(40)  # below 2^8: P(G >= 2^size) < e^{-32}
        lo8[g, d.size], width8[g, d.size] = low >> 32, -(-high >> 32) - (low >> 32)
        lo40[g, d.size], hi40[g, d.size] = low, high
    sizes = np.array([d.size for d in tables], dtype=np.int64)
    for a in (sizes, *arrays):
        a.flags.writeable = False
    return width, sizes, *arrays


def geometric(src, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``G >= 0`` with ``P(G = g)`` proportional to ``e^{-g s/t}`` for each coordinate
    (``0 < s, t``, int64): :func:`geometric_levels` on the distinct levels of ``s/t``."""
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    return geometric_levels(src, *_levels_of(s, t))


def geometric_levels(src, levels: list, which: np.ndarray) -> np.ndarray:
    """``G >= 0`` with ``P(G = g)`` proportional to ``e^{-g s/t}`` for each coordinate ``i``, its
    level ``s/t = levels[which[i]]`` (``levels``: pairs of ints ``0 < s, t``), all levels at once,
    from binary digits (:class:`_Digits`).

    ``P(G = g)`` is proportional to ``alpha^g`` (``alpha = e^{-s/t}``), the product over ``g``'s
    binary digits ``b_i`` of ``alpha^{b_i 2^i}``: the digits are independent coins, digit ``i``
    one with probability ``alpha^{2^i} / (1 + alpha^{2^i})``, and ``floor(G / 2^D)`` is
    independent of the ``D`` digits below it, a geometric of ratio ``alpha^{2^D}``. ``D = L + 6``
    (``2^L s/t >= 1/2``), so that it is 0 but with probability below ``e^{-32}``: one constant
    coin says so, read as one more digit (a set one adds ``2^D``), and in the rare other case
    ``G`` is ``2^D`` times ``1 +`` a geometric of that ratio (the scalar
    :func:`~releases.engine.lattice_coins._geometric`) and its digits. A digit's uniform is read 8 bits first
    and compared with the 8-bit bracket of its probability; those on the bracket (probability
    about ``2^-8``) read 32 more together, against the 40-bit bracket, and the very rare ones
    still on it are finished by the coin itself. A caller that knows each coordinate's level
    among a few (the relaxation: one per pair of levels) passes them here and saves finding
    them (:func:`_levels_of`, a sort)."""
    n = which.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    tables = tuple(_digit_table(a, b) for a, b in levels)
    width, sizes, lo8, width8, lo40, hi40 = _brackets_of(tables)
    if len(tables) == 1:
        lo8, width8 = lo8[0], width8[0]
    else:  # row gathers (np.take: several times faster than lo8[which])
        lo8, width8 = np.take(lo8, which, axis=0), np.take(width8, which, axis=0)
    w = words(src, -(-n * width // 8)).view(np.uint8)[: n * width].reshape(n, width)
    ones = w < lo8
    at = np.flatnonzero((w - lo8) < width8)  # lo8 <= w < hi8 (uint8 arithmetic wraps below lo8)
    if at.size:
        rows, cols = at // width, at % width
        u = (w[rows, cols].astype(np.int64) << 32) | halves(src, rows.size)
        groups = which[rows] if len(tables) > 1 else np.zeros(rows.size, dtype=np.int64)
        low, high = lo40[groups, cols], hi40[groups, cols]
        yes = u < low
        for k in np.flatnonzero(~yes & (u < high)).tolist():
            d, col = tables[int(groups[k])], int(cols[k])
            yes[k] = (d.coins[col] if col < d.size else d.top).finish(src, int(u[k]), 40)
        ones[rows, cols] = yes
    out = ones.dot(np.int64(1) << np.arange(width, dtype=np.int64))  # a set top coin adds 2^D
    beyond = out >> (sizes[0] if len(tables) == 1 else np.take(sizes, which))
    for i in np.flatnonzero(beyond).tolist():  # G >= 2^D: probability below 1.3e-14
        d = tables[int(which[i])]
        out[i] += coins._geometric(src, d.s << d.size, d.t) << d.size
    return out


def dlap(src, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``DLap(e^{-s/t})`` for each coordinate (``0 < s, t``, int64): 0 by the constant coin
    ``P(V = 0) = (1 - alpha)/(1 + alpha)`` (:func:`~releases.engine.lattice_coins._zero`), else
    ``1 +`` a geometric of ratio ``alpha`` with an even sign: the law of
    :func:`~releases.engine.lattice_coins._dlap` (which draws levels below 1/2 by CKS Algorithm 2,
    a geometric and a sign with "-0" refused: the same law, ``P(k)`` proportional to
    ``alpha^|k|``)."""
    out = np.zeros(s.size, dtype=np.int64)
    levels, which = _levels_of(s, t)
    table = [coins._zero(a, b) for a, b in levels]
    moves = np.flatnonzero(~flips(src, table, which))
    y = 1 + geometric(src, s[moves], t[moves])
    out[moves] = np.where(signs(src, moves.size), -y, y)
    return out
