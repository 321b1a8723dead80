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

* each coordinate's loss law for its ``|t_i|``: the probabilities from Miller's backward recurrence
  for the Bessel functions' ratios in float64 (checked against mpmath at 40 digits in the tests), over
  the ``k`` that hold all but ``TAIL`` of the mass; the mass left out counts
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

import numpy as np

from .skellam import MAX_TIME as _path_max_time

__all__ = ["GRID", "calibrate", "case_law", "case_of", "composed_law", "convolve_laws", "delta", "deltas", "envelope",
           "error_bound", "frontier", "ladder", "law_power", "mean_abs", "norm_bound", "profile", "rdp_delta", "shift_pairs", "shown",
           "time_for"]

#: The mass of each coordinate's law left out of the computed range (counted as an infinite loss).
TAIL = 1e-18
#: The losses' grid: each rounded up to a multiple of it.
GRID = 1e-4
#: The relative margin added for the floating-point sums.
SLACK = 1e-9


def _ratios(x: float, top: int) -> np.ndarray:
    """``r[k] = I_k(x) / I_{k-1}(x)`` for ``1 <= k <= top`` (``r[0]`` unused), by the backward
    recurrence ``r_k = 1 / (2k/x + r_{k+1})`` run down from ``16 sqrt(x) + 60`` steps above ``top``
    with ``r = 0`` there (an error at step ``n`` above ``top`` shrinks by about ``r^2 <= e^{-2 top/x}``
    a step, and ``top`` is above ``24 sqrt(x)``):
    every ratio lies in (0, 1) and the recurrence is stable downwards (Miller's algorithm on ratios,
    Gautschi 1967), so nothing overflows and each ratio carries a relative error near the unit
    roundoff."""
    start = top + 60 + int(16 * math.sqrt(x))  # past top, errors shrink like exp(-2 n top / x): sqrt(x) steps do
    r = np.zeros(top + 1)
    ratio = 0.0
    for k in range(start, 0, -1):
        ratio = 1.0 / (2.0 * k / x + ratio)
        if k <= top:
            r[k] = ratio
    return r


def _support(mu: Fraction, extra: int = 0) -> tuple[int, np.ndarray]:
    """:func:`_support_wide` with exactly ``extra`` more values on each side (one computation serves
    every shift up to a power of two at least 64)."""
    wide = max(64, 1 << max(0, int(extra) - 1).bit_length())
    k_max, probs = _support_wide(mu, wide)
    if wide == extra:
        return k_max, probs
    out = probs[wide - extra: probs.size - (wide - extra)]
    return k_max, out


@lru_cache(maxsize=64)
def _support_wide(mu: Fraction, extra: int = 0) -> tuple[int, np.ndarray]:
    """``(K, probabilities)``: ``P(Z = k)`` for ``-K - extra <= k <= K + extra`` in float64, ``K``
    the smallest range found with all but ``TAIL`` of the mass inside ``[-K, K]`` (``extra`` more
    on each side: the values a shift of up to ``extra`` reads beyond the range).

    ``P(k) = P(0) prod_{j <= k} r_j`` (:func:`_ratios`) with ``P(0) = 1 / (1 + 2 sum_{k >= 1} prod_{j
    <= k} r_j)``, since ``P(0) + 2 sum_{k >= 1} P(k) = 1``: each probability's relative error is at
    most about ``k`` unit roundoffs (the tests check them against mpmath's ``besseli`` at 40 digits
    to ``1e-11`` of each); the losses read from them are rounded up with a margin above that
    (:data:`MARGIN`)."""
    x = 2 * float(mu)
    k_max = int(8 * math.sqrt(x) + 20)
    while True:
        top = 3 * (k_max + extra) + 40  # the normalising sum reaches far past the range kept
        products = np.cumprod(_ratios(x, top)[1:])
        p0 = 1.0 / (1.0 + 2.0 * math.fsum(products))
        side = np.concatenate(([p0], p0 * products))
        tail = 2.0 * math.fsum(side[k_max + 1:])
        if tail <= TAIL:
            kept = side[: k_max + extra + 1]
            probs = np.concatenate((kept[:0:-1], kept))
            probs.flags.writeable = False
            return k_max, probs
        k_max = int(k_max * 1.5) + 10


