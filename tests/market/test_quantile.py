"""The quantile kind (market/catalog/spec/kinds/quantile.py): its estimator, its plan, its stated
accuracy (a seeded statistical check that also catches a wrong bin offset) and its API face."""

from fractions import Fraction

import numpy as np
import pytest

from market.catalog.compute import Table, compute
from market.catalog.spec import KINDS, LATTICE, PUBLIC_SIZE, Neighbours, SpecError, build_plan, expected_kinds, present
from market.catalog.spec.columns import Column
from market.catalog.spec.kinds import quantile as qk
from releases.engine import lattice

EDGES = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0]
COLUMNS = [Column("age", "decimal"), Column("sex", "categorical")]


def _true_bin(values, edges, q):
    """The bin (0-based) of the true q-quantile of the values clamped into the edges: the first bin
    whose count of values below its upper edge reaches q n."""
    clamped = np.clip(values, edges[0], edges[-1])
    counts = np.histogram(clamped, bins=edges)[0]
    return int(np.searchsorted(np.cumsum(counts), q * len(values), side="left")), counts


# --------------------------------------------------------------------------
# the estimator


def test_the_estimate_is_exact_on_noise_free_counts():
    # 10, 20, 40, 30 records: the median (rank 50) is half way into [30, 50), the first quartile 3/4 into [18, 30)
    edges, counts = [0, 18, 30, 50, 100], [10, 20, 40, 30]
    assert qk.estimate(counts, edges, 0.5) == 40.0
    assert qk.estimate(counts, edges, 0.25) == 27.0
    assert qk.estimate(counts, edges, 0.1) == 18.0  # exactly at the end of the first bin's records
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = rng.uniform(-5, 105, rng.integers(1, 400))
        for q in (0.1, 0.25, 0.5, 0.75, 0.9):
            j, true_counts = _true_bin(values, EDGES, q)
            found = qk.estimate(true_counts, EDGES, q)
            assert EDGES[j] <= found <= EDGES[j + 1]
            assert qk.interval(true_counts, EDGES, q, 0) == (EDGES[j], EDGES[j + 1])


def test_the_estimates_are_monotone_in_q_and_within_the_bounds_even_with_negative_counts():
    rng = np.random.default_rng(5)
    qs = np.linspace(0.01, 0.99, 40)
    for _ in range(200):
        counts = rng.integers(-20, 60, len(EDGES) - 1)
        found = [qk.estimate(counts, EDGES, q) for q in qs]
        if all(c <= 0 for c in counts):
            assert found == [None] * len(qs)
            continue
        assert all(EDGES[0] <= f <= EDGES[-1] for f in found)
        assert all(a <= b for a, b in zip(found, found[1:]))


def test_empty_bins_are_skipped_and_nothing_counted_says_so():
    counts = [0, 0, 5, 0, 0, 5, 0, 0, 0, 0]
    assert 20 <= qk.estimate(counts, EDGES, 0.3) <= 30  # in the first bin with records
    assert 50 <= qk.estimate(counts, EDGES, 0.7) <= 60  # never in the empty bins between
    assert qk.estimate([0] * 10, EDGES, 0.5) is None
    assert qk.interval([0] * 10, EDGES, 0.5, 3) == (0.0, 100.0)
    assert qk.estimate([-3, 4, -1], [0, 1, 2, 3], 0.5) == 1.5  # negative counts clipped at 0


# --------------------------------------------------------------------------
# the plan: validation, sensitivity, coordinates


def test_the_kind_is_registered_offered_and_named_in_errors():
    assert "quantile" in KINDS and "quantile" in expected_kinds()
    with pytest.raises(SpecError, match=r"unknown kind 'median' \(expected count, sum, mean, histogram, table, quantile, centroid or synthetic\)"):
        build_plan([{"kind": "median", "column": "age"}], COLUMNS)


