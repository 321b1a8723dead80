"""The exact Skellam path: Gaussian-like integer noise released gradually (docs/mathematics.md §17).

Each coordinate carries two independent Poisson counting processes ``N_A(t)``, ``N_B(t)`` of rate
1 in a "time" ``t >= 0``; the noise at time ``mu`` is ``Z = N_A(mu) - N_B(mu)``, a Skellam law of
mean 0 and variance ``2 mu``. A larger ``mu`` is more noise (a lower level). The path stores the
pair ``(N_A(mu), N_B(mu))`` of every released time, and moves between times by the laws of the
process itself, which is what makes any set of releases cost what the least noisy one costs:

* the first draw at ``mu``: two ``Poisson(mu)`` counts (:func:`sample`);
* more noise, ``mu' > mu``: add an independent ``Poisson(mu' - mu)`` to each count (:func:`tighten`);
* less noise, ``mu' < mu``: keep each of the ``N(mu)`` points with probability ``mu'/mu``,
  ``N(mu') ~ Binomial(N(mu), mu'/mu)`` (:func:`relax`: thinning);
* a time between two stored ones: ``N(mu) = N(lo) + Binomial(N(hi) - N(lo), (mu - lo)/(hi - lo))``
  (:func:`bridge`).

Times are exact rationals (``Fraction``), and every decision compares uniform integers with
exact integers or exact brackets (:mod:`releases.engine.exact_bounds`); no float enters one:

* ``Binomial(n, p)`` for rational ``p`` by halving (:func:`binomial`): with ``p < 1/2``,
  ``Binomial(n, p) = Binomial(Binomial(n, 1/2), 2p)`` (keep each trial with a fair coin, then each
  kept one with ``2p``), with ``p > 1/2`` its complement ``n - Binomial(n, 1 - p)``, and
  ``Binomial(n, 1/2)`` the number of ones among ``n`` fair bits: about ``2n`` random bits in all,
  every coordinate at once;
* ``Poisson(lam)`` by rejection (:func:`poisson`): a proposal ``m + D`` around the mode
  ``m = floor(lam)``, ``D`` discrete Laplace of level ``s`` about ``1/sqrt(lam)`` (the lattice
  path's exact sampler), kept with probability ``R(D) / K``, where ``R(d) = (lam^d m!/(m+d)!)
  e^{s |d|}`` is the target's weight over the proposal's and ``K`` a rational at least the largest
  ``R`` (found from the two places where ``R`` stops rising: ``R`` is log-concave on each side of
  0). ``R(d)`` is a rational times ``e^{s |d|}``, bracketed exactly; the coin compares a uniform
  with the bracket, drawing more bits only when it falls inside. Three proposals in four are kept
  for ``lam`` from about 100 up (measured: 0.75 at 400 and at 10^6), two in five or more below
  (0.41 at 1, 0.54 at 1/7).

``rng`` is the lattice path's bit source (:func:`releases.engine.lattice.new_rng`: ChaCha20 under
a key from the operating system) in the product, a seeded ``random.Random`` in tests. This module
never imports Django.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from . import exact_bounds as eb
from . import lattice_batch
from .lattice_coins import _bit_source, _Coin

__all__ = ["as_time", "binomial", "bridge", "fair_binomial", "noise", "poisson", "relax", "sample", "tighten"]

_HALF = Fraction(1, 2)
#: Times above this are refused (the counts would be about this large; work grows like it).
MAX_TIME = Fraction(10**9)


def as_time(mu) -> Fraction:
    """``mu`` as an exact positive rational time (a Fraction, a whole number or a decimal string)."""
    try:
        t = Fraction(mu) if not isinstance(mu, float) else None
    except (TypeError, ValueError, ZeroDivisionError):
        t = None
    if t is None:
        raise ValueError(f"a time is an exact rational (a Fraction, an int or a decimal string), got {mu!r}")
    if not 0 < t <= MAX_TIME:
        raise ValueError(f"a time lies in (0, {MAX_TIME}], got {mu}")
    return t


def _counts(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"{name}: a one-dimensional array of whole counts")
    arr = arr.astype(np.int64)
    if arr.size and int(arr.min()) < 0:
        raise ValueError(f"{name}: counts are never negative")
    return arr


# --------------------------------------------------------------------------
# binomial


def fair_binomial(src, n: np.ndarray) -> np.ndarray:
    """``Binomial(n_i, 1/2)`` for each ``i``: the ones among ``n_i`` fair bits (each coordinate its
    own whole 64-bit words, the last masked to its ``n_i mod 64`` bits)."""
    n = np.asarray(n, dtype=np.int64)
    out = np.zeros(n.size, dtype=np.int64)
    live = np.flatnonzero(n > 0)
    if not live.size:
        return out
    m = n[live]
    words = (m + 63) >> 6
    total = int(words.sum())
    w = lattice_batch.words(src, total)
    ends = np.cumsum(words)
    rest = m & 63  # bits used of each coordinate's last word (0: all 64)
    last = ends - 1
    masks = np.where(rest == 0, np.uint64(2**64 - 1), (np.uint64(1) << rest.astype(np.uint64)) - np.uint64(1))
    w = w.copy()
    w[last] &= masks
    counts = np.bitwise_count(w).astype(np.int64)
    starts = ends - words
    out[live] = np.add.reduceat(counts, starts)
    return out


def binomial(src, n: np.ndarray, p: Fraction) -> np.ndarray:
    """``Binomial(n_i, p)`` for each ``i`` (``0 <= p <= 1`` rational), exactly: see the module."""
    p = Fraction(p)
    if not 0 <= p <= 1:
        raise ValueError(f"a probability lies in [0, 1], got {p}")
    m = np.asarray(n, dtype=np.int64).copy()
    base = np.zeros(m.size, dtype=np.int64)
    sign = 1
    while m.any():
        if p == 0:
            break
        if p == 1:
            base += sign * m
            break
        if p > _HALF:  # Binomial(m, p) = m - Binomial(m, 1 - p)
            base += sign * m
            sign, p = -sign, 1 - p
        if p == _HALF:
            base += sign * fair_binomial(src, m)
            break
        m, p = fair_binomial(src, m), 2 * p  # p < 1/2: thin by a fair coin, then by 2p
    return base


# --------------------------------------------------------------------------
# poisson


class _Rejection:
    """The constants of :func:`poisson` at ``lam``: the mode ``m``, the proposal's level ``s``, and
    ``K`` (a rational at least every ``R(d)``)."""

    __slots__ = ("a", "b", "coins", "k_den", "k_num", "lam", "m", "s")

    def __init__(self, lam: Fraction):
        self.lam, self.a, self.b = lam, lam.numerator, lam.denominator
        self.m = lam.numerator // lam.denominator
        self.s = Fraction(1, math.isqrt(self.m) + 1)
        # R rises on d >= 0 while m + d + 1 <= lam e^s, and on d <= 0 (going left) while
        # m + d >= lam e^{-s}: its largest values sit next to lam e^s - m and lam e^{-s} - m. The
        # candidates are the whole numbers around brackets of those, and 0; K is the largest upper
        # end of their brackets, a rational.
        bits = 64
        e_minus = eb.exp_neg(self.s.numerator, self.s.denominator, bits)
        up_lo = Fraction(self.a * e_minus.lo, self.b) * Fraction(2) ** e_minus.e  # lam e^{-s}, from below
        up_hi = Fraction(self.a * e_minus.hi, self.b) * Fraction(2) ** e_minus.e
        right_lo, right_hi = self.lam / (up_hi / self.lam), self.lam / (up_lo / self.lam)  # lam e^{s}
        candidates = {0}
        for low, high in ((right_lo, right_hi), (up_lo, up_hi)):
            for c in range(math.floor(low) - 1, math.ceil(high) + 2):
                d = c - self.m
                if -self.m <= d:
                    candidates.add(d)
        best = max((self.ratio(d, bits) for d in candidates), key=lambda iv: Fraction(iv.hi) * Fraction(2) ** iv.e)
        k = Fraction(best.hi) * Fraction(2) ** best.e
        self.k_num, self.k_den = k.numerator, k.denominator
        self.coins: dict[int, _Coin] = {}

    def weight(self, d: int) -> tuple[int, int]:
        """``lam^d m!/(m+d)!`` as an integer pair (``d >= -m``)."""
        m, a, b = self.m, self.a, self.b
        if d >= 0:
            num, den = a**d, b**d * math.prod(range(m + 1, m + d + 1))
        else:
            e = -d
            num, den = b**e * math.prod(range(m - e + 1, m + 1)), a**e
        return num, den

    def ratio(self, d: int, bits: int) -> eb.Interval:
        """A bracket of ``R(d) = lam^d m!/(m+d)! e^{s |d|}``."""
        num, den = self.weight(d)
        return eb.div(eb.exact(num, den, bits), eb.exp_neg(abs(d) * self.s.numerator, self.s.denominator, bits), bits)

    def kept(self, d: int) -> _Coin:
        """The coin ``R(d) / K`` (made once per ``d``: every proposal of ``m + d`` flips the same coin)."""
        coin = self.coins.get(d)
        if coin is None:
            coin = self.coins[d] = self._coin(d)
        return coin

    def _coin(self, d: int) -> _Coin:
        num, den = self.weight(d)
        s = self.s

        def bounds(bits):
            target = eb.exact(num * self.k_den, den * self.k_num, bits)
            return eb.div(target, eb.exp_neg(abs(d) * s.numerator, s.denominator, bits), bits)

        return _Coin(bounds)


@lru_cache(maxsize=256)
def _rejection(lam: Fraction) -> _Rejection:
    return _Rejection(lam)


def poisson(src, lam, size: int) -> np.ndarray:
    """``size`` independent ``Poisson(lam)`` counts (``lam >= 0`` rational): the rejection of the
    module's docstring for all of them at once, in rounds (every proposal of the same ``m + d`` flips
    the same constant coin, so a round is one batched discrete Laplace draw and one batched flip of
    the distinct proposals' coins, ``lattice_batch.flips``)."""
    lam = Fraction(lam)
    if lam < 0:
        raise ValueError(f"a Poisson mean is never negative, got {lam}")
    out = np.zeros(int(size), dtype=np.int64)
    if lam == 0 or not out.size:
        return out
    c = _rejection(lam)
    todo = np.arange(out.size)
    while todo.size:
        d = lattice_batch.dlap(src, np.full(todo.size, c.s.numerator, dtype=np.int64),
                               np.full(todo.size, c.s.denominator, dtype=np.int64))
        possible = np.flatnonzero(d >= -c.m)  # below: a negative count, weight 0
        distinct, which = np.unique(d[possible], return_inverse=True)
        kept = lattice_batch.flips(src, [c.kept(int(v)) for v in distinct.tolist()], which.reshape(-1))
        done = possible[kept]
        out[todo[done]] = c.m + d[done]
        todo = np.delete(todo, done)
    return out


