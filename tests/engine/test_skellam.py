"""The exact Skellam path (``releases.engine.skellam``) has the laws of two Poisson counting
processes, on fixed seeds (G-tests at the suite's alarm level, ``lattice_checks.ALARM``):

* its samplers: ``Binomial(n, 1/2)`` from fair bits, ``Binomial(n, p)`` by halving for rational
  ``p`` on both sides of 1/2, ``Poisson(lam)`` by rejection for small, whole, fractional and large
  means;
* its path: a point's counts are ``Poisson(mu)`` and their difference Skellam; two and three times
  reached in every order (first draw, more noise, less noise, between two) have the joint law of
  the process, independent ``Poisson`` increments;
* each check is shown to catch a deliberate mutation of the engine (a 3% error in a probability or
  a mean, and a bridge that ignores the upper point).

Every draw uses a bit source with ``getrandbits`` only.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

from releases.engine import skellam
from tests import mc

from . import lattice_checks as checks

#: Draws per law checked (the mutations below are caught at the full size).
N = mc.size(full=30_000, quick=8_000)

pytestmark = pytest.mark.statistical


def _src(seed: int):
    return checks.bits_only(seed)


def _fit_1d(draws: np.ndarray, pmf, lo: int, hi: int) -> checks.Fit:
    """G-test of integer draws against ``pmf`` on ``lo..hi`` (the rest of the mass in one cell)."""
    support = np.arange(lo, hi + 1)
    p = pmf(support)
    probabilities = np.append(p, max(0.0, 1.0 - p.sum()))
    inside = (draws >= lo) & (draws <= hi)
    observed = np.append(np.bincount(draws[inside] - lo, minlength=support.size), (~inside).sum())
    return checks.g_test(observed, probabilities)


def _fit_poisson(draws, lam) -> checks.Fit:
    lam = float(lam)
    lo, hi = int(stats.poisson.ppf(1e-7, lam)), int(stats.poisson.isf(1e-7, lam))
    return _fit_1d(np.asarray(draws), lambda k: stats.poisson.pmf(k, lam), lo, hi)


def _fit_binomial(draws, n, p) -> checks.Fit:
    return _fit_1d(np.asarray(draws), lambda k: stats.binom.pmf(k, n, float(p)), 0, n)


def _fit_increments(parts: list[np.ndarray], means: list[float]) -> checks.Fit:
    """G-test of the joint law of several count vectors against independent ``Poisson(means)``
    (each cut at its 1e-4 tails into a cell of its own, the joint cells flattened)."""
    if any(bool((x < 0).any()) for x in parts):  # a count that went down: no process does that
        return checks.Fit(math.inf, 1, 0.0, int(parts[0].size))
    cells, probabilities = [], []
    for x, lam in zip(parts, means):
        hi = int(stats.poisson.isf(1e-4, lam))
        cells.append(np.minimum(x, hi + 1))
        p = stats.poisson.pmf(np.arange(hi + 1), lam)
        probabilities.append(np.append(p, 1 - p.sum()))
    sizes = [p.size for p in probabilities]
    index = np.ravel_multi_index(cells, sizes)
    observed = np.bincount(index, minlength=int(np.prod(sizes)))
    joint = probabilities[0]
    for p in probabilities[1:]:
        joint = np.multiply.outer(joint, p)
    return checks.g_test(observed, joint.ravel())


# --------------------------------------------------------------------------
# samplers


def test_fair_binomial_counts_the_ones_of_each_coordinates_own_bits():
    sizes = [0, 1, 63, 64, 65, 200]
    n = np.tile(sizes, N)
    draws = skellam.fair_binomial(_src(3), n)
    assert (draws[n == 0] == 0).all()
    for size in sizes[1:]:
        fit = _fit_binomial(draws[n == size], size, F(1, 2))
        assert fit.passes, f"Binomial({size}, 1/2): {fit}"


@pytest.mark.parametrize("n, p", [(1, F(1, 3)), (17, F(2, 7)), (500, F(1, 3)), (40, F(5, 6)), (300, F(999, 1000)),
                                  (2000, F(1, 1000)), (9, F(1, 2))])
def test_binomial_by_halving_has_the_binomial_law(n, p):
    draws = skellam.binomial(_src(5), np.full(N, n), p)
    fit = _fit_binomial(draws, n, p)
    assert fit.passes, f"Binomial({n}, {p}): {fit}"


def test_binomial_at_zero_and_one_is_certain():
    n = np.array([0, 1, 5, 1000])
    assert skellam.binomial(_src(1), n, F(0)).tolist() == [0, 0, 0, 0]
    assert skellam.binomial(_src(1), n, F(1)).tolist() == n.tolist()


@pytest.mark.parametrize("lam", [F(1, 7), F(1), F(5, 2), F(37, 3), F(400), F(12345, 7)])
def test_poisson_by_rejection_has_the_poisson_law(lam):
    draws = skellam.poisson(_src(7), lam, N)
    fit = _fit_poisson(draws, lam)
    assert fit.passes, f"Poisson({lam}): {fit}"


def test_the_rejections_constant_is_at_least_every_weight_it_divides():
    """``K`` bounds ``R(d)`` for every ``d`` with mass (checked over 12 standard deviations): a
    smaller one would make a coin of probability above 1 and change the law silently."""
    for lam in (F(1, 7), F(1), F(5, 2), F(37, 3), F(400), F(12345, 7), F(10**6 + 1, 3)):
        c = skellam._Rejection(lam)
        k = F(c.k_num, c.k_den)
        reach = int(12 * math.sqrt(float(lam)) + 12)
        # every d near 0 and near the two maxima (s |d| about 1 for |d| about 1/s); a sparse grid beyond
        near = set(range(-60, 60)) | set(range(int(1 / c.s) - 60, int(1 / c.s) + 60)) | set(range(-int(1 / c.s) - 60, -int(1 / c.s) + 60))
        for d in sorted(d for d in near | set(range(-reach, reach, 37)) if -c.m <= d < reach):
            r = c.ratio(d, 64)
            assert F(r.lo) * F(2) ** r.e <= k, (lam, d)


# --------------------------------------------------------------------------
# the path


def test_a_first_point_is_two_poisson_counts_and_their_difference_is_skellam():
    a, b = skellam.sample(F(9, 2), N, _src(11))
    assert _fit_poisson(a, F(9, 2)).passes and _fit_poisson(b, F(9, 2)).passes
    z = skellam.noise((a, b))
    fit = _fit_1d(z, lambda k: stats.skellam.pmf(k, 4.5, 4.5), -25, 25)
    assert fit.passes, fit


ORDERS = {
    "first at 4, less noise at 1, then 2 between": ("4", "1", "2"),
    "first at 1, more noise at 4, then 2 between": ("1", "4", "2"),
    "first at 2, less noise at 1, more noise at 4": ("2", "1", "4"),
    "first at 2, more noise at 4, less noise at 1": ("2", "4", "1"),
    "first at 1, then 2, then 4 (more noise twice)": ("1", "2", "4"),
    "first at 4, then 2, then 1 (less noise twice)": ("4", "2", "1"),
}


def _walk(order, n: int, seed: int) -> dict:
    """Counts (A only: B is drawn alike and independently) at the times of ``order``, each new time
    reached from the nearest stored ones, as the release service steps a listing."""
    rng = _src(seed)
    known: dict[F, tuple] = {}
    for t in map(F, order):
        below = max((k for k in known if k < t), default=None)
        above = min((k for k in known if k > t), default=None)
        if below is None and above is None:
            known[t] = skellam.sample(t, n, rng)
        elif below is not None and above is not None:
            known[t] = skellam.bridge(known[below], below, known[above], above, t, rng)
        elif below is not None:
            known[t] = skellam.tighten(known[below], below, t, rng)
        else:
            known[t] = skellam.relax(known[above], above, t, rng)
    return {t: counts[0] for t, counts in known.items()}


@pytest.mark.parametrize("order", list(ORDERS))
def test_three_times_in_every_order_have_the_processs_joint_law(order):
    """Whatever the order, ``N(1)``, ``N(2) - N(1)`` and ``N(4) - N(2)`` are independent Poisson
    counts of means 1, 1 and 2: the releases at the three times are those of one process."""
    x = _walk(ORDERS[order], N, seed=13)
    one, two, four = x[F(1)], x[F(2)], x[F(4)]
    assert (one <= two).all() and (two <= four).all()
    fit = _fit_increments([one, two - one, four - two], [1.0, 1.0, 2.0])
    assert fit.passes, f"{order}: {fit}"


def test_two_times_have_the_processs_joint_law_both_ways():
    for order in (("3", "1"), ("1", "3")):
        x = _walk(order, N, seed=17)
        fit = _fit_increments([x[F(1)], x[F(3)] - x[F(1)]], [1.0, 2.0])
        assert fit.passes, f"{order}: {fit}"


def test_inputs_are_checked():
    with pytest.raises(ValueError):
        skellam.sample(0.5, 3, _src(1))  # a float time: not exact
    with pytest.raises(ValueError):
        skellam.relax((np.array([1]), np.array([1])), F(1), F(2), _src(1))  # relax lowers the time
    with pytest.raises(ValueError):
        skellam.bridge((np.array([3]), np.array([0])), F(1), (np.array([2]), np.array([0])), F(3), F(2), _src(1))
    with pytest.raises(ValueError):
        skellam.binomial(_src(1), np.array([3]), F(3, 2))


# --------------------------------------------------------------------------
# the checks catch mutated engines


def test_the_checks_catch_a_mutated_binomial_poisson_and_bridge(monkeypatch):
    real_binomial, real_rejection = skellam.binomial, skellam._Rejection

    monkeypatch.setattr(skellam, "binomial", lambda src, n, p: real_binomial(src, n, min(F(1), p * F(103, 100))))
    assert not _fit_binomial(skellam.binomial(_src(5), np.full(30_000, 500), F(1, 3)), 500, F(1, 3)).passes
    monkeypatch.setattr(skellam, "binomial", real_binomial)

    # a Poisson sampler whose kept coin is computed for a 3% larger mean
    class Off(real_rejection):
        def __init__(self, lam):
            super().__init__(lam * F(103, 100))

    monkeypatch.setattr(skellam, "_Rejection", Off)
    skellam._rejection.cache_clear()
    assert not _fit_poisson(skellam.poisson(_src(7), F(400), 30_000), F(400)).passes
    monkeypatch.setattr(skellam, "_Rejection", real_rejection)
    skellam._rejection.cache_clear()

    # a bridge that ignores the upper point (the time reached by more noise from the lower one)
    monkeypatch.setattr(skellam, "bridge", lambda lower, lo, upper, hi, mu, rng: skellam.tighten(lower, lo, mu, rng))
    x = _walk(ORDERS["first at 4, less noise at 1, then 2 between"], 20_000, seed=13)
    assert not _fit_increments([x[F(1)], x[F(2)] - x[F(1)], x[F(4)] - x[F(2)]], [1.0, 1.0, 2.0]).passes


def test_the_three_times_check_catches_a_bridge_with_a_wrong_mixing_probability(monkeypatch):
    """A bridge whose binomial probability is 5% off ((mu - lo)/(hi - lo) times 1.05)."""
    real, real_bridge = skellam.binomial, skellam.bridge

    def off(src, n, p):
        return real(src, n, min(F(1), p * F(105, 100)))

    def off_bridge(lower, lo, upper, hi, mu, rng):  # the binomial mutated in the bridge alone
        with monkeypatch.context() as m:
            m.setattr(skellam, "binomial", off)
            return real_bridge(lower, lo, upper, hi, mu, rng)

    monkeypatch.setattr(skellam, "bridge", off_bridge)
    x = _walk(ORDERS["first at 4, less noise at 1, then 2 between"], 30_000, seed=13)
    fit = _fit_increments([x[F(1)], x[F(2)] - x[F(1)], x[F(4)] - x[F(2)]], [1.0, 1.0, 2.0])
    assert not fit.passes, fit