@pytest.mark.parametrize("item, message", [
    ({"quantiles": [0.5]}, "missing field 'bins'"),
    ({"bins": [0, 10], "quantiles": [0]}, "strictly between 0 and 1"),
    ({"bins": [0, 10], "quantiles": [1.5]}, "strictly between 0 and 1"),
    ({"bins": [0, 10], "quantiles": [0.5, 0.5]}, "listed twice"),
    ({"bins": [0, 10], "quantiles": []}, "1 to 9 numbers"),
    ({"bins": [0, 10], "quantiles": "0.5"}, "1 to 9 numbers"),
    ({"bins": [10, 0], "quantiles": [0.5]}, "strictly increasing"),
    ({"bins": [0], "quantiles": [0.5]}, "between 2 and"),
    ({"bins": [0, 10], "quantiles": [0.5], "column": "sex"}, "categorical"),
])
def test_bad_quantile_specs_are_refused_with_the_reason(item, message):
    stat = {"kind": "quantile", "column": "age", **item}
    with pytest.raises(SpecError, match=message):
        build_plan([stat], COLUMNS)


def test_the_bins_are_one_group_with_the_histograms_sensitivity_under_each_relation():
    stat = {"kind": "quantile", "column": "age", "bins": [0, 50, 100], "quantiles": [0.75, 0.25]}
    private = build_plan([stat], COLUMNS, mechanism=LATTICE)
    assert private.statistics[0]["quantiles"] == [0.25, 0.75]
    assert private.labels == ("quantile bin of age: [0, 50)", "quantile bin of age: [50, 100]")
    assert private.sensitivity == 1 and private.lattice.unit_cases == (((0, 1),),)
    public = build_plan([stat], COLUMNS, mechanism=LATTICE, neighbours=Neighbours(PUBLIC_SIZE, size=100))
    assert public.sensitivity == 2 and public.lattice.unit_cases == (((0, 1), (1, 1)),)
    assert public.loss_shares == (Fraction(1, 2), Fraction(1, 2))


def test_values_beyond_the_edges_count_in_the_end_bins_and_missing_ones_nowhere():
    stat = {"kind": "quantile", "column": "age", "bins": [0, 10, 20, 30], "quantiles": [0.5]}
    plan = build_plan([stat], [Column("age", "decimal", missing="exclude")])
    table = Table.from_columns({"age": [-5.0, 0.0, 9.9, 10.0, 25.0, 30.0, 99.0, None]})
    assert list(compute(plan, table)) == [3, 1, 3]


def test_the_release_shows_the_counts_then_the_estimates_with_their_intervals():
    stat = {"kind": "quantile", "column": "age", "bins": [0, 18, 30, 50, 100], "quantiles": [0.25, 0.5]}
    plan = build_plan([{"kind": "count"}, stat], COLUMNS, mechanism=LATTICE)
    readings = present(plan, np.array([100, 10, 20, 40, 30]), plan.weights, level=1)
    assert [r["label"] for r in readings] == [
        "count", "quantile bin of age: [0, 18)", "quantile bin of age: [18, 30)", "quantile bin of age: [30, 50)",
        "quantile bin of age: [50, 100]", "quantile(age, 0.25)", "median(age)"]
    assert [r["value"] for r in readings[1:5]] == [10, 20, 40, 30]  # the released values: whole counts
    median = readings[-1]
    assert median["value"] == 40.0 and median["kind"] == "quantile"
    t = lattice.error_bound(Fraction(1, 2), Fraction(str(1 - 0.05 / 4)))  # level eps / (K s) = 1/2, 4 bins
    assert f"rank error at most {1.5 * 4 * t:g} records" in median["note"]
    low, high = qk.interval([10, 20, 40, 30], [0, 18, 30, 50, 100], 0.5, t)
    assert median["error_bound"] == max(40 - low, high - 40) and f"interval {low:g} to {high:g}" in median["note"]


# --------------------------------------------------------------------------
# the stated accuracy holds, and a wrong bin offset is caught


def _dlap(rng, level: float, size: int) -> np.ndarray:
    """Discrete Laplace noise, P(v) proportional to exp(-level |v|): a difference of two geometrics."""
    p = 1.0 - np.exp(-level)
    return (rng.geometric(p, size) - 1) - (rng.geometric(p, size) - 1)


def _off_by_one(counts, edges, q):
    """A deliberate mutation: the bin after the one where the CDF crosses q n."""
    cdf = np.cumsum(np.maximum(counts, 0))
    j = min(int(np.searchsorted(cdf, q * cdf[-1])) + 1, len(cdf) - 1)
    return float(edges[j] + (edges[j + 1] - edges[j]) / 2)