#: How a loss in cells is rounded to the grid (up; a test rounds down to show it would be caught).
_round_up = np.ceil
#: Added to every loss (in grid cells) before it is rounded up: a wide margin over the relative
#: error of the float64 probabilities (about 1e-13 in each loss, 1e-9 of a cell).
MARGIN = 1e-6


@lru_cache(maxsize=256)
def _loss_law(mu: Fraction, t: int) -> tuple[int, np.ndarray, float]:
    """``(offset, p, infinite)``: one coordinate's loss law for a shift ``t`` — ``p[j]`` the
    probability of the loss ``(offset + j) GRID`` (each loss rounded up to the grid, after
    :data:`MARGIN`), ``infinite`` the mass counted as an infinite loss."""
    k_max, probs = _support(mu, t)
    kept = probs[t: probs.size - t]  # k = -K..K
    shifted = probs[: kept.size]  # P(k - t) for the same k
    left_out = max(0.0, 1.0 - math.fsum(kept))
    with np.errstate(divide="ignore"):
        losses = _round_up((np.log(kept) - np.log(shifted)) / GRID + MARGIN)
    finite = np.isfinite(losses) & (kept > 0)
    left_out += float(kept[~finite].sum())
    cells = losses[finite].astype(np.int64)
    low = int(cells.min())
    out = np.bincount(cells - low, weights=kept[finite])
    return low, out, left_out * (1 + 1e-6) + 1e-15


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


#: Convolutions of at most this many multiplications are summed exactly (atom by atom, or directly);
#: larger ones run by FFT, with its error bound counted.
DIRECT = 1 << 22


def _convolved(p_a: np.ndarray, p_b: np.ndarray) -> tuple[np.ndarray, float]:
    """``p_a * p_b`` and a bound on its total absolute error. Exact sums (error 0 here: their
    relative rounding is in ``SLACK``) when they are cheap: one law has few atoms (a randomised
    response, a single coordinate's law: each atom adds a scaled copy of the other), or the two are
    short; else by FFT, whose error in each entry is at most ``c u log2(n) |p_a|_2 |p_b|_2`` (``u`` the
    unit roundoff; ``c = 20``, a wide margin over the usual constant), counted in full over every entry."""
    nz_a, nz_b = np.flatnonzero(p_a), np.flatnonzero(p_b)
    if nz_b.size * p_a.size < nz_a.size * p_b.size:
        p_a, p_b, nz_a, nz_b = p_b, p_a, nz_b, nz_a
    if nz_a.size * p_b.size <= 16 * DIRECT and nz_a.size <= 4096:
        out = np.zeros(p_a.size + p_b.size - 1)
        for i in nz_a:
            out[i: i + p_b.size] += p_a[i] * p_b
        return out, 0.0
    if p_a.size * p_b.size <= DIRECT:
        return np.convolve(p_a, p_b), 0.0
    from scipy.signal import fftconvolve

    out = fftconvolve(p_a, p_b)
    n = out.size
    per_entry = 20 * np.finfo(np.float64).eps * math.log2(n) * float(np.linalg.norm(p_a) * np.linalg.norm(p_b))
    return out, per_entry * n


def convolve_laws(a: tuple[int, np.ndarray, float], b: tuple[int, np.ndarray, float]) -> tuple[int, np.ndarray, float]:
    """The loss law of the sum of two independent losses (offsets add; the infinite masses combine;
    an FFT's error bound is added to the infinite mass, so no ``delta`` read from it falls)."""
    low_a, p_a, inf_a = a
    low_b, p_b, inf_b = b
    p, error = _convolved(p_a, p_b)
    np.maximum(p, 0, out=p)
    return _trimmed(low_a + low_b, p, inf_a + inf_b - inf_a * inf_b + error)


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


