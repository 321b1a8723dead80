"""The statistics a listing offers, as one vector (market/catalog/spec/)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from market.catalog.compute import Table, compute
from market.catalog.spec import MAX_BINS, MAX_STATISTICS, Neighbours, SpecError, build_plan, mean_estimate, present
from releases.engine.postprocess import laplace_error_bound, snap


def compute_on(plan, names, values):
    """The plan's answer on a float matrix with one column per name (through DuckDB)."""
    return compute(plan, Table.from_matrix(names, values))

COLUMNS = ["age", "income", "score"]
AGES = [0, 18, 30, 50, 100]


def count():
    return {"kind": "count"}


def total(column="age", lower=0, upper=100):
    return {"kind": "sum", "column": column, "lower": lower, "upper": upper}


def mean(column="age", lower=0, upper=100):
    return {"kind": "mean", "column": column, "lower": lower, "upper": upper}


def histogram(column="age", bins=AGES):
    return {"kind": "histogram", "column": column, "bins": list(bins)}


# --- layout ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, labels, sensitivity, indices",
    [
        ([count()], ("count",), 1.0, ((0,),)),
        ([total()], ("sum(age)",), 100.0, ((0,),)),
        ([total(lower=-200, upper=100)], ("sum(age)",), 200.0, ((0,),)),
        ([mean()], ("count", "sum(age)"), 101.0, ((1, 0),)),
        ([total(), mean()], ("count", "sum(age)"), 101.0, ((1,), (1, 0))),
        ([mean(), count(), total()], ("count", "sum(age)"), 101.0, ((1, 0), (0,), (1,))),
        (
            [total(), total(lower=10, upper=50), mean(lower=10, upper=50)],
            ("count", "sum(age; 0..100)", "sum(age; 10..50)"),
            151.0,
            ((1,), (2,), (2, 0)),
        ),
        (
            [total("income", -0.5, 2.5), total("score", 1, 3)],
            ("sum(income)", "sum(score)"),
            5.5,
            ((0,), (1,)),
        ),
        (
            [histogram()],
            ("age in [0, 18)", "age in [18, 30)", "age in [30, 50)", "age in [50, 100]"),
            1.0,
            ((0, 1, 2, 3),),
        ),
        (
            [histogram("score", [0, 1.5]), count(), histogram("age", [0, 18, 30]), total("income", 0, 10)],
            ("count", "sum(income)", "score in [0, 1.5]", "age in [0, 18)", "age in [18, 30]"),
            13.0,
            ((2,), (0,), (3, 4), (1,)),
        ),
    ],
)
def test_layout_labels_and_sensitivity(spec, labels, sensitivity, indices):
    plan = build_plan(spec, COLUMNS)
    assert plan.labels == labels
    assert plan.sensitivity == sensitivity
    assert plan.indices == indices
    assert len(plan.lower) == len(plan.upper) == len(labels)


def test_labels_stay_unique_when_two_histograms_share_bins():
    plan = build_plan([histogram(bins=[0, 18, 30]), histogram(bins=[0, 18, 50])], COLUMNS)
    assert plan.labels == ("age in [0, 18)", "age in [18, 30]", "age in [0, 18) (statistic 2)", "age in [18, 50]")
    assert plan.sensitivity == 2.0


def test_declared_ranges_come_from_bounds_and_max_rows():
    plan = build_plan([mean(lower=-5, upper=100), total("income", 10, 20), total("score", -7, -2), histogram(bins=[0, 1, 2])],
                      COLUMNS, neighbours=Neighbours(max_rows=1000))
    assert plan.labels == ("count", "sum(age)", "sum(income)", "sum(score)", "age in [0, 1)", "age in [1, 2]")
    assert plan.lower.tolist() == [0, -5000, 0, -7000, 0, 0]
    assert plan.upper.tolist() == [1000, 100_000, 20_000, 0, 1000, 1000]
    assert plan.lower.dtype == plan.upper.dtype == np.float64
    with pytest.raises(ValueError):
        plan.lower[0] = 1.0  # the plan is immutable