def _coverage(estimator, trials=400, seed=11):
    """The share of seeded releases whose estimates all lie in a bin holding a record of true rank
    within the stated rank error of q n, and whose true quantile lies in the shown interval."""
    rng = np.random.default_rng(seed)
    values = rng.normal(50, 18, 2000)
    stat = {"kind": "quantile", "column": "age", "bins": EDGES, "quantiles": [0.25, 0.5, 0.75]}
    plan = build_plan([stat], COLUMNS, mechanism=LATTICE)
    eps = 1
    k = len(EDGES) - 1
    curve = KINDS["quantile"].curve(plan.statistics[0], plan.indices[0], plan)
    stated = curve["bound"](eps)  # before purchase: the worst quantile's rank error, in records
    bin_bound = plan.bound(0, eps, 1 - 0.05 / k)
    level = 1.0 / plan.lattice.unit_weights[0]
    clamped = np.clip(values, EDGES[0], EDGES[-1])
    true = np.histogram(clamped, bins=EDGES)[0]
    held = 0
    for _ in range(trials):
        noisy = np.clip(true + _dlap(rng, level, k), 0, len(values))
        ok = True
        for q in stat["quantiles"]:
            found = estimator(noisy, EDGES, q)
            j = min(int(np.searchsorted(EDGES, found, side="right")) - 1, k - 1)
            below, upto = int((clamped < EDGES[j]).sum()), int((clamped < EDGES[j + 1]).sum()) if j < k - 1 else len(values)
            # the bin read holds ranks below+1 .. upto: one of them within the stated error of q n
            ok &= upto >= q * len(values) - stated and below <= q * len(values) + stated
            low, high = qk.interval(noisy, EDGES, q, bin_bound)
            truth = np.quantile(clamped, q, method="inverted_cdf")
            ok &= low <= truth <= high
        held += ok
    return held / trials, stated


@pytest.mark.statistical
def test_the_stated_accuracy_holds_and_a_wrong_bin_offset_is_caught():
    share, stated = _coverage(qk.estimate)
    assert share >= 0.95, (share, stated)
    assert stated < 200  # the bins hold about 200 to 400 records each: an error of a bin would show
    mutated, _ = _coverage(_off_by_one)
    assert mutated < 0.5, mutated


# --------------------------------------------------------------------------
# the API: a listing offers it, a release shows the estimates


@pytest.mark.django_db
def test_a_listing_offers_quantiles_and_its_release_shows_them(
    api, make_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    stat = {"kind": "quantile", "column": "age", "bins": [0, 30, 50, 70, 100], "quantiles": [0.5, 0.25, 0.75]}
    listing = make_listing(statistics=[{"kind": "count"}, stat])
    detail = api(buyer).get(f"/api/v1/listings/{listing.pk}/").json()
    assert detail["statistics"][1] == {**stat, "bins": [0.0, 30.0, 50.0, 70.0, 100.0], "quantiles": [0.25, 0.5, 0.75]}
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        made = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json")
    body = api(buyer).get(f"/api/v1/purchases/{made.json()['id']}/").json()
    values = {v["label"]: v for v in body["release"]["values"]}
    assert {"quantile(age, 0.25)", "median(age)", "quantile(age, 0.75)"} <= set(values)
    ages = [values[name]["value"] for name in ("quantile(age, 0.25)", "median(age)", "quantile(age, 0.75)")]
    assert ages == sorted(ages) and all(18 <= a <= 90 for a in ages)  # the data's ages run 18 to 89
    assert "interval" in values["median(age)"]["note"]


@pytest.mark.django_db
def test_a_bad_quantile_is_refused_by_the_api_with_the_reason(api, owner, make_listing):
    dataset = make_listing().dataset
    answer = api(owner).post("/api/v1/listings/", {
        "dataset": dataset.public_id, "title": "q", "ceiling": "2", "price_per_epsilon": "1",
        "statistics": [{"kind": "quantile", "column": "age", "bins": [0, 100], "quantiles": [2]}]}, format="json")
    assert answer.status_code == 400, answer.content
    # the input schema refuses it, in words naming the statistic, the value and the bound
    assert "statistic 1 (quantile): quantiles[1] must be below 1, got 2" in answer.content.decode()