# --------------------------------------------------------------------------
# the path's steps (a pair of counts per coordinate)


def _source(rng, n: int):
    return _bit_source(rng, 4 * n)


def sample(mu, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """The first point of a path at time ``mu``: ``(N_A(mu), N_B(mu))``, each ``Poisson(mu)``."""
    mu = as_time(mu)
    src = _source(rng, size)
    return poisson(src, mu, size), poisson(src, mu, size)


def tighten(counts: tuple, mu_from, mu_to, rng) -> tuple[np.ndarray, np.ndarray]:
    """More noise: the counts at ``mu_to > mu_from`` from those at ``mu_from`` (an independent
    ``Poisson(mu_to - mu_from)`` added to each)."""
    lo, hi = as_time(mu_from), as_time(mu_to)
    if not hi > lo:
        raise ValueError("tighten goes to a larger time (more noise)")
    a, b = (_counts(c, "counts") for c in counts)
    src = _source(rng, a.size)
    return a + poisson(src, hi - lo, a.size), b + poisson(src, hi - lo, b.size)


def relax(counts: tuple, mu_from, mu_to, rng) -> tuple[np.ndarray, np.ndarray]:
    """Less noise: the counts at ``mu_to < mu_from`` given those at ``mu_from`` (thinning: each point
    kept with probability ``mu_to / mu_from``)."""
    hi, lo = as_time(mu_from), as_time(mu_to)
    if not lo < hi:
        raise ValueError("relax goes to a smaller time (less noise)")
    a, b = (_counts(c, "counts") for c in counts)
    src = _source(rng, a.size)
    return binomial(src, a, lo / hi), binomial(src, b, lo / hi)


def bridge(lower: tuple, mu_lo, upper: tuple, mu_hi, mu, rng) -> tuple[np.ndarray, np.ndarray]:
    """The counts at ``mu`` between two stored times ``mu_lo < mu < mu_hi`` (``lower``: the counts
    at ``mu_lo``, the less noisy; ``upper`` at ``mu_hi``): ``N(lo) + Binomial(N(hi) - N(lo),
    (mu - lo)/(hi - lo))``, for A and B."""
    lo, mid, hi = as_time(mu_lo), as_time(mu), as_time(mu_hi)
    if not lo < mid < hi:
        raise ValueError("bridge needs mu_lo < mu < mu_hi")
    out = []
    src = None
    for x_lo, x_hi in zip(lower, upper):
        x_lo, x_hi = _counts(x_lo, "lower counts"), _counts(x_hi, "upper counts")
        if x_lo.shape != x_hi.shape or bool((x_hi < x_lo).any()):
            raise ValueError("a count at the larger time is never below the count at the smaller one")
        src = src or _source(rng, x_lo.size)
        out.append(x_lo + binomial(src, x_hi - x_lo, (mid - lo) / (hi - lo)))
    return out[0], out[1]


def noise(counts: tuple) -> np.ndarray:
    """The released noise of a point: ``N_A - N_B``."""
    a, b = counts
    return np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64)


