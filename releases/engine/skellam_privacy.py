"""Privacy figures of a release on the Skellam path (docs/mathematics.md §17): its privacy-loss
distribution, its profile ``delta(eps)``, the time ``mu`` that meets a ``delta`` at a level, and
its error bounds before purchase.

A release adds ``Z_i = N_A - N_B`` to each coordinate, independent Skellam laws of variance
``2 mu``: ``P(Z = k) = e^{-2 mu} I_|k|(2 mu)`` (a modified Bessel function). A neighbour moves the
true answer by an integer shift vector ``t`` (in noise units); the privacy loss of an output is
``L = sum_i log(P(Z_i = k_i) / P(Z_i = k_i - t_i))`` with ``k_i`` drawn under the dataset, and the
release is ``(eps, delta(eps))``-DP for ``delta(eps) = E[(1 - e^{eps - L})_+]``. Skellam laws are
symmetric, so the neighbour's other direction has the same law of ``L``.

How it is computed (an upper bound, never below the truth):

* each coordinate's loss law for its ``|t_i|``: the probabilities from mpmath's Bessel functions at
  ``DIGITS`` digits, over the ``k`` that hold all but ``TAIL`` of the mass; the mass left out counts
  as an infinite loss (it adds itself to every ``delta``);
* every loss rounded *up* to a multiple of ``GRID`` (pessimistic discretisation: a larger loss
  never lowers ``delta``), so a law is an array of probabilities on ``GRID`` steps;
* coordinates with the same ``|t_i|`` share one law: the sum over all coordinates is a few
  convolutions, by repeated squaring for the multiplicities (each convolution's rounding makes
  every loss at most one more ``GRID`` step larger, never smaller);
* ``delta(eps)`` summed from the composed law, plus the infinite mass, times ``1 + SLACK`` for the
  floating-point sums, and shown rounded up (:func:`shown`).

A check, never a substitute: the Rényi-DP bound of Agarwal, Kairouz and Liu (2021) for the Skellam
mechanism, converted to ``(eps, delta)``, must lie above the exact figure (the tests compare them).
This module never imports Django.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np

__all__ = ["GRID", "composed_law", "convolve_laws", "delta", "deltas", "error_bound", "law_power", "rdp_delta", "shift_pairs",
           "shown", "time_for"]

#: Digits of the Bessel probabilities.
DIGITS = 40
#: The mass of each coordinate's law left out of the computed range (counted as an infinite loss).
TAIL = mpmath.mpf("1e-18")
#: The losses' grid: each rounded up to a multiple of it.
GRID = 1e-4
#: The relative margin added for the floating-point sums.
SLACK = 1e-9


def _pmf(mu, k) -> mpmath.mpf:
    two_mu = 2 * mpmath.mpf(mu.numerator) / mu.denominator
    return mpmath.besseli(abs(k), two_mu) * mpmath.exp(-two_mu)


@lru_cache(maxsize=64)
def _support(mu: Fraction) -> tuple[int, tuple]:
    """``(K, probabilities)``: ``P(Z = k)`` for ``-K <= k <= K`` (mpmath), ``K`` the smallest
    multiple of the first guess with all but ``TAIL`` of the mass inside.

    The Bessel values come from Miller's backward recurrence, ``I_{k-1}(x) = I_{k+1}(x) + (2k/x)
    I_k(x)`` run down from far above ``K`` (twice the range plus 60: what it leaves out is below
    ``e^{-60}`` of the smallest value kept), normalised by ``I_0(x) + 2 sum_k I_k(x) = e^x``, so
    ``P(0) + 2 sum_{k >= 1} P(k) = 1``; one pass of multiplications at ``DIGITS`` digits, checked
    against mpmath's own ``besseli`` in the tests."""
    with mpmath.workdps(DIGITS + 10):
        x = 2 * mpmath.mpf(mu.numerator) / mu.denominator
        k_max = int(8 * math.sqrt(2 * float(mu)) + 20)
        while True:
            start = 2 * k_max + 60 + int(float(x))
            values = [mpmath.mpf(0)] * (start + 2)
            values[start] = mpmath.mpf(1)
            for k in range(start, 0, -1):
                values[k - 1] = values[k + 1] + (2 * k / x) * values[k]
            total = values[0] + 2 * mpmath.fsum(values[1:])
            probs = [v / total for v in values[: k_max + 1]]
            tail = 2 * mpmath.fsum(values[k_max + 1:]) / total
            if tail <= TAIL:
                return k_max, tuple(probs[:0:-1]) + tuple(probs)
            k_max = int(k_max * 1.5) + 10


