"""A mean's 95% bound before purchase, for an assumed number of records c in its cell
(``mean_error_bound``; docs/mathematics.md, "A mean's bound before purchase").

Two checks, and the mutations they catch:

* ``test_the_bound_covers_95_percent_of_releases``: Laplace noise on the sum and the count, the
  estimate as the release reads it (``mean_estimate``: clamped, the midpoint when the count is
  tiny), for several c and true means; the error exceeds the stated bound in at most 5% of draws (fixed seed; 200,000 draws, 50,000 at
  the quick size of ``GRADUAL_MC``).
  This checks the bound is *valid*. Because it is a union bound and the clamp only helps, the real
  miss rate is far below 5%, so a bound that is too small by a little would still pass here.
* ``test_on_the_union_event_the_raw_error_reaches_the_bound_and_never_exceeds_it``: on the event
  that the sum's and count's errors are within their 97.5% bounds, every (a, b) on the event's
  corners and every true mean m in [lower, upper] gives a raw error |M - m| at most the stated
  bound, and some reach it exactly. This checks the formula itself: dropping ``- t_c`` from the
  denominator is exceeded; using the width for K (or ``max(|lower|, |upper|)`` replaced by
  ``upper``) is exceeded or never reached. ``test_the_check_catches_wrong_formulas`` runs it on
  those mutations and expects it to fail.
"""

from decimal import Decimal

import numpy as np
import pytest

from tests import mc

from market.catalog.spec.columns import columns_from
from market.catalog.spec import LATTICE, Neighbours, build_plan, mean_error_bound, mean_estimate
from releases.engine.postprocess import laplace_error_bound

EACH = 0.975


def raw_bound(t_s, t_c, lower, upper, c):
    return (t_s + max(abs(lower), abs(upper)) * t_c) / (c - t_c)


def corner_check(bound, t_s, t_c, lower, upper, c) -> tuple[float, float]:
    """(largest raw error over the event's corners and a grid of true means, the stated bound)."""
    stated = bound(t_s, t_c, lower, upper, c)
    worst = 0.0
    for m in np.linspace(lower, upper, 201):
        for a in (-t_s, t_s):
            for b in (-t_c, t_c):
                raw = (m * c + a) / (c + b)
                worst = max(worst, abs(raw - m))
    return worst, stated


CASES = [  # t_s, t_c, lower, upper, c: the width never caps these bounds
    (300.0, 3.0, 0.0, 100.0, 1000),
    (300.0, 3.0, -20.0, 100.0, 1000),
    (300.0, 3.0, -100.0, 20.0, 50),
    (40.0, 12.0, 5.0, 15.0, 400),
]


@pytest.mark.parametrize("t_s,t_c,lower,upper,c", CASES)
def test_on_the_union_event_the_raw_error_reaches_the_bound_and_never_exceeds_it(t_s, t_c, lower, upper, c):
    worst, stated = corner_check(raw_bound, t_s, t_c, lower, upper, c)
    assert stated < upper - lower  # not capped: the formula itself is under test
    assert worst <= stated * (1 + 1e-12)
    assert worst == pytest.approx(stated, rel=1e-9)
    assert mean_error_bound(t_s, t_c, lower, upper, c) == pytest.approx(stated)


MUTATIONS = {
    "no - t_c in the denominator": lambda t_s, t_c, lo, up, c: (t_s + max(abs(lo), abs(up)) * t_c) / c,
    "K = width": lambda t_s, t_c, lo, up, c: (t_s + (up - lo) * t_c) / (c - t_c),
    "K = upper": lambda t_s, t_c, lo, up, c: (t_s + up * t_c) / (c - t_c),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_the_check_catches_wrong_formulas(name):
    failed = []
    for case in CASES:
        worst, stated = corner_check(MUTATIONS[name], *case)
        if not (worst <= stated * (1 + 1e-12) and worst == pytest.approx(stated, rel=1e-9)):
            failed.append(case)
    assert failed, f"the corner check does not notice the mutation {name!r}"


@pytest.mark.statistical
@pytest.mark.parametrize("c", [60, 300, 5000])
@pytest.mark.parametrize("m", [0.0, 37.5, 99.0, 100.0])
def test_the_bound_covers_95_percent_of_releases(c, m):
    lower, upper = 0.0, 100.0
    count_scale, sum_scale = 8.0, 800.0  # a sum of values up to 100 and its count, at the same level
    t_s, t_c = laplace_error_bound(sum_scale, EACH), laplace_error_bound(count_scale, EACH)
    stated = mean_error_bound(t_s, t_c, lower, upper, c)
    assert c > t_c or stated == upper - lower
    rng = np.random.default_rng(20261124 + c)
    draws = mc.size(full=200_000, quick=50_000)
    released_sum = m * c + rng.laplace(0.0, sum_scale, draws)
    released_count = c + rng.laplace(0.0, count_scale, draws)
    value, _ = mean_estimate(released_sum, released_count, lower, upper, sum_scale, 0.95, count_scale)
    missed = np.mean(np.abs(value - m) > stated)
    assert missed <= 0.05, (c, m, stated, missed)


def test_small_cells_get_the_width_and_the_bound_falls_with_more_records():
    assert mean_error_bound(100.0, 30.0, 0.0, 100.0, 30) == 100.0  # c <= t_c: nothing better than the width
    bounds = [mean_error_bound(100.0, 30.0, 0.0, 100.0, c) for c in (31, 100, 1000, 10_000)]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] < 1


@pytest.mark.parametrize("engine", ["laplace", LATTICE])
def test_a_means_curve_uses_its_sum_and_count_bounds_at_97_5_percent(engine):
    columns = columns_from([{"name": "age", "type": "decimal", "missing": "none"}])
    plan = build_plan([{"kind": "mean", "column": "age", "lower": 0, "upper": 100}], columns,
                      neighbours=Neighbours(max_rows=100_000), mechanism=engine)
    from market.catalog.spec import KINDS

    stat, where = plan.statistics[0], plan.indices[0]
    assert KINDS["mean"].curve(stat, where, plan) is None  # no assumption: nothing can be stated
    curve = KINDS["mean"].curve(stat, where, plan, records=2000)
    t_s, t_c = plan.bound(where[0], "1.5", EACH), plan.bound(where[1], "1.5", EACH)
    assert curve["assumes_records"] == 2000
    assert curve["bound"](Decimal("1.5")) == pytest.approx((t_s + 100 * t_c) / (2000 - t_c))
