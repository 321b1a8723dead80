"""The mathematics of a vector statistic (the centroid) on the Skellam path: each record's rounded
point within a squared length, the worst cases of one record's change (the undominated integer
shifts), the envelope a listing composes as, the error radius before purchase, and the calibration
over many worst cases."""

import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from market.catalog.spec.kinds.centroid import bound_sq
from releases.engine import skellam_privacy as sp


def _dominated(case, by):
    return all(x >= y for x, y in zip(by, case))


@pytest.mark.parametrize("bound,dim", [(7, 2), (50, 2), (1764, 2), (30, 3), (200, 3), (40, 4)])
def test_the_frontier_is_exactly_the_undominated_shifts(bound, dim):
    """Every integer shift within the bound is dominated by a frontier shift, every frontier shift is
    within it, and none can be dropped (each is the only one dominating itself)."""
    front = sp.frontier(bound, dim)
    side = math.isqrt(bound)
    every = {tuple(sorted(map(abs, u), reverse=True)) for u in itertools.product(range(side + 1), repeat=dim)
             if sum(a * a for a in u) <= bound}
    assert all(sum(a * a for a in case) <= bound for case in front)
    assert all(any(_dominated(case, f) for f in front) for case in every)
    for f in front:
        assert not any(other != f and _dominated(f, other) for other in every)


def test_the_frontier_refuses_to_enumerate_too_much():
    with pytest.raises(ValueError, match="more than 100 candidate"):
        sp.frontier(10**6, 3, most=100)


def test_the_envelope_dominates_every_case_per_weight():
    cases = [((1, 3, 1), (2, 1, 1)), ((1, 2, 2),), ((2, 4, 1),)]
    env = sp.envelope(cases)
    assert env == ((1, 2, 1), (1, 3, 1), (2, 4, 1))
    mu = Fraction(40)
    for eps in (0.2, 0.5, 1.0):
        assert sp.profile(mu, [env], [eps])[0] >= max(sp.profile(mu, cases, [eps]))


@pytest.mark.parametrize("steps", [Fraction(1), Fraction(20), Fraction(41, 4), Fraction(7, 3)])
@pytest.mark.parametrize("dim", [2, 3, 4, 9])
def test_a_rounded_point_of_the_ball_stays_within_the_bound(steps, dim):
    """``bound_sq`` is the floor of ``(steps + sqrt(dim)/2)^2`` (checked at 50 digits), and points of
    the ball rounded to the nearest integers never exceed it (points on the sphere, the worst)."""
    with localcontext() as context:  # never the process's: other tests read its precision
        context.prec = 50
        exact = (Decimal(steps.numerator) / Decimal(steps.denominator) + Decimal(dim).sqrt() / 2) ** 2
    assert bound_sq(steps, dim) == int(exact)
    rng = np.random.default_rng(7)
    points = rng.normal(size=(20000, dim))
    points *= float(steps) / np.linalg.norm(points, axis=1, keepdims=True)
    assert (np.round(points) ** 2).sum(axis=1).max() <= bound_sq(steps, dim)


def _exact_radius(mu, dim, coverage=0.95):
    """The least ``q`` (the root of a whole number) with ``P(||Z|| <= q) >= coverage``, from scipy's
    Skellam pmf directly (no binning): ``P(||Z||^2 <= s)`` summed over the first coordinates with the
    last one's distribution function, the least ``s`` found by bisection."""
    reach = int(10 * math.sqrt(2 * mu)) + 10
    k = np.arange(-reach, reach + 1)
    p = stats.skellam.pmf(k, mu, mu)
    inside = np.concatenate(([p[reach]], 2 * p[reach + 1:])).cumsum()  # P(|Z| <= j)
    grid = np.array(np.meshgrid(*([k] * (dim - 1)), indexing="ij")).reshape(dim - 1, -1)
    weight = np.prod(p[grid + reach], axis=0)
    used = (grid ** 2).sum(axis=0)

    def cdf(s):
        left = s - used
        ok = left >= 0
        left = np.maximum(left, 0)
        last = np.floor(np.sqrt(left)).astype(np.int64)  # the integer square root, corrected both ways
        last += (last + 1) ** 2 <= left
        last -= last ** 2 > left
        last = np.minimum(last, reach)
        return float((weight[ok] * inside[last[ok]]).sum())

    lo, hi = 0, dim * reach * reach
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cdf(mid) >= coverage:
            hi = mid
        else:
            lo = mid
    return math.sqrt(hi)


@pytest.mark.parametrize("mu,dim", [(3, 2), (40, 2), (40, 3), (900, 2), (5000, 3)])
def test_the_error_radius_is_never_below_the_exact_quantile_and_close_to_it(mu, dim):
    """Rounding each square up to its cell can only raise the radius, and by a fraction of a percent.
    (Rounding the squares down instead falls below the exact quantile at 900 and 5000.)"""
    exact = _exact_radius(mu, dim)
    found = sp.norm_bound(Fraction(mu), dim)
    assert exact <= found <= exact * 1.002 + 1e-9


def test_calibrating_many_cases_is_the_largest_of_each_cases_least_time():
    """The least time meeting delta for every case is the largest of each case's own (more noise never
    costs more); at the grid time below it some case fails."""
    cases = [sp.case_of([(0, a), (1, b)], [1, 1]) for a, b in sp.frontier(4 * 30, 2)]
    found = sp.calibrate(1.0, 1e-9, cases)
    assert found == max(sp.calibrate(1.0, 1e-9, [case]) for case in cases)
    assert max(sp.profile(found, cases, [1.0])) <= 1e-9
    below = sp._grid_time(sp._grid_index(float(found)) - 1)
    assert max(sp.profile(below, cases, [1.0])) > 1e-9


@pytest.mark.parametrize("grid", ["1e-300", "0.0000001", "1"])
def test_a_grid_too_fine_is_refused_with_the_reason_whatever_its_size(grid):
    from market.catalog.spec import SpecError, build_plan
    from market.catalog.spec.stability import Neighbours

    spec = [{"kind": "centroid", "columns": ["x", "y", "z"], "center": [0, 0, 0], "radius": 3000, "grid": grid}]
    with pytest.raises(SpecError, match="at most 64 are allowed: use a coarser grid"):
        build_plan(spec, ["x", "y", "z"], neighbours=Neighbours("public_size", 10), mechanism="skellam")
