"""The lattice path's exact samplers for many coordinates at once, in integer numpy.

Each function makes, for a whole vector of coordinates, the decisions that the scalar
samplers of :mod:`releases.engine.lattice_coins` make for one, so that its law is theirs
exactly; only the order in which the bits are read differs (a seeded source gives other
values). Loops run over rounds on the coordinates still undecided, never over coordinates,
and the rare coordinate whose uniform falls inside a bracket is finished by a scalar
function that reads more bits of the same uniform. Every decision is a comparison of
integers:

* ``Bernoulli(num/den)`` (:func:`ratio`): ``U < num/den`` for a uniform ``U`` whose first
  32 bits ``w`` are known: yes if ``(w + 1) den <= num 2^32``, no if ``w den >= num 2^32``,
  and otherwise (probability below ``2^-32``) :func:`~releases.engine.lattice_coins._ratio_finish`;
* a uniform integer below ``n < 2^31`` (:func:`below`): Lemire's multiply-and-reject on a
  32-bit uniform ``w``: ``w n = 2^32 U + low``, refused when ``low < 2^32 mod n`` (every ``U``
  then has exactly ``floor(2^32 / n)`` accepted ``w``);
* ``Bernoulli(e^{-num/den})`` (:func:`bern_exp`): Canonne, Kamath and Steinke's Algorithm 1, its
  coins ``Bernoulli(num / (den k))`` drawn two or four columns ``k`` at a time;
* a constant of the levels (:func:`flips`): a 64-bit uniform against the coin's 64-bit bracket;
* geometrics (:func:`geometric`) and discrete Laplace draws (:func:`dlap`), as
  :func:`~releases.engine.lattice_coins._geometric` and
  :func:`~releases.engine.lattice_coins._dlap` draw them: from ratio 1/2 up, by comparing one
  uniform with the brackets of ``e^{-j s/t}`` (the count of ``Bernoulli(e^{-s/t})`` successes
  before a failure, which has the same law), below it by CKS Algorithm 2 with its rejection
  run as trials, several per coordinate at once (the first accepted trial is the draw).

Bounds: the coins of :func:`ratio`, :func:`below` and :func:`bern_exp` take denominators and
bounds below :data:`LIMIT` (every product stays inside an int64), and callers leave larger ones
to the scalar samplers; :func:`geometric` and :func:`dlap` take any int64 level (their only
arithmetic on ``s`` and ``t`` is in the exact constants). This module never imports Django.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import exact_bounds
from . import lattice_coins as coins
from .lattice_vector import words

__all__ = ["LIMIT", "halves", "ratio", "below", "bern_exp", "flips", "units", "first_accepted", "geometric", "dlap", "signs"]

#: Denominators and bounds handled here are below this (``2^32 * 8 LIMIT < 2^63``).
LIMIT = 1 << 28
_TWO32 = 1 << 32
_LOW = np.int64(_TWO32 - 1)
#: The coins ``k`` of CKS Algorithm 1 drawn at once (:func:`bern_exp_small`).
_KS = np.arange(1, 5, dtype=np.int64)


def halves(src, n: int) -> np.ndarray:
    """``n`` uniform 32-bit integers (int64): the two halves of ``ceil(n/2)`` words."""
    return words(src, (n + 1) // 2).view(np.uint32)[:n].astype(np.int64)


def quarters(src, n: int) -> np.ndarray:
    """``n`` uniform 16-bit integers (int64): the four quarters of ``ceil(n/4)`` words."""
    return words(src, (n + 3) // 4).view(np.uint16)[:n].astype(np.int64)


def ratio(src, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``Bernoulli(num/den)`` for each pair (``0 <= num <= den < 2^31``), from the first 16 bits of
    each uniform (more only when they fall on the boundary: probability below ``2^-16``)."""
    w = quarters(src, num.size)
    top = num << 16
    yes = (w + 1) * den <= top
    open_ = ~yes & (w * den < top)
    if open_.any():
        for i in np.flatnonzero(open_).tolist():
            yes[i] = coins._ratio_finish(src, int(w[i]), 16, int(num[i]), int(den[i]))
    return yes


