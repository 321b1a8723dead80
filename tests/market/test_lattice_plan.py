"""Statistics laid out for the exact lattice path (market/catalog/spec/, engine "lattice"):
grids and their defaults and refusals, whole-number layouts (weights, ranges, worst cases in grid
steps), exact integer answers from DuckDB, every stated sensitivity between random neighbours in
exact fractions (the whole vector's privacy loss is at most eps, exactly), and readings with
discrete Laplace error bounds that cover about 95% of releases drawn from the engine."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from market.catalog.spec.columns import Column
from market.catalog.compute import Table, compute
from market.catalog.spec import (
    LATTICE,
    Neighbours,
    SpecError,
    build_plan,
    default_grid,
    describe,
    present,
)
from releases.engine import lattice
from tests.market.test_typed_statistics import NB_COLUMNS, NB_SPECS, _dominated, _neighbours, _table

COLUMNS = [Column("age", "integer", "none"), Column("income", "decimal", "exclude"), Column("g", "categorical", "none")]


def plan_of(spec, nb=None):
    return build_plan(spec, COLUMNS, neighbours=nb or Neighbours(max_rows=1000), mechanism=LATTICE)


@pytest.mark.parametrize("lower, upper, integer, grid", [
    (0, 100, True, "1"),           # an integer column: whole numbers, exact
    (0, 10_000, False, "0.01"),    # money: cents
    (0, 1, False, "0.000001"),
    (-250, 40, False, "0.001"),
    (0, 1e9, True, "1000"),        # at most a million steps
    (0, 0.5, True, "1"),
])
def test_the_default_grid_has_at_most_a_million_steps(lower, upper, integer, grid):
    assert default_grid(lower, upper, integer) == Decimal(grid)
    assert max(abs(Decimal(repr(lower))), abs(Decimal(repr(upper)))) / Decimal(grid) <= 10**6 or integer


def test_a_declared_grid_is_kept_as_written_and_a_default_is_filled_in():
    plan = plan_of([{"kind": "sum", "column": "income", "lower": 0, "upper": 5000, "grid": 0.050},
                    {"kind": "mean", "column": "age", "lower": 0, "upper": 120}])
    assert plan.statistics[0]["grid"] == "0.05" and plan.statistics[1]["grid"] == "1"
    assert plan.engine == LATTICE
    assert "each value rounded to a multiple of 0.05" in describe(plan)[0]
    float_plan = build_plan([{"kind": "sum", "column": "income", "lower": 0, "upper": 5000}], COLUMNS)
    assert "grid" not in float_plan.statistics[0] and float_plan.lattice is None and float_plan.engine == "laplace"


@pytest.mark.parametrize("item, message", [
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": 0}, "grid must be a positive number"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": "-1"}, "grid must be a positive number"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": "abc"}, "grid must be a number"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": True}, "grid must be a number"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": "1e-9"}, "too fine for these bounds"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": "1E-999999"}, "at least 1e-12"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 100, "grid": "1E+999999"}, "up to 1e15"),
    ({"kind": "sum", "column": "income", "lower": 0, "upper": 1, "grid": 10}, "coarser than the bounds"),
])
def test_bad_grids_are_refused_naming_the_statistic(item, message):
    with pytest.raises(SpecError) as caught:
        plan_of([item])
    assert message in str(caught.value) and str(caught.value).startswith("statistic 1 (sum)")


def test_a_range_too_wide_for_exact_integers_is_refused():
    with pytest.raises(SpecError, match="too wide for exact integers"):
        build_plan([{"kind": "sum", "column": "income", "lower": 0, "upper": 1e8, "grid": "1"}], COLUMNS,
                   neighbours=Neighbours(max_rows=10**8), mechanism=LATTICE)


def test_the_layout_is_in_whole_steps_with_integer_weights():
    spec = [{"kind": "count"},
            {"kind": "sum", "column": "income", "lower": -10, "upper": 1000, "grid": "0.5"},
            {"kind": "histogram", "column": "age", "bins": [0, 18, 65, 120]}]
    plan = plan_of(spec)
    layout = plan.lattice
    # K = 3 groups: the count (1 step), the sum (max(|L|, |U|) = 2000 steps of 0.5), the histogram (1)
    assert layout.unit_weights == (3, 6000, 3, 3, 3)
    assert layout.grids == (Decimal(1), Decimal("0.5"), Decimal(1), Decimal(1), Decimal(1))
    assert layout.unit_lower == (0, -20 * 1000, 0, 0, 0) and layout.unit_upper == (1000, 2000 * 1000, 1000, 1000, 1000)
    assert list(plan.weights) == [3.0, 3000.0, 3.0, 3.0, 3.0]  # in the values' units
    assert layout.levels(Decimal("1.5")) == [Fraction(1, 2), Fraction(1, 4000), Fraction(1, 2), Fraction(1, 2), Fraction(1, 2)]
    assert layout.unit_cases == (((0, 1), (1, 2000), (2, 1)),)


def test_answers_are_exact_integers_in_grid_steps():
    table = Table.from_arrow(pa.table({
        "age": pa.array([10, 20, 30, 95], pa.int64()),
        "income": pa.array([100.25, 2000.5, 12000.0, None], pa.float64()),
        "g": pa.array(["a", "b", "a", "a"], pa.string()),
    }))
    plan = plan_of([{"kind": "sum", "column": "income", "lower": 0, "upper": 10_000, "grid": "0.25"},
                    {"kind": "count", "by": "g", "categories": ["a"]}])
    u = compute(plan, table)
    assert u.dtype == np.int64
    # 100.25 -> 401 steps, 2000.5 -> 8002, 12000 clamped to 10000 -> 40000, missing -> 0
    assert u.tolist() == [401 + 8002 + 40000, 3, 1]


@pytest.mark.parametrize("relation", ["private_size", "public_size"])
@pytest.mark.parametrize("item", NB_SPECS, ids=lambda s: s["kind"] + ("-by" if "by" in s else "") + ("-where" if "where" in s else ""))
def test_the_lattice_release_is_exactly_eps_dp_between_random_neighbours(item, relation):
    """Between random neighbouring datasets, each coordinate's move in steps over its integer weight
    is within a stated worst case, and the moves over the weights add up to at most 1 exactly (a
    Fraction): with coordinate i at level eps / w_i, the privacy loss is at most eps. The largest l1
    move reaches 90% of the stated sensitivity (the layout is not loose)."""
    rng = np.random.default_rng(20241)
    n = 5
    nb = Neighbours(relation, size=n if relation == "public_size" else None, max_rows=50)
    spec = dict(item)
    if spec["kind"] in ("sum", "mean"):
        spec["grid"] = "0.5"
    plan = build_plan([spec], NB_COLUMNS, neighbours=nb, mechanism=LATTICE)
    weights = plan.lattice.unit_weights
    worst = 0
    for records, neighbour in _neighbours(rng, relation, n, 200):
        a, b = compute(plan, _table(records)), compute(plan, _table(neighbour))
        assert a.dtype == np.int64 and b.dtype == np.int64
        move = [abs(int(x) - int(y)) for x, y in zip(a, b)]
        loss = sum(Fraction(m, w) for m, w in zip(move, weights))
        assert loss <= 1, (move, weights)
        assert _dominated([float(Fraction(m, w)) for m, w in zip(move, weights) if m], plan.loss_cases)
        worst = max(worst, sum(Fraction(m, w) for m, w in zip(move, weights)))
    assert worst >= Fraction(9, 10), worst


def test_readings_are_integers_with_discrete_laplace_bounds_that_cover_95_percent():
    """300 independent lattice releases at each of two levels: every count reading is an int, the
    stated 95% bound is the discrete Laplace one (the smallest t with 2 a^(t+1) / (1 + a) <= 5%),
    and the fraction of readings within it is at least 95% less 4 binomial standard deviations."""
    import random

    table = Table.from_arrow(pa.table({
        "age": pa.array(list(range(20, 80)) * 5, pa.int64()),
        "income": pa.array([float(i % 97) * 10.5 for i in range(300)], pa.float64()),
        "g": pa.array(["a", "b", "c"] * 100, pa.string()),
    }))
    spec = [{"kind": "count", "by": "g", "categories": ["a", "b"]},
            {"kind": "sum", "column": "income", "lower": 0, "upper": 1000, "grid": "0.5"},
            {"kind": "mean", "column": "age", "lower": 0, "upper": 100}]
    plan = plan_of(spec)
    u = compute(plan, table)
    layout = plan.lattice
    exact = np.array([float(layout.value(i, s)) for i, s in enumerate(u.tolist())])
    truth = present(plan, exact, plan.weights, level=Decimal(1))
    rng = random.Random(5)
    reps = 300
    for eps in (Decimal("0.5"), Decimal(2)):
        inside = np.zeros(len(truth))
        for _ in range(reps):
            noise = lattice.sample(layout.levels(eps), len(u), rng)
            steps = np.clip(u + noise, layout.unit_lower, layout.unit_upper)
            values = [layout.value(i, s) for i, s in enumerate(steps.tolist())]
            readings = present(plan, np.array(values, dtype=np.float64), plan.weights / float(eps), level=eps)
            for j, (r, t) in enumerate(zip(readings, truth)):
                if r["kind"] == "count":
                    assert isinstance(r["value"], int)
                inside[j] += abs(r["value"] - t["value"]) <= r["error_bound"]
        for r in readings:
            if r["kind"] == "count":
                level = eps / layout.unit_weights[0]
                assert r["error_bound"] == lattice.error_bound(level)
        tolerance = 4 * np.sqrt(0.95 * 0.05 / reps)
        assert (inside / reps >= 0.95 - tolerance).all(), (eps, inside / reps)