def test_the_spec_is_normalised_to_floats():
    plan = build_plan([total(lower=0, upper=100), histogram(bins=(0, 18, 30)), mean(lower=-0.0, upper=1)], COLUMNS)
    assert plan.statistics == (
        {"kind": "sum", "column": "age", "lower": 0.0, "upper": 100.0},
        {"kind": "histogram", "column": "age", "bins": [0.0, 18.0, 30.0]},
        {"kind": "mean", "column": "age", "lower": 0.0, "upper": 1.0},
    )
    assert all(type(x) is float for x in plan.statistics[1]["bins"])
    assert math.copysign(1.0, plan.statistics[2]["lower"]) == 1.0
    assert build_plan(list(plan.statistics), COLUMNS).labels == plan.labels


@given(data=st.data())
@settings(max_examples=150, deadline=None, derandomize=True)
def test_removing_one_record_moves_the_answer_by_at_most_the_sensitivity(data):
    plan = build_plan(data.draw(specs), COLUMNS)
    rows = data.draw(datasets)
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))
    u = compute_on(plan, COLUMNS, values)
    for i in range(len(rows)):
        neighbour = compute_on(plan, COLUMNS, np.delete(values, i, axis=0))
        assert np.abs(u - neighbour).sum() <= plan.sensitivity + 1e-6


# --- compute ---------------------------------------------------------------------------

edges = st.lists(st.sampled_from([-50, -1, 0, 0.5, 1, 2, 18, 30, 50, 100]), min_size=2, max_size=6, unique=True).map(sorted)
bounds = st.sampled_from([(0, 100), (-50, 50), (-1, 0.5), (18, 30), (2, 1e6)])
statistic = st.one_of(
    st.just(count()),
    st.builds(lambda c, b: total(c, *b), st.sampled_from(COLUMNS), bounds),
    st.builds(lambda c, b: mean(c, *b), st.sampled_from(COLUMNS), bounds),
    st.builds(histogram, st.sampled_from(COLUMNS), edges),
)
specs = st.lists(statistic, min_size=1, max_size=6, unique_by=lambda s: repr(s))
cell = st.one_of(
    st.sampled_from([-50.0, -1.0, 0.0, 0.5, 1.0, 2.0, 18.0, 30.0, 50.0, 100.0, 1e6]),
    st.floats(-1e7, 1e7, allow_nan=False),
)
datasets = st.lists(st.lists(cell, min_size=3, max_size=3), min_size=0, max_size=25)


def naive(plan, rows):
    """The answer computed record by record, exactly (Fractions), as a check."""
    out = [0.0] * len(plan.labels)
    for stat, where in zip(plan.statistics, plan.indices):
        if stat["kind"] in ("count", "mean"):
            out[where[-1]] = float(len(rows))
        if stat["kind"] in ("sum", "mean"):
            column = COLUMNS.index(stat["column"])
            exact = Fraction(0)
            for row in rows:
                exact += Fraction(min(max(row[column], stat["lower"]), stat["upper"]))
            out[where[0]] = float(exact)
        if stat["kind"] == "histogram":
            column = COLUMNS.index(stat["column"])
            e = stat["bins"]
            for row in rows:
                x = row[column]
                for k in range(len(e) - 1):
                    last = k == len(e) - 2
                    if e[k] <= x < e[k + 1] or (last and x == e[k + 1]):
                        out[where[k]] += 1
    return out


@given(spec=specs, rows=datasets)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_compute_equals_a_naive_loop(spec, rows):
    plan = build_plan(spec, COLUMNS)
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))
    assert compute_on(plan, COLUMNS, values).tolist() == pytest.approx(naive(plan, rows), rel=1e-13, abs=1e-6)


def test_compute_on_a_small_example():
    plan = build_plan([count(), total(lower=0, upper=100), mean(column="income", lower=-10, upper=10)], COLUMNS)
    values = np.array([[150.0, 20.0, 0.0], [-3.0, -20.0, 0.0], [40.5, 1.5, 0.0]])
    assert plan.labels == ("count", "sum(age)", "sum(income)")
    assert compute_on(plan, COLUMNS, values).tolist() == [3.0, 140.5, 1.5]


