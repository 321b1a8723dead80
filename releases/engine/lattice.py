"""The exact lattice path: gradual release with integer noise, pure eps-DP
(docs/mathematics.md, "The exact lattice path").

``V_level`` is a path of integer noise, one per coordinate: at every level it
is discrete Laplace, ``P(V = k) = (1 - alpha) / (1 + alpha) * alpha^|k|`` with
``alpha = e^{-level}``, so ``u + V_level`` is ``level``-DP for an integer
answer ``u`` of l1-sensitivity 1. A listing whose coordinate ``i`` has
sensitivity ``w_i`` lattice units runs coordinate ``i`` at level
``eps / w_i`` (one level per coordinate).

The steps between levels are the lattice forms of the float path's:

* :func:`tighten` (``hi -> lo``): ``V_lo = V_hi + W`` with ``W`` independent
  of ``V_hi``: ``W = 0`` with probability ``p0 = (b/a) ((1-a)/(1-b))^2``,
  else ``W ~ DLap(a)`` (``a = e^{-lo}``, ``b = e^{-hi}``). Releasing any set
  of levels therefore costs the largest one.
* :func:`relax` (``lo -> hi``), ``V_hi`` given ``V_lo = x``: it stays at ``x``
  with probability ``r^{|x|+1} (1-a^2)/(1-b^2)`` (``r = b/a``); otherwise it
  moves to ``y`` with probability proportional to ``r^{|y|} a^{2 dist(y)}``,
  ``dist(y)`` the distance from ``y`` to the integers between 0 and ``x``
  (drawn part by part: between 0 and ``x``, beyond ``x``, beyond 0, each
  proposed with an integer weight read off exact brackets and kept with an
  exact coin, so that a move takes about one round whatever the levels and
  ``x``; see :func:`_relax1`).
* :func:`bridge` (``lo < mid < hi``, both ends known): ``V_mid`` given both,
  proportional to ``P(W1 = v - x_hi) P(W2 = x_lo - v)`` for the tightening
  increments ``W1`` (``hi -> mid``) and ``W2`` (``mid -> lo``). It is
  ``x_hi`` with a probability that is a constant of the three levels, and
  otherwise the relaxation from ``lo`` to ``mid`` started at ``x_lo - x_hi``,
  shifted by ``x_hi`` (ends equal: a constant coin and a geometric); see
  :func:`_bridge1`. Its cost does not depend on the levels or the ends.

No floating-point number enters any decision. Levels are exact rationals
(``Fraction``, ``Decimal``, ``int`` or a decimal string; a ``float`` is
refused), and every random choice is one of:

* a uniform integer below ``n`` from ``rng.getrandbits`` (by rejection);
* ``Bernoulli(e^{-gamma})`` for rational ``gamma`` (Canonne, Kamath and
  Steinke 2020, Algorithm 1);
* ``DLap(e^{-lambda})`` and the one-sided geometric for rational ``lambda``
  (their Algorithm 2);
* ``Bernoulli(p)`` for a constant ``p`` of the levels, such as ``e^{-1}``,
  ``(1-e^{-s})/(1-e^{-t})`` or the bridge's two constants: a uniform number
  drawn 24 bits, then 64 at a time, is compared with integer brackets of
  ``p`` computed exactly (:class:`_Coin`, :mod:`releases.engine.exact_bounds`); the
  first 24 bits decide but with probability about ``2^-23``, and then 64
  more are drawn and the bracket is tightened;
* products and complements of these.

The discrete Laplace draws of :func:`sample` and :func:`tighten` at levels
below 1/2 are made for all their coordinates at once, in integer numpy
(:mod:`releases.engine.lattice_vector`): the same algorithm and decisions as
:func:`_dlap`, so the same law (a seeded source gives other values, its bits
being read in another order).

``rng`` is any object with ``getrandbits(k)``: :func:`new_rng` (the operating
system's generator, ``secrets.SystemRandom``) in the product,
``random.Random(seed)`` in tests. The public steps read a system generator
through a buffer (:class:`_Bits`) that fetches its bits in large blocks.
This module never imports Django.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction
from functools import lru_cache
from numbers import Integral

import numpy as np

from releases.engine import exact_bounds, lattice_vector

from .lattice_accuracy import error_bound, tail_probability  # noqa: F401  (part of this module's interface)
from .lattice_inputs import (  # noqa: F401  (part of this module's interface)
    _INT64,
    MAX_LEVEL,
    MIN_LEVEL,
    GeneratorBits,
    _levels,
    _noise,
    _out,
    _size,
    as_level,
    new_rng,
)

__all__ = [
    "sample",
    "relax",
    "tighten",
    "bridge",
    "step",
    "levels_for",
    "error_bound",
    "tail_probability",
    "new_rng",
    "as_level",
    "GeneratorBits",
]


# --------------------------------------------------------------------------
# the bit source


class _Bits:
    """``rng``'s bits, fetched 32,768 at a time and handed out in order (and, for the batched
    draws of :mod:`releases.engine.lattice_vector`, whole 64-bit words from blocks of their own:
    :meth:`u64`).

    ``secrets.SystemRandom`` makes a system call for every ``getrandbits``; the
    coins below ask for a few bits at a time, dozens of times a coordinate.
    This buffer asks ``rng`` for one large block and serves each request from
    its next bits: the bits handed out are the block's bits, each used once,
    so they are as uniform and independent as ``rng``'s own.
    """

    __slots__ = ("rng", "word", "left", "words", "batch", "used")

    BLOCK = 1 << 15

    def __init__(self, rng):
        self.rng = rng
        self.word = 0  # the next ``left`` bits, lowest first
        self.left = 0
        self.words: list[int] = []  # later 64-bit words, last first
        self.batch = np.empty(0, dtype=np.uint64)  # words for the batched draws (lattice_vector) ...
        self.used = 0  # ... of which the first ``used`` are handed out

    def u64(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit words for the batched draws, from a block of their own (fetched
        ``BLOCK`` bits or more at a time; words left in a block too short are dropped, never reused)."""
        if self.used + n > self.batch.size:
            size = max(n, self.BLOCK // 64)
            block = self.rng.getrandbits(64 * size).to_bytes(8 * size, "little")
            self.batch, self.used = np.frombuffer(block, dtype="<u8").astype(np.uint64), 0
        out = self.batch[self.used : self.used + n]
        self.used += n
        return out

    def getrandbits(self, k: int) -> int:
        left = self.left
        if k <= left:
            word = self.word
            self.word = word >> k
            self.left = left - k
            return word & ((1 << k) - 1)
        value = self.word
        while left < k:
            if not self.words:
                block = self.rng.getrandbits(self.BLOCK).to_bytes(self.BLOCK // 8, "little")
                self.words = np.frombuffer(block, dtype="<u8").tolist()
            value |= self.words.pop() << left
            left += 64
        self.word = value >> k
        self.left = left - k
        return value & ((1 << k) - 1)


def _bit_source(rng):
    """A :class:`_Bits` buffer over the operating system's generator (``secrets.SystemRandom``,
    whose every call reads the kernel); a numpy generator (a test's, handed to the product's
    release code) through :class:`GeneratorBits`; any other source with ``getrandbits`` as it is
    (a test's ``random.Random``, whose calls are already cheap, or a buffer already)."""
    if isinstance(rng, secrets.SystemRandom):
        return _Bits(rng)
    if not hasattr(rng, "getrandbits") and hasattr(rng, "bytes"):
        return GeneratorBits(rng)
    return rng


# --------------------------------------------------------------------------
# exact coins (rng has getrandbits). Rationals are (numerator, denominator)
# pairs of Python ints, not necessarily reduced: the hot loops do no Fraction
# arithmetic.


def _below(rng, n: int) -> int:
    """A uniform integer in ``[0, n)``."""
    if n == 1:
        return 0
    k = (n - 1).bit_length()
    while True:
        r = rng.getrandbits(k)
        if r < n:
            return r


def _bit(rng) -> bool:
    return bool(rng.getrandbits(1))


#: Bits of a constant coin's first look at its uniform: the first bracket is cheap to compute
#: (a short series), and 64 more bits are needed only with probability about 2^-23.
_FIRST_BITS = 24


class _Coin:
    """``Bernoulli(p)`` for a constant ``p`` given by integer brackets (:mod:`releases.engine.exact_bounds`).

    The coin draws a uniform number ``U`` in ``[0, 1)``, first 24 bits then
    64 at a time, and answers ``U < p``. After ``k`` bits ``U`` is known to
    lie in ``[u, u + 1) / 2^k``; with ``lo <= p 2^k <= hi`` the answer is yes
    if ``u < lo`` and no if ``u >= hi``, and only for the one or two values
    of ``u`` in between are 64 more bits drawn and ``p`` bracketed 64 bits
    tighter. ``P(U < p) = p`` exactly: no rounding enters, only comparisons
    of integers. ``bounds(bits)`` returns an
    :class:`~releases.engine.exact_bounds.Interval` of relative width about
    ``2^-bits``; the first bracket is computed at the first flip.
    """

    __slots__ = ("bounds", "lo", "hi")

    def __init__(self, bounds):
        self.bounds = bounds
        self.lo = None

    def __call__(self, rng) -> bool:
        lo = self.lo
        if lo is None:  # ``hi`` is stored before ``lo``: a coin shared between threads never sees half
            lo, self.hi = self.bounds(_FIRST_BITS + 8).scaled(_FIRST_BITS)
            self.lo = lo
        u = rng.getrandbits(_FIRST_BITS)
        if u < lo:
            return True
        if u >= self.hi:
            return False
        bits = _FIRST_BITS
        while True:  # U lies inside the bracket: look at 64 more of its bits
            u = (u << 64) | rng.getrandbits(64)
            bits += 64
            lo, hi = self.bounds(bits + 16).scaled(bits)
            if u < lo:
                return True
            if u >= hi:
                return False


def _units(rng) -> int:
    """``V >= 0`` with ``P(V >= j) = e^{-j}``: the count of ``e^{-1}`` coins before the first failure.

    One uniform ``U`` decides it: ``V`` is the number of ``j >= 1`` with
    ``U < e^{-j}``, compared as in :class:`_Coin` against the brackets of
    ``e^{-1}, e^{-2}, ...`` (64 more bits only when ``U`` falls inside one).
    """
    return _units_from(rng, rng.getrandbits(64), 1)


def _units_from(rng, u: int, j: int) -> int:
    """:func:`_units` for a uniform whose first 64 bits are ``u``, known to lie below ``e^{-(j-1)}``."""
    bits = 64
    brackets = _unit_brackets()
    while True:
        if j < len(brackets) and bits == 64:
            lo, hi = brackets[j]
        else:
            lo, hi = exact_bounds.exp_neg(j, 1, bits + 16).scaled(bits)
        if u < lo:
            j += 1
        elif u >= hi:
            return j - 1
        else:  # inside the bracket of e^{-j}: 64 more bits of the same U
            u = (u << 64) | rng.getrandbits(64)
            bits += 64


@lru_cache(maxsize=None)
def _unit_brackets() -> list[tuple[int, int]]:
    """64-bit brackets of ``e^{-j}`` for ``j < 46`` (``e^{-45} < 2^-64``), as powers of ``e^{-1}``; index 0 unused."""
    one = exact_bounds.exp_neg(1, 1, 96)
    power, out = one, [(0, 0)]
    for _ in range(45):
        out.append(power.scaled(64))
        power = exact_bounds.mul(power, one, 96)
    return out


def _bern_exp_small(rng, num: int, den: int) -> bool:
    """``Bernoulli(e^{-num/den})`` for ``0 <= num <= den`` (CKS Algorithm 1, gamma <= 1)."""
    if num == 0:
        return True
    getrandbits = rng.getrandbits
    k = 1
    while True:  # k-th coin Bernoulli(num / (den k)): a uniform below den k (inlined _below) under num
        n = den * k
        bits = (n - 1).bit_length()
        r = getrandbits(bits)
        while r >= n:
            r = getrandbits(bits)
        if r >= num:
            return k % 2 == 1
        k += 1


def _bern_exp(rng, num: int, den: int) -> bool:
    """``Bernoulli(e^{-num/den})`` for integers ``num >= 0``, ``den > 0`` (CKS Algorithm 1)."""
    if num <= den:
        return _bern_exp_small(rng, num, den)
    whole = (num - 1) // den  # e^{-num/den} = e^{-whole} e^{-rest/den}, 0 < rest <= den
    return _units(rng) >= whole and _bern_exp_small(rng, num - whole * den, den)


class _Ratio:
    """``Bernoulli((1 - e^{-s}) / (1 - e^{-t}))`` for rationals ``0 <= s < t``: ``P(E < s | E < t)``, ``E ~ Exp(1)``.

    A constant of the two levels, flipped as a :class:`_Coin`. ``s`` and ``t``
    are rationals (``Fraction``, ``int``) or ``(numerator, denominator)`` pairs.
    """

    __slots__ = ("coin",)

    def __init__(self, s, t):
        (sn, sd), (tn, td) = _as_pair(s), _as_pair(t)

        def bounds(bits):
            om = exact_bounds.one_minus_exp_neg
            return exact_bounds.div(om(sn, sd, bits), om(tn, td, bits), bits)

        self.coin = _Coin(bounds) if sn > 0 else None

    def __call__(self, rng) -> bool:
        return self.coin is not None and self.coin(rng)


def _geometric(rng, s: int, t: int) -> int:
    """``G >= 0`` with ``P(G = g)`` proportional to ``e^{-g s/t}``.

    From ratio ``s/t = 1/2`` up (``t > 1``), ``G`` is counted directly: the
    number of ``Bernoulli(e^{-s/t})`` successes before the first failure (at
    most 2.6 coins on average, about one where ``s/t`` is large). Otherwise
    the first half of CKS Algorithm 2, whose cost does not grow as ``s/t``
    shrinks (and is one draw for a whole ``s/t``: ``t = 1``).
    """
    if 2 * s >= t > 1:
        g = 0
        while _bern_exp(rng, s, t):
            g += 1
        return g
    while True:
        u = _below(rng, t)
        if _bern_exp_small(rng, u, t):
            break
    return (u + t * _units(rng)) // s


def _dlap(rng, s: int, t: int) -> int:
    """``DLap(e^{-s/t})``: ``P(k)`` proportional to ``e^{-|k| s/t}``.

    Below level 1/2, CKS Algorithm 2: a geometric and a sign, refused when
    they make "-0" (with probability ``(1 - alpha)/2``). From level 1/2 up,
    where 0 is frequent and so is that refusal, ``V = 0`` is decided first by
    the constant coin ``P(V = 0) = (1 - alpha)/(1 + alpha)``, and otherwise
    ``|V| - 1`` is geometric and the sign even.
    """
    if 2 * s >= t:
        if _zero(s, t)(rng):
            return 0
        y = 1 + _geometric(rng, s, t)
        return -y if _bit(rng) else y
    while True:
        y = _geometric(rng, s, t)
        negative = _bit(rng)
        if negative and y == 0:
            continue
        return -y if negative else y


@lru_cache(maxsize=4096)
def _zero(s: int, t: int) -> _Coin:
    """``Bernoulli((1 - alpha)/(1 + alpha))``, ``alpha = e^{-s/t}``: ``P(V = 0)`` for ``V ~ DLap(alpha)``."""
    eb = exact_bounds

    def bounds(bits):
        one_plus = eb.add(eb.exact(1, 1, bits), eb.exp_neg(s, t, bits), bits)
        return eb.div(eb.one_minus_exp_neg(s, t, bits), one_plus, bits)

    return _Coin(bounds)


def _pair_of(x: Fraction) -> tuple[int, int]:
    return x.numerator, x.denominator


def _as_pair(x) -> tuple[int, int]:
    """A rational (``Fraction``, ``int``) or a ``(numerator, denominator)`` pair, as a pair."""
    return x if isinstance(x, tuple) else (x.numerator, x.denominator)


def _reduced(n: int, d: int) -> tuple[int, int]:
    g = math.gcd(n, d)
    return n // g, d // g


def _plus(a: tuple[int, int], b: tuple[int, int], sign: int = 1) -> tuple[int, int]:
    """``a + sign * b`` for rationals as ``(numerator, denominator)`` pairs (cheaper than ``Fraction``)."""
    return _reduced(a[0] * b[1] + sign * b[0] * a[1], a[1] * b[1])


class _Gap:
    """The constants of two levels ``lo < hi`` that the steps between them use."""

    __slots__ = ("lo", "hi", "gap", "ratio", "ratio2", "_moves", "_p0")

    def __init__(self, lo: Fraction, hi: Fraction):
        self.lo = _pair_of(lo)
        self.hi = _pair_of(hi)
        self.gap = _plus(self.hi, self.lo, -1)
        self.ratio = _Ratio(self.lo, self.hi)  # (1 - a) / (1 - b)
        self.ratio2 = _Ratio(  # (1 - a^2) / (1 - b^2)
            _reduced(2 * lo.numerator, lo.denominator), _reduced(2 * hi.numerator, hi.denominator)
        )
        self._moves = None
        self._p0 = None

    def moves(self) -> _Moves:
        """The constants of the relaxation's move (made at its first use)."""
        if self._moves is None:
            self._moves = _Moves(self)
        return self._moves

    def stay(self, rng) -> bool:
        """``Bernoulli(p0)``: the tightening increment from hi to lo is 0,
        ``p0 = e^{-(hi-lo)} ((1 - e^{-lo}) / (1 - e^{-hi}))^2``, one constant coin."""
        if self._p0 is None:
            gap, ratio = self.gap, self.ratio.coin.bounds  # ratio: the bracket of (1 - a)/(1 - b)

            def p0(bits):
                r = ratio(bits)
                return exact_bounds.product(bits, exact_bounds.exp_neg(*gap, bits), r, r)

            self._p0 = _Coin(p0)
        return self._p0(rng)


def _per_coordinate(make, ordered, message: str, *levels: list[Fraction]) -> list:
    """``make(*levels_i)`` for each coordinate ``i``, made (and checked by ``ordered``) once per
    distinct tuple of levels.

    :func:`_levels` returns one object per distinct level, so the objects'
    ids identify the tuple without hashing fractions for every coordinate.
    """
    made: dict = {}
    out = []
    for row in zip(*levels):
        key = tuple(map(id, row))
        found = made.get(key)
        if found is None:
            if not ordered(*row):
                raise ValueError(message)
            found = made[key] = make(*row)
        out.append(found)
    return out


# --------------------------------------------------------------------------
# one coordinate


#: The relaxation's move proposes its parts with integer weights in units of 2^-UNIT_BITS.
_UNIT_BITS = 8


def _above_odds(x: tuple[int, int]) -> int:
    """An integer at least ``2^8 / (e^x - 1)`` for rational ``x > 0``, close for small ``x``:
    ``e^x - 1 >= x + x^2/2 + x^3/6 + x^4/24`` (the terms left out are positive)."""
    n, d = x
    series = 24 * n * d**3 + 12 * n**2 * d**2 + 4 * n**3 * d + n**4  # (that sum) * 24 d^4
    return -((-(24 * d**4) << _UNIT_BITS) // series)  # the ceiling


class _Moves:
    """The constants of the relaxation's move for two levels ``lo < hi`` (see :func:`_relax1`).

    With ``r = e^{-(hi-lo)}`` and ``q = e^{-(lo+hi)}``: ``span`` and
    ``tails``, integers at least ``2^8/(1-r) = 2^8 (1 + 1/(e^{hi-lo} - 1))``
    and ``2^8 q/(1-q) = 2^8/(e^{lo+hi} - 1)`` (:func:`_above_odds`);
    ``cap = ceil(span / 2^8)``, at least ``1/(1-r)``; the coins ``wide``,
    ``Bernoulli(2^8 / ((1-r) span))``, and ``tail``, ``Bernoulli(2^8 q/(1-q) /
    tails)``, on exact brackets; ``both``, the level ``lo + hi``.
    """

    __slots__ = ("span", "cap", "tails", "wide", "tail", "both")

    def __init__(self, g: _Gap):
        eb, gap, unit = exact_bounds, g.gap, 1 << _UNIT_BITS
        both = self.both = _plus(g.lo, g.hi)
        self.span = unit + _above_odds(gap)
        self.cap = -(-self.span >> _UNIT_BITS)
        self.tails = _above_odds(both)

        def wide(bits):  # 1 / ((1 - r) span / 2^8)
            return eb.div(eb.exact(unit, self.span, bits), eb.one_minus_exp_neg(*gap, bits), bits)

        def tail(bits):  # q / ((1 - q) tails / 2^8)
            odds = eb.div(eb.exp_neg(*both, bits), eb.one_minus_exp_neg(*both, bits), bits)
            return eb.div(odds, eb.exact(self.tails, unit, bits), bits)

        self.wide = _Coin(wide)
        self.tail = _Coin(tail)


def _relax1(rng, x: int, g: _Gap) -> int:
    """``V_hi`` given ``V_lo = x``: stay with ``r^{|x|+1} (1-a^2)/(1-b^2)``, else move.

    The move law, ``r^{|y|} a^{2 dist(y)}``, is symmetric under ``x -> -x``,
    ``y -> -y``, so it is drawn for ``n = |x|`` and mirrored: ``y`` has
    weight ``r^y`` for ``0 <= y <= n``, ``q^j`` at ``y = -j`` and ``r^n q^j``
    at ``y = n + j`` (``j >= 1``, ``q = ab = r a^2``). Its three parts weigh
    ``I = sum_{y<=n} r^y``, ``B = q/(1-q)`` and ``r^n B``. Each round
    proposes a part with integer weights (units of ``2^-8``, constants of
    :class:`_Moves`) and keeps it with its true weight over the proposed one
    (:func:`_move_near` for ``n < cap``, :func:`_move_far` beyond), so that a
    round keeps at least about a third of what it proposes, whatever the
    levels and ``x``.
    """
    gn, gd = g.gap
    n = abs(x)
    if _bern_exp(rng, gn * (n + 1), gd) and g.ratio2(rng):
        return x
    k = g.moves()
    y = _move_near(rng, n, g, k) if n < k.cap else _move_far(rng, n, g, k)
    return y if x >= 0 else -y


def _move_far(rng, n: int, g: _Gap, k: _Moves) -> int:
    """The move from ``V_lo = n >= cap``: ``[0, n]`` and above together, below apart.

    ``0 <= y`` is proposed with weight ``span`` (about ``2^8 / (1-r)``) and
    kept with ``wide``; ``y`` is then geometric with ratio ``r``, kept if
    ``y <= n`` and with ``a^{2(y-n)}`` above (so ``r^n q^{y-n}``). Below has
    weight ``tails``, kept with ``tail``, and ``y = -1 - G`` with ``G``
    geometric of ratio ``q``. As ``n >= 1/(1-r)``, ``I >= (1 - e^{-1})/(1-r)``:
    at least 0.6 of the proposals are kept.
    """
    gn, gd = g.gap
    ln, ld = g.lo
    while True:
        z = _below(rng, k.span + k.tails)
        if z < k.span:
            if k.wide(rng):
                y = _geometric(rng, gn, gd)
                if y <= n or _bern_exp(rng, 2 * ln * (y - n), ld):
                    return y
        elif k.tail(rng):
            return -1 - _geometric(rng, *k.both)


def _move_near(rng, n: int, g: _Gap, k: _Moves) -> int:
    """The move from ``V_lo = n``, ``0 <= n < cap``: ``y`` with weight ``r^y`` for ``0 <= y <= n``,
    ``q^j`` at ``y = -j`` and ``r^n q^j`` at ``y = n + j`` (``j >= 1``).

    These are the three parts of ``r^{|y|} a^{2 dist(y)}``, of total weights
    ``I = sum_{y<=n} r^y``, ``B = q/(1-q)`` and ``r^n B``. A part is proposed
    with the integer weights (in units of ``2^-8``) ``2^8 (n+1)``, ``tails``
    and ``tails``, then kept with its true weight over the proposed one:
    inside, ``y`` uniform on ``[0, n]`` kept with ``r^y``; below, kept with
    ``tail``, then ``y = -1 - G`` for ``G`` geometric with ratio ``q``;
    above, kept with ``tail`` and ``r^n``, then ``y = n + 1 + G``. With
    ``n < cap``, ``r^n > e^{-1}`` roughly, so a round keeps at least about a
    third of what it proposes, however close the levels are (where ``DLap(r)``
    proposals would almost all be refused).
    """
    gn, gd = g.gap
    inside = (n + 1) << _UNIT_BITS
    while True:
        z = _below(rng, inside + 2 * k.tails)
        if z < inside:
            y = z >> _UNIT_BITS
            if _bern_exp(rng, gn * y, gd):
                return y
        elif k.tail(rng):
            if z < inside + k.tails:
                return -1 - _geometric(rng, *k.both)
            if _bern_exp(rng, gn * n, gd):
                return n + 1 + _geometric(rng, *k.both)


class _Triple:
    """The constants of three levels ``lo < mid < hi`` for the bridge (see :func:`_bridge1`).

    With ``l = e^{-lo}``, ``m = e^{-mid}``, ``h = e^{-hi}``, ``sigma = h/m``,
    ``rho = m/l`` and ``tau = h/l``:

    * ``holds``: ``Bernoulli(beta)``, ``beta = sigma (1-rho)(1-ml) /
      (sigma (1-rho)(1-ml) + (1-sigma)(1-mh))``;
    * ``moves``: ``Bernoulli(gamma)``, ``gamma = 2 ml (1-sigma)(1-mh)(1-rho) /
      ((1-m^2) (tau (1-l^2) + (1-tau)(1-lh)))``.

    Both are written with positive terms only (every ``1 - e^{-x}`` is its
    own bracket), so they are bracketed to full relative precision however
    close or small the levels are.
    """

    __slots__ = ("lower", "both", "holds", "moves")

    def __init__(self, lo: Fraction, mid: Fraction, hi: Fraction):
        self.lower = _Gap(lo, mid)  # V_mid given V_lo alone: the relaxation lo -> mid
        l, m, h = _pair_of(lo), _pair_of(mid), _pair_of(hi)
        both = self.both = _plus(l, m)  # ml = e^{-(lo+mid)}
        up, down, span = _plus(h, m, -1), _plus(m, l, -1), _plus(h, l, -1)
        eb = exact_bounds

        def beta(bits):
            def om(x):
                return eb.one_minus_exp_neg(*x, bits)

            held = eb.product(bits, eb.exp_neg(*up, bits), om(down), om(both))  # sigma (1-rho)(1-ml)
            moved = eb.product(bits, om(up), om(_plus(m, h)))  # (1-sigma)(1-mh)
            return eb.div(held, eb.add(held, moved, bits), bits)

        def gamma(bits):
            def om(x):
                return eb.one_minus_exp_neg(*x, bits)

            top = eb.product(  # 2 ml (1-sigma)(1-mh)(1-rho)
                bits, eb.exact(2, 1, bits), eb.exp_neg(*both, bits), om(up), om(_plus(m, h)), om(down)
            )
            ends = eb.add(  # tau (1-l^2) + (1-tau)(1-lh)
                eb.product(bits, eb.exp_neg(*span, bits), om(_plus(l, l))),
                eb.product(bits, om(span), om(_plus(l, h))),
                bits,
            )
            return eb.div(top, eb.product(bits, om(_plus(m, m)), ends), bits)

        self.holds = _Coin(beta)
        self.moves = _Coin(gamma)


def _bridge1(rng, x_lo: int, x_hi: int, k: _Triple) -> int:
    """``V_mid`` given ``V_lo = x_lo`` and ``V_hi = x_hi``.

    Write ``V_mid = x_hi + W1`` and ``V_lo = V_mid + W2`` with the tightening
    increments ``W1`` (``hi -> mid``: 0 with probability ``p1``, else
    ``DLap(m)``) and ``W2`` (``mid -> lo``: 0 with probability ``p2``, else
    ``DLap(l)``), independent; ``D = x_lo - x_hi`` and ``P_z(k) = c_z z^|k|``
    with ``c_z = (1-z)/(1+z)`` the law of ``DLap(z)``. Two facts of the path:

    * ``W1 + W2`` is the tightening increment from ``hi`` to ``lo``: 0 with
      probability ``p1 p2``, else ``DLap(l)``; and ``DLap(m) + W2`` is
      ``DLap(l)`` (tightening from ``mid`` to ``lo``);
    * ``p0(x, y) = sinh^2(x/2) / sinh^2(y/2)`` for the stay probability of
      the tightening from ``y`` to ``x``, so ``p1 = p0(mid, hi)``,
      ``p2 = p0(lo, mid)`` and ``p1 p2 = p0(lo, hi)``.

    For ``D != 0``: ``P(W1 = 0 | W1 + W2 = D) = p1 (1-p2) P_l(D) / ((1 - p1
    p2) P_l(D)) = (cosh mid - cosh lo) / (cosh hi - cosh lo)``, a constant
    of the levels (``beta`` of :class:`_Triple`, written there with positive
    terms only); then ``V_mid = x_hi``. Otherwise ``W1 ~ DLap(m)`` and ``W1``
    given ``W1 + W2 = D`` is ``V_mid`` given ``V_lo = D`` on an ordinary
    path: the relaxation from ``lo`` to ``mid`` started at ``D``
    (:func:`_relax1`).

    For ``D = 0``: ``v = V_mid - x_hi`` is not 0 only when both increments
    are ``DLap``, with ``P(v) = (1-p1)(1-p2) P_m(v) P_l(v) / (p1 p2 + (1 -
    p1 p2) c_l)``, proportional to ``(ml)^|v|``: so ``v != 0`` with the
    constant probability ``gamma`` (:class:`_Triple`), and then ``|v| - 1``
    is geometric with ratio ``ml`` and the sign is even.

    Either way a coordinate costs one constant coin and at most one
    relaxation, whatever the levels and the ends.
    """
    d = x_lo - x_hi
    if d == 0:
        if not k.moves(rng):
            return x_hi
        v = 1 + _geometric(rng, *k.both)
        return x_hi - v if _bit(rng) else x_hi + v
    if k.holds(rng):
        return x_hi
    return x_hi + _relax1(rng, d, k.lower)


# --------------------------------------------------------------------------
# the public steps


def _dlaps(rng, pairs: list[tuple[int, int]]) -> np.ndarray:
    """``DLap(e^{-s/t})`` for each ``(s, t)`` of ``pairs``, as int64: the levels below 1/2 (with
    ``s, t`` below :data:`~releases.engine.lattice_vector.LIMIT`) all at once in integer numpy
    (:func:`releases.engine.lattice_vector.dlap`, the same algorithm as :func:`_dlap` for them),
    the others by :func:`_dlap` one at a time."""
    limit = lattice_vector.LIMIT
    batched = [2 * s < t < limit for s, t in pairs]
    out = np.zeros(len(pairs), dtype=np.int64)
    at = np.flatnonzero(np.array(batched, dtype=bool))
    if at.size:
        chosen = [pairs[i] for i in at.tolist()]
        s = np.array([p[0] for p in chosen], dtype=np.int64)
        t = np.array([p[1] for p in chosen], dtype=np.int64)
        out[at] = lattice_vector.dlap(rng, s, t, _unit_brackets(), lambda u, j: _units_from(rng, u, j))
    rest = [i for i, b in enumerate(batched) if not b]
    if rest:
        out[rest] = _out([_dlap(rng, *pairs[i]) for i in rest])
    return out


def sample(level, size, rng) -> np.ndarray:
    """``size`` independent draws of ``DLap(e^{-level})`` (one level, or one per coordinate), as int64."""
    n = _size(size)
    levels = _levels(level, n, "level")
    rng = _bit_source(rng)
    return _dlaps(rng, [(lam.numerator, lam.denominator) for lam in levels])


def _pair(noise, level_a, level_b, names) -> tuple[list[int], list[Fraction], list[Fraction]]:
    values = _noise("noise", noise)
    a = _levels(level_a, len(values), names[0])
    b = _levels(level_b, len(values), names[1])
    return values, a, b


def relax(noise, level_from, level_to, rng) -> np.ndarray:
    """``V_to`` given ``V_from = noise``, for ``level_to > level_from`` (coordinate by coordinate)."""
    values, lo, hi = _pair(noise, level_from, level_to, ("level_from", "level_to"))
    gaps = _per_coordinate(
        _Gap, lambda l, h: l < h, "relax needs level_to > level_from for every coordinate", lo, hi
    )
    rng = _bit_source(rng)
    return _out([_relax1(rng, x, g) for x, g in zip(values, gaps)])


def tighten(noise, level_from, level_to, rng) -> np.ndarray:
    """``V_to`` given ``V_from = noise``, for ``level_to < level_from``."""
    values, hi, lo = _pair(noise, level_from, level_to, ("level_from", "level_to"))
    gaps = _per_coordinate(
        _Gap, lambda l, h: l < h, "tighten needs level_to < level_from for every coordinate", lo, hi
    )
    rng = _bit_source(rng)
    # each coordinate's stay coin, then the increments of those that move, drawn together
    moves = [i for i, g in enumerate(gaps) if not g.stay(rng)]
    out = _out(values)
    if moves:
        start = out[moves]
        step = _dlaps(rng, [gaps[i].lo for i in moves])
        with np.errstate(over="ignore"):
            moved = start + step
        if np.any(((start ^ moved) & (step ^ moved)) < 0):  # pragma: no cover - levels are bounded below
            raise ValueError("the noise does not fit in int64: the level is too small")
        out[moves] = moved
    return out


def bridge(noise_lo, level_lo, noise_hi, level_hi, level_mid, rng) -> np.ndarray:
    """``V_mid`` given ``V_lo = noise_lo`` and ``V_hi = noise_hi``, for ``level_lo < level_mid < level_hi``."""
    x_lo = _noise("noise_lo", noise_lo)
    x_hi = _noise("noise_hi", noise_hi)
    if len(x_lo) != len(x_hi):
        raise ValueError(f"noise_lo has {len(x_lo)} values and noise_hi {len(x_hi)}")
    n = len(x_lo)
    lo = _levels(level_lo, n, "level_lo")
    mid = _levels(level_mid, n, "level_mid")
    hi = _levels(level_hi, n, "level_hi")
    triples = _per_coordinate(
        _Triple, lambda l, m, h: l < m < h, "bridge needs level_lo < level_mid < level_hi for every coordinate",
        lo, mid, hi,
    )
    rng = _bit_source(rng)
    return _out([_bridge1(rng, a, b, k) for a, b, k in zip(x_lo, x_hi, triples)])


def levels_for(eps, weights) -> list[Fraction]:
    """Per-coordinate lattice levels ``eps / w_i`` for a listing level ``eps`` and integer
    weights ``w_i`` (each coordinate's share of the budget, in lattice units), exactly."""
    e = as_level(eps, "eps")
    by_weight: dict = {}
    out = []
    for w in weights:
        # a plain int already seen is looked up directly: the checks below (an abstract-class
        # check each) once cost more than the release's sampling
        level = by_weight.get(w) if type(w) is int else None
        if level is None:
            if isinstance(w, bool) or not isinstance(w, Integral) or w < 1:
                raise ValueError(f"weights must be positive integers, got {w!r}")
            level = by_weight.get(int(w))
            if level is None:
                level = by_weight[int(w)] = e / int(w)
        out.append(level)
    return out


def step(eps, weights, rng, below=None, above=None):
    """The noise at listing level ``eps`` from the nearest known points.

    ``below`` / ``above``: ``(level, noise)`` of the nearest released listing
    levels under and over ``eps`` (or None). Coordinate ``i`` runs at
    ``level / weights[i]``. Returns ``(noise, method)`` with method
    ``initial``, ``relax``, ``tighten`` or ``bridge``.
    """
    e = as_level(eps, "eps")
    target = levels_for(e, weights)
    if below is not None and above is not None:
        lo_level, lo_noise = below
        hi_level, hi_noise = above
        return bridge(lo_noise, levels_for(lo_level, weights), hi_noise, levels_for(hi_level, weights), target, rng), "bridge"
    if below is not None:
        level, noise = below
        return relax(noise, levels_for(level, weights), target, rng), "relax"
    if above is not None:
        level, noise = above
        return tighten(noise, levels_for(level, weights), target, rng), "tighten"
    return sample(target, len(target), rng), "initial"
