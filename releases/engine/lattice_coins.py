"""The exact scalar coins of the lattice path (:mod:`releases.engine.lattice`) and its bit source.

Every random choice of the path is made from these, one coordinate at a time, or from their
batched forms (:mod:`releases.engine.lattice_batch`), which make the same decisions for many
coordinates at once and hand the rare undecided ones back here to be finished exactly. No float
enters any decision. This module never imports Django.
"""

from __future__ import annotations

import math
import os
import secrets
from fractions import Fraction
from functools import lru_cache

import numpy as np

from releases.engine import exact_bounds

from .keystream import KeyStream
from .lattice_inputs import GeneratorBits

# --------------------------------------------------------------------------
# the bit source


class _Bits:
    """``rng``'s bits, fetched 32,768 at a time and handed out in order (and, for the batched
    draws of :mod:`releases.engine.lattice_batch`, whole 64-bit words from blocks of their own:
    :meth:`u64`).

    The product's source (:class:`~releases.engine.keystream.KeyStream`) runs a cipher call, and
    ``secrets.SystemRandom`` a system call, for every ``getrandbits``; the
    coins below ask for a few bits at a time, dozens of times a coordinate.
    This buffer asks ``rng`` for one large block and serves each request from
    its next bits: the bits handed out are the block's bits, each used once,
    so they are as uniform and independent as ``rng``'s own.
    """

    __slots__ = ("rng", "word", "left", "words", "batch", "used", "first")

    BLOCK = 1 << 15
    #: The smallest block of words read for the batched draws: 4 KiB.
    WORDS = 1 << 9

    def __init__(self, rng, first: int = 0):
        self.rng = rng
        self.first = first  # words the first block reads: about what the call will use
        self.word = 0  # the next ``left`` bits, lowest first
        self.left = 0
        self.words: list[int] = []  # later 64-bit words, last first
        self.batch = np.empty(0, dtype=np.uint64)  # words for the batched draws (lattice_batch) ...
        self.used = 0  # ... of which the first ``used`` are handed out

    def u64(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit words for the batched draws, from blocks of their own: when the
        words left are too few, a block of what is missing (at least 4 KiB, and the first block
        the ``first`` words the caller expects to use) is read and appended
        to them, so that every word read is handed out once and a call reads little more than it
        uses (the operating system's generator costs a few microseconds a kilobyte). It is read
        with ``randbytes`` (``os.urandom`` for ``secrets.SystemRandom``): the same bytes its
        ``getrandbits`` reads."""
        left = self.batch.size - self.used
        if n > left:
            size = max(n - left, self.WORDS, self.first)
            self.first = 0
            if type(self.rng) is KeyStream:
                block = np.frombuffer(self.rng.randbytes(8 * size), dtype="<u8")
            elif type(self.rng) is secrets.SystemRandom:
                block = np.frombuffer(os.urandom(8 * size), dtype="<u8")
            else:
                block = np.frombuffer(self.rng.getrandbits(64 * size).to_bytes(8 * size, "little"), dtype="<u8")
            self.batch = np.concatenate([self.batch[self.used :], block]) if left else block
            self.used = 0
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


def _bit_source(rng, words: int = 0):
    """A :class:`_Bits` buffer over the product's generator (a
    :class:`~releases.engine.keystream.KeyStream`, or ``secrets.SystemRandom``, whose every call
    reads the kernel); a numpy generator (a test's, handed to the product's
    release code) through :class:`GeneratorBits`; any other source with ``getrandbits`` as it is
    (a test's ``random.Random``, whose calls are already cheap, or a buffer already)."""
    if isinstance(rng, (KeyStream, secrets.SystemRandom)):
        return _Bits(rng, words)
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

    __slots__ = ("bounds", "lo", "hi", "pair")

    def __init__(self, bounds):
        self.bounds = bounds
        self.lo = None
        self.pair = None

    def brackets(self, bits: int) -> tuple[int, int]:
        """``(lo, hi)`` with ``lo <= p 2^bits <= hi``: what the batched flips compare ``bits``-bit
        uniforms with (kept, one pair per ``bits``)."""
        pairs = self.pair
        if pairs is None:
            pairs = self.pair = {}
        pair = pairs.get(bits)
        if pair is None:
            pair = pairs[bits] = self.bounds(bits + 16).scaled(bits)
        return pair

    def finish(self, rng, u: int, bits: int) -> bool:
        """The flip for a uniform whose first ``bits`` bits are ``u`` and lie inside the bracket:
        64 more bits at a time until the bracket decides."""
        while True:
            u = (u << 64) | rng.getrandbits(64)
            bits += 64
            lo, hi = self.bounds(bits + 16).scaled(bits)
            if u < lo:
                return True
            if u >= hi:
                return False

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
        return self.finish(rng, u, _FIRST_BITS)  # U lies inside the bracket: look at more of its bits


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


@lru_cache(maxsize=1024)
def _digits(s: int, t: int, more: int = 0) -> tuple[int, list[_Coin]]:
    """``(L, coins)`` for a geometric of ratio ``alpha = e^{-s/t}``: ``L`` the fewest binary digits
    with ``2^L s/t >= 1/2``, and for each digit ``i < L`` the coin ``Bernoulli(alpha^{2^i} /
    (1 + alpha^{2^i}))``.

    ``P(G = g)`` is proportional to ``alpha^g``, the product over the binary digits ``b_i`` of
    ``g`` of ``alpha^{b_i 2^i}``: so the digits below ``L`` are independent, digit ``i`` is 1
    with that probability, and ``floor(G / 2^L)`` is independent of them, a geometric of ratio
    ``alpha^{2^L} = e^{-2^L s/t}``. With ``more``, ``more`` digits beyond ``L``. Constants of the
    level."""
    eb = exact_bounds
    size = max(0, (t - 1) // (2 * s)).bit_length() + more  # the fewest L with 2^(L+1) s >= t, and ``more``
    out = []
    for i in range(size):
        def bounds(bits, x=s << i):
            power = eb.exp_neg(x, t, bits)
            return eb.div(power, eb.add(eb.exact(1, 1, bits), power, bits), bits)

        out.append(_Coin(bounds))
    return size, out


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