def test_histogram_closes_the_last_bin_and_drops_values_outside():
    plan = build_plan([histogram(bins=[0, 18, 30])], ["age"])
    ages = [-1.0, 0.0, 17.999, 18.0, 29.9, 30.0, 30.0001, 100.0]
    u = compute_on(plan, ["age"], np.array(ages)[:, None])
    assert u.tolist() == [2.0, 3.0]


def test_compute_reads_columns_by_name_in_any_order():
    plan = build_plan([total("score", 0, 10), total("age", 0, 100)], COLUMNS)
    values = np.array([[5.0, 200.0], [1.0, 30.0]])  # columns: score, age
    assert compute_on(plan, ["score", "age"], values).tolist() == [6.0, 130.0]


def test_compute_of_an_empty_dataset():
    plan = build_plan([count(), mean(), histogram()], COLUMNS)
    assert compute_on(plan, COLUMNS, np.empty((0, 3))).tolist() == [0.0, 0.0, 0, 0, 0, 0]


def test_compute_rejects_bad_data():
    plan = build_plan([count(), total()], COLUMNS, neighbours=Neighbours(max_rows=3))
    good = np.zeros((3, 3))
    assert compute_on(plan, COLUMNS, good).tolist() == [3.0, 0.0]
    with pytest.raises(ValueError, match="shape"):
        compute_on(plan, COLUMNS, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="shape"):
        compute_on(plan, COLUMNS, np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        compute_on(plan, COLUMNS, np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(ValueError, match="no column named 'age'"):
        compute_on(plan, ["x", "y", "z"], good)
    with pytest.raises(ValueError, match="outside its declared range"):
        compute_on(plan, COLUMNS, np.zeros((4, 3)))


# --- invalid specs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, message",
    [
        ("count", 'the statistics must be a list of objects such as {"kind": "count"}, got str'),
        ({"kind": "count"}, 'the statistics must be a list of objects such as {"kind": "count"}, got dict'),
        ([], "the list of statistics is empty"),
        ([histogram(bins=[i, i + 1]) for i in range(21)], "at most 20 statistics are allowed, got 21"),
        ([count(), "sum"], "statistic 2: expected an object such as {\"kind\": \"count\"}, got 'sum'"),
        ([{"column": "age"}], "statistic 1: unknown kind None (expected count, sum, mean, histogram, table, quantile, centroid or synthetic)"),
        ([{"kind": "median", "column": "age"}], "statistic 1: unknown kind 'median' (expected count, sum, mean, histogram, table, quantile, centroid or synthetic)"),
        ([{"kind": ["sum"]}], "statistic 1: unknown kind ['sum'] (expected count, sum, mean, histogram, table, quantile, centroid or synthetic)"),
        ([count(), {"kind": "count", "column": "age"}], "statistic 2 (count): unknown field 'column'"),
        ([{**total(), "colum": "age"}], "statistic 1 (sum): unknown field 'colum'"),
        ([{"kind": "sum", "lower": 0, "upper": 1}], "statistic 1 (sum): missing field 'column'"),
        ([{"kind": "mean", "column": "age", "upper": 1}], "statistic 1 (mean): missing field 'lower'"),
        ([{"kind": "histogram", "column": "age"}], "statistic 1 (histogram): missing field 'bins'"),
        ([count(), total(column="agee")], "statistic 2 (sum): no column named 'agee'"),
        ([total(column=3)], "statistic 1 (sum): no column named 3"),
        ([total(lower="0")], "statistic 1 (sum): lower must be a number, got '0'"),
        ([total(upper=True)], "statistic 1 (sum): upper must be a number, got True"),
        ([total(upper=None)], "statistic 1 (sum): upper must be a number, got None"),
        ([mean(lower=float("nan"))], "statistic 1 (mean): lower must be a finite number, got nan"),
        ([mean(upper=float("inf"))], "statistic 1 (mean): upper must be a finite number, got inf"),
        ([mean(upper=10**400)], f"statistic 1 (mean): upper must be a finite number, got {10**400!r}"),
        ([total(upper=2e15)], "statistic 1 (sum): upper must lie between -1e15 and 1e15, got 2000000000000000.0"),
        ([count(), total(lower=100, upper=100)], "statistic 2 (sum): lower must be below upper"),
        ([mean(lower=5, upper=1)], "statistic 1 (mean): lower must be below upper"),
        ([{"kind": "histogram", "column": "age", "bins": "0,18"}], "statistic 1 (histogram): bins must be a list of bin edges, got '0,18'"),
        ([histogram(bins=[0])], "statistic 1 (histogram): bins must list between 2 and 51 edges (1 to 50 bins), got 1"),
        ([histogram(bins=range(52))], "statistic 1 (histogram): bins must list between 2 and 51 edges (1 to 50 bins), got 52"),
        ([histogram(bins=[0, "x"])], "statistic 1 (histogram): bin edge 2 must be a number, got 'x'"),
        ([histogram(bins=[0, float("inf")])], "statistic 1 (histogram): bin edge 2 must be a finite number, got inf"),
        ([histogram(bins=[0, 18, 18, 30])], "statistic 1 (histogram): bin edges must be strictly increasing (edge 3 is not above edge 2)"),
        ([histogram(bins=[0, 30, 18])], "statistic 1 (histogram): bin edges must be strictly increasing (edge 3 is not above edge 2)"),
        ([count(), count()], "statistic 2 (count): same as statistic 1"),
        ([total(), mean(), total(lower=0.0, upper=100.0)], "statistic 3 (sum): same as statistic 1"),
        ([histogram(), histogram(bins=[float(x) for x in AGES])], "statistic 2 (histogram): same as statistic 1"),
    ],
)
def test_invalid_specs_are_rejected_with_the_statistic_named(spec, message):
    with pytest.raises(SpecError) as caught:
        build_plan(spec, COLUMNS)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_limits_are_accepted_up_to_the_maximum():
    assert MAX_STATISTICS == 20 and MAX_BINS == 50
    plan = build_plan([histogram(bins=[i, i + 1]) for i in range(20)], COLUMNS)
    assert plan.sensitivity == 20.0
    assert len(build_plan([histogram(bins=range(51))], COLUMNS).labels) == 50
    assert build_plan([total(lower=-1e15, upper=1e15)], COLUMNS).sensitivity == 1e15


@pytest.mark.parametrize("max_rows", [0, -1, 2.5, True, "100"])
def test_max_rows_must_be_a_positive_integer(max_rows):
    with pytest.raises(ValueError, match="max_rows"):
        Neighbours(max_rows=max_rows)


# --- present -------------------------------------------------------------------------------


def test_present_reads_each_requested_statistic_in_spec_order():
    plan = build_plan([histogram(bins=[0, 18, 30]), total(), count(), mean()], COLUMNS)
    assert plan.labels == ("count", "sum(age)", "age in [0, 18)", "age in [18, 30]")
    scale = 2.0
    released = np.array([100.0, 4000.0, 30.0, 25.5])
    readings = present(plan, released, scale)
    b = laplace_error_bound(scale, 0.95)
    t = laplace_error_bound(scale, 0.975)
    assert readings == [
        {"label": "age in [0, 18)", "kind": "histogram", "value": 30.0, "noise_scale": 2.0, "error_bound": b},
        {"label": "age in [18, 30]", "kind": "histogram", "value": 25.5, "noise_scale": 2.0, "error_bound": b},
        {"label": "sum(age)", "kind": "sum", "value": 4000.0, "noise_scale": 2.0, "error_bound": b},
        {"label": "count", "kind": "count", "value": 100.0, "noise_scale": 2.0, "error_bound": b},
        {
            "label": "mean(age)",
            "kind": "mean",
            "value": 40.0,
            "noise_scale": 2.0 / 100.0,  # the sum's scale over the released count it divides by
            "error_bound": pytest.approx(t * 41 / (100 - t)),
        },
    ]
    assert all(type(r["value"]) is float and type(r["error_bound"]) is float for r in readings)


def test_present_uses_the_confidence_and_labels_means_like_their_sums():
    plan = build_plan([mean(lower=0, upper=100), mean(lower=10, upper=20)], COLUMNS)
    assert plan.labels == ("count", "sum(age; 0..100)", "sum(age; 10..20)")
    readings = present(plan, np.array([1000.0, 30_000.0, 15_000.0]), 1.0, confidence=0.9)
    t = laplace_error_bound(1.0, 0.95)
    assert [r["label"] for r in readings] == ["mean(age; 0..100)", "mean(age; 10..20)"]
    assert readings[0]["value"] == 30.0
    assert readings[0]["error_bound"] == pytest.approx(t * 31 / (1000 - t))
    assert readings[1]["value"] == 15.0


def test_present_rejects_bad_input():
    plan = build_plan([count(), total()], COLUMNS)
    with pytest.raises(ValueError, match="2 values"):
        present(plan, np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="finite"):
        present(plan, np.array([1.0, np.inf]), 1.0)
    with pytest.raises(ValueError, match="scale"):
        present(plan, np.array([1.0, 2.0]), 0.0)
    with pytest.raises(ValueError, match="confidence"):
        present(plan, np.array([1.0, 2.0]), 1.0, confidence=1.0)


def test_mean_bound_formula_and_clamping():
    scale = 1.0
    t = laplace_error_bound(scale, 0.975)
    assert t == pytest.approx(math.log(40) + 2.0**-6)
    value, bound = mean_estimate(5000.0, 100.0, 0.0, 100.0, scale)
    assert value == 50.0 and bound == pytest.approx(t * 51 / (100 - t))
    # a raw mean above the range is clamped; the bound uses the raw |S/C|, capped at the width
    value, bound = mean_estimate(20_000.0, 100.0, 0.0, 100.0, scale)
    assert value == 100.0 and bound == pytest.approx(min(t * 201 / (100 - t), 100.0))
    value, bound = mean_estimate(-500.0, 1000.0, -10.0, 10.0, scale)
    assert value == -0.5 and bound == pytest.approx(t * 1.5 / (1000 - t))
    value, bound = mean_estimate(1e9, 1000.0, 0.0, 100.0, scale)
    assert value == 100.0 and bound == 100.0


@pytest.mark.parametrize(
    "released_sum, released_count, scale, value, bound",
    [
        (30.0, 3.0, 1.0, 10.0, 100.0),  # count <= t (about 3.7): the bound is the width
        (300.0, 3.0, 1.0, 100.0, 100.0),  # ... and the value is still clamped
        (40.0, 0.5, 1.0, 50.0, 100.0),  # count <= 0.5: the midpoint
        (40.0, 0.3, 0.001, 50.0, 100.0),  # ... even when t is tiny
        (40.0, 0.0, 1.0, 50.0, 100.0),
        (-40.0, -2.0, 1.0, 50.0, 100.0),  # a negative count (not clamped by the caller)
        (5.0, 0.51, 0.001, 9.803921568627452, None),  # count just above 0.5 and above t: the formula
    ],
)
def test_mean_with_a_tiny_zero_or_negative_count(released_sum, released_count, scale, value, bound):
    v, b = mean_estimate(released_sum, released_count, 0.0, 100.0, scale)
    assert v == pytest.approx(value)
    if bound is None:
        t = laplace_error_bound(scale, 0.975)
        bound = t * (1 + value) / (released_count - t)
    assert b == pytest.approx(bound)
    assert 0.0 <= b <= 100.0


def test_mean_midpoint_of_a_negative_range():
    value, bound = mean_estimate(7.0, 0.0, -50.0, -10.0, 1.0)
    assert (value, bound) == (-30.0, 40.0)


def test_mean_estimate_works_on_arrays_like_present():
    plan = build_plan([mean()], COLUMNS)
    sums = np.array([5000.0, 10.0, 9e9, 0.0])
    counts = np.array([100.0, 0.0, 3.0, 50.0])
    values, bounds = mean_estimate(sums, counts, 0.0, 100.0, 2.0)
    for s, c, v, b in zip(sums, counts, values, bounds):
        [reading] = present(plan, np.array([c, s]), 2.0)
        assert (reading["value"], reading["error_bound"]) == (v, b)
    assert np.all(bounds <= 100.0)


@pytest.mark.parametrize("eps", [0.5, 2.0, 20.0])
@pytest.mark.parametrize("population", ["uniform", "at the top"])
def test_mean_bound_covers_95_percent_of_releases(eps, population, rng, report):
    plan = build_plan([mean()], COLUMNS, neighbours=Neighbours(max_rows=100_000))
    ages = rng.uniform(0, 100, 1000) if population == "uniform" else np.full(1000, 100.0)
    values = np.column_stack([ages, np.zeros(1000), np.zeros(1000)])
    u = compute_on(plan, COLUMNS, values)
    truth = u[1] / u[0]
    scale = plan.sensitivity / eps
    n = 200_000
    noisy = u + rng.laplace(0.0, scale, (n, 2))
    released = snap(noisy, scale, plan.lower, plan.upper)
    value, bound = mean_estimate(released[:, 1], released[:, 0], 0.0, 100.0, scale)
    coverage = np.mean(np.abs(value - truth) <= bound)
    report(f"eps={eps} {population}: coverage {coverage:.4f}, median bound {np.median(bound):.3g}")
    assert coverage >= 0.95
    assert np.all(bound <= 100.0)
    if eps >= 2.0:  # enough privacy budget for a bound well inside the width
        assert np.median(bound) < 30.0


# --- weights: the budget split over the groups -----------------------------------------------


def test_weights_split_the_budget_equally_over_the_groups():
    plan = build_plan([count(), total(lower=0, upper=100), histogram(bins=[0, 18, 30, 60])], COLUMNS)
    # three groups (count, sum, histogram): weight = 3 * group sensitivity
    assert plan.weights.tolist() == [3.0, 300.0, 3.0, 3.0, 3.0]
    assert not plan.weights.flags.writeable


@settings(max_examples=100, deadline=None)
@given(
    data=arrays(np.float64, st.tuples(st.integers(2, 30), st.just(len(COLUMNS))), elements=st.floats(-200, 200)),
    drop=st.integers(0, 1000),
)
def test_the_weighted_release_is_eps_dp_for_any_removed_record(data, drop):
    """Laplace noise of scale weights[i]/eps on coordinate i is eps-DP exactly
    when sum_i |u_i(D) - u_i(D')| / weights[i] <= 1 for neighbours D, D'."""
    spec = [count(), mean(lower=-50, upper=150), total(lower=0, upper=10), histogram(bins=[-100, 0, 50, 200])]
    plan = build_plan(spec, COLUMNS)
    neighbour = np.delete(data, drop % data.shape[0], axis=0)
    change = np.abs(compute_on(plan, COLUMNS, data) - compute_on(plan, COLUMNS, neighbour))
    assert np.sum(change / plan.weights) <= 1.0 + 1e-12


def test_present_takes_one_noise_scale_per_coordinate():
    plan = build_plan([count(), mean(lower=0, upper=100)], COLUMNS)
    scales = plan.weights / 0.5  # [4, 400]
    readings = present(plan, np.array([1000.0, 40_000.0]), scales)
    # the mean's noise scale is its sum's divided by the released count it divides by
    assert [r["noise_scale"] for r in readings] == [4.0, 400.0 / 1000.0]
    assert readings[0]["error_bound"] == laplace_error_bound(4.0)
    t_s, t_c = laplace_error_bound(400.0, 0.975), laplace_error_bound(4.0, 0.975)
    assert readings[1]["error_bound"] == pytest.approx((t_s + 40 * t_c) / (1000 - t_c))