def below(src, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, ok)``: one trial of a uniform integer below each ``n`` (``1 <= n < 2^31``): ``u`` is
    uniform on ``[0, n)`` where ``ok``; a trial with ``ok`` false is refused."""
    x = halves(src, n.size) * n
    return x >> 32, (x & _LOW) >= (_TWO32 % n)


def bern_exp_small(src, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``Bernoulli(e^{-num/den})`` for ``0 <= num <= den < LIMIT`` (CKS Algorithm 1): for
    ``k = 1, 2, ...`` a coin ``Bernoulli(num / (den k))``; the first that fails ends it, heads iff
    its ``k`` is odd. Four columns ``k`` for every coordinate at once (all four go on with
    probability at most 1/24); the few still going are finished one at a time from coin 5."""
    cols = 4
    go = ratio(src, np.repeat(num, cols), (den[:, None] * _KS).reshape(-1)).reshape(-1, cols)
    heads = np.argmin(go, axis=1) % 2 == 0  # the first coin that failed is coin 1 or 3
    going = go[:, -1] & go.all(axis=1)
    if going.any():
        for i in np.flatnonzero(going).tolist():
            heads[i] = coins._bern_exp_small(src, int(num[i]), int(den[i]), cols + 1)
    return heads


def units(src, n: int) -> np.ndarray:
    """``n`` draws of ``V`` with ``P(V >= j) = e^{-j}`` (:func:`~releases.engine.lattice_coins._units`)."""
    return _count(src, 1, 1, n)