def _read(law, eps_values) -> list[float]:
    low, p, infinite = law
    losses = (low + np.arange(p.size)) * GRID
    out = []
    for eps in eps_values:
        above = losses > float(eps)
        d = float(np.sum(p[above] * -np.expm1(float(eps) - losses[above]))) + infinite
        out.append(min(1.0, d * (1 + SLACK)))
    return out


def deltas(mu, shift, eps_values) -> list[float]:
    """``delta(eps)`` at each of ``eps_values`` for a release at time ``mu`` (a Fraction) whose
    worst-case neighbour shifts the coordinates by ``shift`` (a list of integers, or
    ``{|t|: how many}``): upper bounds."""
    mu = Fraction(mu)
    shifts = shift_pairs(shift)
    if not shifts:
        return [0.0 for _ in eps_values]
    return _read(composed_law(mu, shifts), eps_values)


def delta(mu, shift, eps) -> float:
    return deltas(mu, shift, [eps])[0]


def shown(value: float, digits: int = 2) -> Decimal:
    """A ``delta`` as shown: rounded up to ``digits`` significant digits."""
    if value <= 0:
        return Decimal(0)
    d = Decimal(repr(float(value)))
    exponent = d.adjusted() - digits + 1
    return d.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_CEILING)


# --------------------------------------------------------------------------
# a listing's worst cases, with a weight per coordinate

def case_of(moves, weights) -> tuple[tuple[int, int, int], ...]:
    """One worst case of a listing as ``((w, |t|, how many), ...)``, sorted: ``moves`` the
    ``(coordinate, move in steps)`` pairs of the case, ``weights[i]`` coordinate ``i``'s weight (its
    noise runs at time ``mu w^2``: a group whose sensitivity is ``w`` steps gets ``w`` times the
    noise, as each group of a lattice listing gets a share of the budget)."""
    counted: dict[tuple[int, int], int] = {}
    for i, move in moves:
        key = (int(weights[i]), abs(int(move)))
        if key[1]:
            counted[key] = counted.get(key, 0) + 1
    return tuple(sorted((w, t, c) for (w, t), c in counted.items()))


@lru_cache(maxsize=128)
def case_law(mu: Fraction, case: tuple) -> tuple[int, np.ndarray, float]:
    """The loss law at base time ``mu`` of one worst case (:func:`case_of`)."""
    law = None
    for w, t, count in case:
        if not count:
            continue
        part = law_power(_loss_law(mu * w * w, t), count)
        law = part if law is None else convolve_laws(law, part)
    return law if law is not None else (0, np.ones(1), 0.0)


def envelope(cases) -> tuple[tuple[int, int, int], ...]:
    """One case (:func:`case_of`) that costs at least what each of ``cases`` costs at every ``eps``: for
    each weight, its moves sorted from the largest, each the largest any case has in that place.

    Sound because coordinates of one weight run at the same time (their order does not matter) and
    a larger move never costs less, coordinate by coordinate (the tests check that property): each
    case is then dominated by the envelope, and so are compositions with it. It is what a listing
    with several worst cases composes as in its dataset's budget (a pair of laws that dominates
    every neighbour's), at a cost: the envelope of ``(2, 0)`` and ``(1, 1)`` is ``(2, 1)``."""
    per_weight: dict[int, list[int]] = {}
    for case in cases:
        for w in {w for w, _, _ in case}:
            moves = sorted((t for w2, t, c in case if w2 == w for _ in range(c)), reverse=True)
            top = per_weight.setdefault(w, [])
            top.extend([0] * (len(moves) - len(top)))
            per_weight[w] = [max(a, b) for a, b in zip(top, moves + [0] * (len(top) - len(moves)))]
    counted: dict[tuple[int, int], int] = {}
    for w, moves in per_weight.items():
        for t in moves:
            if t:
                counted[(w, t)] = counted.get((w, t), 0) + 1
    return tuple(sorted((w, t, c) for (w, t), c in counted.items()))