@lru_cache(maxsize=256)
def _loss_law(mu: Fraction, t: int) -> tuple[int, np.ndarray, float]:
    """``(offset, p, infinite)``: one coordinate's loss law for a shift ``t`` — ``p[j]`` the
    probability of the loss ``(offset + j) GRID`` (each loss rounded up to the grid), ``infinite``
    the mass counted as an infinite loss."""
    k_max, probs = _support(mu)
    with mpmath.workdps(DIGITS):
        left_out = 1 - mpmath.fsum(probs)
        losses, masses = [], []
        for i, p in enumerate(probs):
            k = i - k_max
            shifted = probs[i - t] if 0 <= i - t < len(probs) else _pmf(mu, k - t)  # (only beyond -K)
            losses.append(int(mpmath.ceil(mpmath.log(p / shifted) / GRID)))
            masses.append(float(p))
    low = min(losses)
    out = np.zeros(max(losses) - low + 1)
    np.add.at(out, np.asarray(losses) - low, masses)
    return low, out, float(left_out) * (1 + 1e-6)


#: Mass below this at either end of a composed law is moved to the infinite loss (pessimistic).
NEGLIGIBLE = 1e-30


def _trimmed(low: int, p: np.ndarray, infinite: float) -> tuple[int, np.ndarray, float]:
    """The law with its ends of total mass below ``NEGLIGIBLE`` moved to the infinite loss."""
    c = np.cumsum(p)
    first = int(np.searchsorted(c, NEGLIGIBLE / 2, side="right"))
    r = np.cumsum(p[::-1])
    last = p.size - int(np.searchsorted(r, NEGLIGIBLE / 2, side="right"))
    if first == 0 and last == p.size:
        return low, p, infinite
    moved = float(p[:first].sum() + p[last:].sum())
    return low + first, p[first:last].copy(), infinite + moved


def convolve_laws(a: tuple[int, np.ndarray, float], b: tuple[int, np.ndarray, float]) -> tuple[int, np.ndarray, float]:
    """The loss law of the sum of two independent losses (offsets add; the infinite masses combine)."""
    low_a, p_a, inf_a = a
    low_b, p_b, inf_b = b
    p = np.convolve(p_a, p_b)
    np.maximum(p, 0, out=p)
    return _trimmed(low_a + low_b, p, inf_a + inf_b - inf_a * inf_b)


def law_power(law, n: int):
    out = None
    while n:
        if n & 1:
            out = law if out is None else convolve_laws(out, law)
        n >>= 1
        if n:
            law = convolve_laws(law, law)
    return out


def shift_pairs(shift) -> tuple[tuple[int, int], ...]:
    """The shift vector as sorted ``(|t|, how many)`` pairs (zero shifts dropped)."""
    if isinstance(shift, dict):
        pairs = {abs(int(t)): int(c) for t, c in shift.items()}
    else:
        pairs = {}
        for t in shift:
            t = abs(int(t))
            pairs[t] = pairs.get(t, 0) + 1
    return tuple(sorted((t, c) for t, c in pairs.items() if t and c))


@lru_cache(maxsize=256)
def composed_law(mu: Fraction, shifts: tuple) -> tuple[int, np.ndarray, float]:
    law = None
    for t, count in shifts:
        part = law_power(_loss_law(mu, t), count)
        law = part if law is None else convolve_laws(law, part)
    return law


def deltas(mu, shift, eps_values) -> list[float]:
    """``delta(eps)`` at each of ``eps_values`` for a release at time ``mu`` (a Fraction) whose
    worst-case neighbour shifts the coordinates by ``shift`` (a list of integers, or
    ``{|t|: how many}``): upper bounds."""
    mu = Fraction(mu)
    shifts = shift_pairs(shift)
    if not shifts:
        return [0.0 for _ in eps_values]
    low, p, infinite = composed_law(mu, shifts)
    losses = (low + np.arange(p.size)) * GRID
    out = []
    for eps in eps_values:
        above = losses > float(eps)
        d = float(np.sum(p[above] * -np.expm1(float(eps) - losses[above]))) + infinite
        out.append(min(1.0, d * (1 + SLACK)))
    return out


def delta(mu, shift, eps) -> float:
    return deltas(mu, shift, [eps])[0]