def bern_exp(src, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``Bernoulli(e^{-num/den})`` for ``num >= 0``, ``0 < den < LIMIT`` (as
    :func:`~releases.engine.lattice_coins._bern_exp`: ``e^{-whole}`` by :func:`units`, the rest by
    :func:`bern_exp_small`)."""
    whole = np.where(num > den, (num - 1) // den, 0)
    heads = bern_exp_small(src, num - whole * den, den)
    big = np.flatnonzero(whole > 0)
    if big.size:
        heads[big] &= units(src, big.size) >= whole[big]
    return heads


def flips(src, table: list, which: np.ndarray) -> np.ndarray:
    """For each coordinate, a flip of the constant coin ``table[which[i]]`` (a
    :class:`~releases.engine.lattice_coins._Coin`; None for a coin no coordinate flips): a 32-bit
    uniform against its 32-bit bracket,
    finished by the coin itself in the rare case the uniform lies inside it."""
    if not which.size:
        return np.zeros(0, dtype=bool)
    pairs = np.array([(0, 0) if c is None else c.brackets(32) for c in table], dtype=np.int64)[which]
    w = halves(src, which.size)
    yes = w < pairs[:, 0]
    open_ = ~yes & (w < pairs[:, 1])
    if open_.any():
        for i in np.flatnonzero(open_).tolist():
            yes[i] = table[int(which[i])].finish(src, int(w[i]), 32)
    return yes


def signs(src, n: int) -> np.ndarray:
    """``n`` fair bits as booleans."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    return np.unpackbits(words(src, -(-n // 64)).view(np.uint8))[:n].astype(bool)


@lru_cache(maxsize=256)
def _count_table(s: int, t: int, source) -> tuple[np.ndarray, np.ndarray]:
    """The brackets of ``e^{-j s/t}`` (:func:`~releases.engine.lattice_coins._power_brackets`, or
    ``_unit_brackets`` for ``s = t = 1``: ``source``, part of the key) as arrays: the lower ends ascending (``lo_J .. lo_1``),
    and the upper ends ``hi_1 .. hi_J`` then 0 (past the table)."""
    brackets = source() if s == t == 1 else source(s, t)
    lo = np.array([b[0] for b in brackets[1:]][::-1], dtype=np.uint64)
    hi = np.array([b[1] for b in brackets[1:]] + [0], dtype=np.uint64)
    return lo, hi


def _count(src, s: int, t: int, n: int) -> np.ndarray:
    """``n`` geometrics of ratio ``e^{-s/t}``: the number of ``j >= 1`` with ``U < e^{-j s/t}``, one
    uniform ``U`` each, whose first 64 bits ``u`` are compared with the level's 64-bit brackets:
    ``c = #{j: u < lo_j}``, decided when ``u >= hi_{c+1}``; the rare ``u`` inside a bracket are
    finished by :func:`~releases.engine.lattice_coins._units_from` (more bits of the same ``U``)."""
    lo, hi = _count_table(s, t, coins._unit_brackets if s == t == 1 else coins._power_brackets)
    u = words(src, n)
    c = lo.size - np.searchsorted(lo, u, side="right")
    out = c.astype(np.int64)
    open_ = (u < hi[c]) | (c == lo.size)
    if open_.any():
        for i in np.flatnonzero(open_).tolist():
            out[i] = coins._units_from(src, int(u[i]), int(c[i]) + 1, s, t)
    return out


def _levels_of(s: np.ndarray, t: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct levels ``(s, t)`` and each coordinate's index among them."""
    if not s.size or ((s == s[0]).all() and (t == t[0]).all()):
        return ([(int(s[0]), int(t[0]))] if s.size else []), np.zeros(s.size, dtype=np.int64)
    pairs, which = np.unique(np.stack([s, t], axis=1), axis=0, return_inverse=True)
    return [(a, b) for a, b in pairs.tolist()], which.reshape(-1)


def first_accepted(m: int, trial) -> np.ndarray:
    """For each of ``m`` coordinates, the value of its first accepted trial of a rejection loop.

    ``trial(rows)`` runs one independent trial for each entry of ``rows`` (coordinates, each
    possibly several times) and returns ``(accepted, value)``. Two trials per coordinate are run
    at once, four for those that need another round; the first accepted (in the order of
    ``rows``) is the coordinate's: the law of the scalar loop that tries until one is accepted.
    """
    out = np.empty(m, dtype=np.int64)
    todo = np.arange(m)
    per = 2
    while todo.size:
        accepted, value = trial(np.repeat(todo, per))
        accepted = accepted.reshape(-1, per)
        has = accepted.any(axis=1)
        first = np.argmax(accepted, axis=1)[has]
        out[todo[has]] = value.reshape(-1, per)[has, first]
        todo = todo[~has]
        per = 4
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
    """The tables' ``name`` arrays as rows of one array, each padded with zeros to ``width``."""
    out = np.zeros((len(tables), width), dtype=dtype)
    for g, table in enumerate(tables):
        row = getattr(table, name)
        out[g, : row.size] = row
    return out


def geometric(src, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``G >= 0`` with ``P(G = g)`` proportional to ``e^{-g s/t}`` for each coordinate
    (``0 < s, t``, int64), all levels at once, from binary digits (:class:`_Digits`).

    ``P(G = g)`` is proportional to ``alpha^g`` (``alpha = e^{-s/t}``), the product over ``g``'s
    binary digits ``b_i`` of ``alpha^{b_i 2^i}``: the digits are independent coins, digit ``i``
    one with probability ``alpha^{2^i} / (1 + alpha^{2^i})``, and ``floor(G / 2^D)`` is
    independent of the ``D`` digits below it, a geometric of ratio ``alpha^{2^D}``. ``D = L + 6``
    (``2^L s/t >= 1/2``), so that it is 0 but with probability below ``e^{-32}``: one constant
    coin says so, and in the rare other case it is ``1 +`` a geometric of that ratio (the scalar
    :func:`~releases.engine.lattice_coins._geometric`). A digit's uniform is read 8 bits first
    and compared with the 8-bit bracket of its probability; those on the bracket (probability
    about ``2^-8``) read 32 more together, against the 40-bit bracket, and the very rare ones
    still on it are finished by the coin itself."""
    n = s.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    levels, which = _levels_of(s, t)
    tables = [_digit_table(a, b) for a, b in levels]
    width = max(d.size for d in tables)
    if len(tables) == 1:
        lo8, width8, lo40, hi40 = tables[0].lo8, tables[0].width8, tables[0].lo40, tables[0].hi40
    else:
        lo8 = _padded(tables, "lo8", width, np.uint8)[which]
        width8 = _padded(tables, "width8", width, np.uint8)[which]
        lo40, hi40 = _padded(tables, "lo40", width, np.int64), _padded(tables, "hi40", width, np.int64)
    w = words(src, -(-n * width // 8)).view(np.uint8)[: n * width].reshape(n, width)
    ones = w < lo8
    at = np.flatnonzero((w - lo8) < width8)  # lo8 <= w < hi8 (uint8 arithmetic wraps below lo8)
    if at.size:
        rows, cols = at // width, at % width
        u = (w[rows, cols].astype(np.int64) << 32) | halves(src, rows.size)
        if len(tables) == 1:
            low, high = lo40[cols], hi40[cols]
        else:
            low, high = lo40[which[rows], cols], hi40[which[rows], cols]
        yes = u < low
        for k in np.flatnonzero(~yes & (u < high)).tolist():
            yes[k] = tables[int(which[rows[k]])].coins[int(cols[k])].finish(src, int(u[k]), 40)
        ones[rows, cols] = yes
    out = ones.dot(np.int64(1) << np.arange(width, dtype=np.int64))
    high = np.flatnonzero(flips(src, [d.top for d in tables], which))
    for i in high.tolist():  # G >= 2^D: probability below 1.3e-14
        d = tables[int(which[i])]
        out[i] += (1 + coins._geometric(src, d.s << d.size, d.t)) << d.size
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