def frontier(bound_sq: int, dim: int, *, most: int = 100_000) -> list[tuple[int, ...]]:
    """The integer shift vectors of squared l2 norm at most ``bound_sq`` in ``dim`` coordinates that
    no other one dominates, each as its absolute moves sorted from the largest (the noise is the same
    on every coordinate and symmetric, so signs and order do not matter; a larger move never costs
    less, so a dominated shift is never a worst case). Exact integer arithmetic throughout.
    ValueError when more than ``most`` candidates would have to be compared."""
    if dim < 1 or bound_sq < 0:
        raise ValueError("a frontier needs a dimension and a non-negative bound")
    found: list[tuple[int, ...]] = []

    def tails(left: int, largest: int, used: int, head: int | None):
        """The moves after the first, from the largest (``head``, the first of them, at most the
        first move: the squares add up to at least ``head^2`` more than ``used``)."""
        if left == 0:
            yield ()
            return
        for a in range(largest + 1):
            if used + a * a + (a if head is None else head) ** 2 > bound_sq:
                break
            for rest in tails(left - 1, a, used + a * a, a if head is None else head):
                yield (a,) + rest

    for tail in tails(dim - 1, math.isqrt(bound_sq), 0, None):
        first = math.isqrt(bound_sq - sum(a * a for a in tail))
        if tail and first < tail[0]:
            continue
        found.append((first,) + tail)
        if len(found) > most:
            raise ValueError(f"more than {most} candidate worst cases")
    arr = np.array(found, dtype=np.int64).reshape(len(found), dim)
    kept = []
    for i, row in enumerate(arr):
        above = np.all(arr >= row, axis=1) & np.any(arr > row, axis=1)
        if not above.any():
            kept.append(tuple(int(a) for a in row))
    return sorted(kept, reverse=True)