def shown(value: float, digits: int = 2) -> Decimal:
    """A ``delta`` as shown: rounded up to ``digits`` significant digits."""
    if value <= 0:
        return Decimal(0)
    d = Decimal(repr(value))
    exponent = d.adjusted() - digits + 1
    return d.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_CEILING)


# --------------------------------------------------------------------------
# calibration and accuracy

#: The times a listing may use: three significant digits (1.00, 1.01, ..., 9.99, 10.0, ...), so a
#: time is an exact decimal and the calibration a finite search.
def _grid_time(j: int) -> Fraction:
    """The ``j``-th grid time (``j >= 0``): ``(100 + j mod 900) 10^{j // 900 - 2}``."""
    exponent, step = divmod(j, 900)
    return Fraction(100 + step) * Fraction(10) ** (exponent - 2)


def _grid_index(mu: float) -> int:
    """The index of the largest grid time at most ``mu`` (0 below 1)."""
    if mu < 1:
        return 0
    exponent = math.floor(math.log10(mu))
    return 900 * exponent + min(899, int(mu / 10 ** (exponent - 2)) - 100)


def time_for(eps, delta_target, shift) -> Fraction:
    """The smallest grid time whose release is ``(eps, delta_target)``-DP for ``shift`` (the
    least noise that meets the listing's ``delta`` at level ``eps``). The search starts below a
    quarter of the Gaussian mechanism's variance for the shift's l2 norm (a guess that only saves
    steps: the answer is found by the exact figures either way)."""
    if not 0 < delta_target < 1:
        raise ValueError("delta lies in (0, 1)")
    l2 = math.sqrt(sum(t * t * c for t, c in shift_pairs(shift)))
    guess = (l2 * math.sqrt(2 * math.log(1.25 / delta_target)) / float(eps)) ** 2 / 2
    lo = _grid_index(guess / 4)
    if lo and delta(_grid_time(lo), shift, eps) <= delta_target:
        lo = 0
    hi = lo + 1
    while delta(_grid_time(hi), shift, eps) > delta_target:  # delta falls as the time grows
        lo, hi = hi, hi * 2 + 1
        if hi > 900 * 14:
            raise ValueError("no time below 10^12 meets this delta")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delta(_grid_time(mid), shift, eps) > delta_target:
            lo = mid
        else:
            hi = mid
    return _grid_time(lo) if delta(_grid_time(lo), shift, eps) <= delta_target else _grid_time(hi)


def error_bound(mu, coverage: float = 0.95) -> int:
    """The smallest ``q`` with ``P(|Z| <= q) >= coverage`` for ``Z`` Skellam of time ``mu``: the
    exact error bound of a released count before purchase, in noise units."""
    mu = Fraction(mu)
    k_max, probs = _support(mu)
    with mpmath.workdps(DIGITS):
        inside = probs[k_max]
        q = 0
        while inside < coverage:
            q += 1
            inside += probs[k_max + q] + probs[k_max - q]
    return q


# --------------------------------------------------------------------------
# the Rényi-DP check


def rdp_delta(mu, shift, eps) -> float:
    """The (eps, delta) that the Rényi-DP bound of Agarwal, Kairouz and Liu (2021, Skellam
    mechanism) gives: ``eps(alpha) <= alpha D2^2/(4 mu) + min(((2 alpha - 1) D2^2 + 6 D1)/(16 mu^2),
    3 D1/(4 mu))`` for integer ``alpha > 1``, with ``D1``, ``D2`` the shift's l1 and l2 norms and
    variance ``2 mu``, converted by ``delta = e^{(alpha - 1)(eps(alpha) - eps)} (1 - 1/alpha)^alpha
    / (alpha - 1)`` (Canonne, Kamath and Steinke 2020), the smallest over ``alpha``."""
    mu = float(Fraction(mu))
    shifts = shift_pairs(shift)
    d1 = sum(t * c for t, c in shifts)
    d2sq = sum(t * t * c for t, c in shifts)
    best = 1.0
    for alpha in range(2, 2000):
        e_alpha = alpha * d2sq / (4 * mu) + min(((2 * alpha - 1) * d2sq + 6 * d1) / (16 * mu**2), 3 * d1 / (4 * mu))
        log_delta = (alpha - 1) * (e_alpha - float(eps)) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
        best = min(best, math.exp(min(0.0, log_delta)))
    return best