def norm_bound(mu, dim: int, coverage: float = 0.95, *, cells: int = 1 << 16) -> float:
    """A radius ``q`` with ``P(||Z|| <= q) >= coverage`` for ``Z`` of ``dim`` independent Skellam
    coordinates of time ``mu``: the error radius of a released point before purchase, in noise units.

    Computed from the exact law of ``Z_i^2`` with each square rounded *up* to one of ``cells`` steps of
    ``h`` (so the radius found is never below the exact quantile, and above it by at most a
    ``dim h`` in the square), the laws added by convolution, the mass outside the computed range
    and a margin for the floating-point sums counted against the coverage."""
    from scipy.signal import fftconvolve

    mu = Fraction(mu)
    k_max, probs = _support(mu)
    side = np.concatenate(([probs[k_max]], 2 * probs[k_max + 1:]))  # |Z| = 0..K
    step = max(1, -(-k_max * k_max // cells))
    squares = np.arange(k_max + 1, dtype=np.int64) ** 2
    law = np.bincount(-(-squares // step), weights=side)
    total = law
    for _ in range(dim - 1):
        total = np.clip(fftconvolve(total, law), 0.0, None)
    needed = coverage + dim * TAIL + 1e-9
    j = int(np.searchsorted(np.cumsum(total), needed))
    if j >= total.size:  # pragma: no cover - the computed range holds all but dim * TAIL
        raise ValueError("the coverage is beyond the computed range")
    return float(np.nextafter(math.sqrt(j * step), math.inf))


def profile(mu, cases, eps_values) -> list[float]:
    """``delta(eps)`` at each of ``eps_values`` of a release at base time ``mu``: the largest over the
    listing's worst cases (:func:`case_of`), point by point."""
    mu = Fraction(mu)
    worst = [0.0 for _ in eps_values]
    for case in cases:
        worst = [max(a, b) for a, b in zip(worst, _read(case_law(mu, tuple(case)), eps_values))]
    return worst


#: The largest time any value's noise may run at: the path's own limit.
MAX_TIME = int(_path_max_time)


class TooMuchNoise(ValueError):
    """No time within :data:`MAX_TIME` meets the delta at the level (a level too low for the values)."""


def calibrate(eps, delta_target, cases, guess: float | None = None) -> Fraction:
    """The least grid time ``mu`` whose release is ``(eps, delta_target)``-DP for every case (the
    least noise meeting the listing's ``delta`` at ``eps``). ``guess`` (a time near the answer)
    only saves steps: the search widens until it brackets the answer by the exact figures.

    More noise never costs more (it is the same release with independent noise added), so the least
    time for all cases is the largest of each case's least time: the cases are searched one at a
    time, from the longest shift, and a later case is searched only if it fails at the time found so
    far (most of them then cost one evaluation)."""
    if not 0 < delta_target < 1:
        raise ValueError("delta lies in (0, 1)")
    cases = sorted((tuple(case) for case in cases), key=lambda case: -sum(c * (t / w) ** 2 for w, t, c in case))
    heaviest = max((w for case in cases for w, _, _ in case), default=1)
    found = _calibrate_one(eps, delta_target, cases[0] if cases else (), heaviest, guess)
    for case in cases[1:]:
        if profile(found, [case], [eps])[0] > delta_target:
            found = max(found, _calibrate_one(eps, delta_target, case, heaviest, float(found)))
    return found


def _calibrate_one(eps, delta_target, case, heaviest: int, guess: float | None = None) -> Fraction:
    """:func:`calibrate` for one case; ``heaviest`` the largest weight of any case (no value's time may
    exceed :data:`MAX_TIME`)."""
    cases = [case]

    def meets(j: int) -> bool:
        return profile(_grid_time(j), cases, [eps])[0] <= delta_target

    top = _grid_index(float(MAX_TIME) / heaviest ** 2)  # no coordinate's time above MAX_TIME
    too_much = TooMuchNoise(f"no noise with every value's time at most {MAX_TIME:.0e} meets δ {delta_target:g} at ε "
                            f"{float(eps):g}: the level is too low for these values (raise it, or coarsen their grids)")
    if guess is None:
        l2sq = max(sum(c * (t / w) ** 2 for w, t, c in case) for case in cases)
        guess = l2sq * 2 * math.log(1.25 / delta_target) / float(eps) ** 2 / 2
    j = min(_grid_index(guess), top)
    width = 8
    lo, hi = max(0, j - width), min(j + width, top)
    while lo > 0 and meets(lo):
        lo, width = max(0, lo - 2 * width), 2 * width
    while not meets(hi):
        if hi >= top:
            raise too_much
        lo, hi, width = hi, min(hi + 2 * width, top), 2 * width
    if lo == 0 and meets(0):
        return _grid_time(0)
    while hi - lo > 1:  # meets(hi), not meets(lo)
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return _grid_time(hi)


def ladder(levels, delta_target, cases) -> list[Fraction]:
    """:func:`calibrate` at each of ``levels`` (sorted from the highest: each answer, scaled by the
    squared ratio of the levels, guesses the next)."""
    out: dict = {}
    guess = None
    previous = None
    for eps in sorted(levels, key=lambda e: -Fraction(str(e))):
        if previous is not None:
            guess = float(out[previous]) * (float(Fraction(str(previous))) / float(Fraction(str(eps)))) ** 2
        out[eps] = calibrate(eps, delta_target, cases, guess)
        previous = eps
    return [out[eps] for eps in levels]


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


def mean_abs(mu) -> float:
    """``E|Z|`` for ``Z`` Skellam of time ``mu`` (the mass left out of the computed range, below
    ``TAIL``, counted at the range's edge and beyond it by a margin: an upper bound)."""
    k_max, probs = _support(Fraction(mu))
    side = probs[k_max:]
    return float(2 * np.dot(np.arange(side.size), side) + TAIL * (k_max + 1) * 10)


def error_bound(mu, coverage: float = 0.95) -> int:
    """The smallest ``q`` with ``P(|Z| <= q) >= coverage`` for ``Z`` Skellam of time ``mu``: the
    exact error bound of a released count before purchase, in noise units."""
    mu = Fraction(mu)
    k_max, probs = _support(mu)
    inside = np.concatenate(([probs[k_max]], 2 * probs[k_max + 1:])).cumsum()
    return int(np.searchsorted(inside, coverage * (1 + 1e-12)))


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
