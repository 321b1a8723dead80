"""The owner's what-ifs on a dataset (``market.catalog.whatif``): composition of its released listings
under three accountings, and a sampled sensitivity of a query on its records. Both read only."""

import math
from decimal import ROUND_FLOOR, Decimal

import numpy as np
import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from market.catalog.models import Listing
from market.catalog.services import listing_create
from market.catalog.whatif import dataset_composition, dataset_sampled_sensitivity
from market.core.errors import InvalidInput, NotFound
from releases.engine.risk import advanced_composition, composition_at_risk_levels, gamma_at_risk
from releases.models import NoisePath
from tests.datasets import ready_dataset

from tests.fixtures.market import make_csv, old_float_listing

pytestmark = pytest.mark.django_db


def released(listing, level):
    NoisePath.objects.filter(listing=listing).update(released_max=Decimal(level))


def float_made(dataset, title, labels, weights):
    """A listing on the float Laplace path (as made before the exact one), nothing released yet."""
    listing = Listing.objects.create(
        dataset=dataset, title=title, statistics=[{"kind": "count"}], mechanism="laplace",
        plan=Listing.plan_document(labels=labels, sensitivity=1.0, weights=weights, lower=[0.0] * len(labels),
                                   upper=[500.0] * len(labels)), answer=b"",
        ceiling=Decimal("5"), price_curve={"kind": "linear", "c": "1.00"}, price_per_epsilon=Decimal("1.00"))
    listing.set_true_answer(np.full(len(labels), 100.0))
    listing.save(update_fields=["answer"])
    listing.kinds_record(["count"])
    NoisePath.objects.create(listing=listing, dim=len(labels), mechanism="laplace")
    return listing


@pytest.fixture
def composed(owner):
    """A scalar float listing at 0.5, a float listing whose values have different scales at 1, a lattice
    listing at 0.25, a vector listing at 2 and a listing not yet released, on one dataset."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="100", relation="public_size")
    count = float_made(dataset, "Count (float)", ["count"], [1.0])
    scales = float_made(dataset, "Two scales (float)", ["a", "b"], [2.0, 4.0])
    lattice = listing_create(owner=owner, dataset_id=dataset.public_id, title="Lattice", ceiling="5",
                             price_per_epsilon="1", statistics=[{"kind": "histogram", "column": "age", "bins": [0, 50, 100]}])
    vector = old_float_listing(dataset, [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 40000],
                                          "radius": 100}], title="Vector", price="1.00")  # an old one
    listing_create(owner=owner, dataset_id=dataset.public_id, title="Unreleased", ceiling="5", price_per_epsilon="1",
                   statistics=[{"kind": "histogram", "column": "age", "bins": [0, 50, 100]}])
    released(count, "0.5")
    released(scales, "1")
    released(lattice, "0.25")
    released(vector, "2")
    return {"dataset": dataset, "count": count, "float": scales, "lattice": lattice, "vector": vector}


def test_composition_figures(owner, composed):
    figures = dataset_composition(user=owner, dataset_id=composed["dataset"].public_id, delta="1e-5", eps="0.2")
    figures["dataset"].refresh_from_db()
    assert figures["count"] == 4  # the unreleased listing does not count
    assert figures["basic"] == Decimal("3.75")
    levels = [0.5, 1.0, 0.25, 2.0]
    assert figures["advanced"] == pytest.approx(advanced_composition(levels, 1e-5), rel=1e-14)
    rows = {row["title"]: row for row in figures["listings"]}
    # only the scalar float listing has the paper's figure; the others are credited nothing, and say why
    gamma = gamma_at_risk(0.2, 0.5, 1)
    assert rows["Count (float)"]["risk"] == pytest.approx(gamma) and rows["Count (float)"]["excluded"] is None
    assert "different noise scales" in rows["Two scales (float)"]["excluded"]
    assert "integer noise" in rows["Lattice"]["excluded"] and "whole vector" in rows["Vector"]["excluded"]
    assert figures["credited"] == 1
    expected = composition_at_risk_levels([0.5, 1.0, 0.25, 2.0], [0.2] * 4, [gamma, 0, 0, 0], 1e-5)
    assert figures["at_risk"] == pytest.approx(expected, rel=1e-14)
    assert figures["at_risk"] < figures["advanced"]
    # the float listings' delta was never established: none is stated (it was n * 1e-11 before)
    assert figures["float_listings"] == 3 and figures["float_delta"] is None
    # the enforced figure is the dataset's spent, unchanged
    assert figures["basic"] == figures["dataset"].spent


def test_composition_with_nothing_released(owner):
    dataset = ready_dataset(owner=owner, name="empty", data=make_csv(50), total_budget="10")
    figures = dataset_composition(user=owner, dataset_id=dataset.public_id)
    assert figures["count"] == 0 and figures["basic"] == 0 and figures["advanced"] is None
    assert figures["delta"] == 1e-6


@pytest.mark.parametrize("delta, eps", [("0", None), ("1", None), ("-1e-6", None), ("nan", None), ("x", None),
                                        ("inf", None), (None, "0"), (None, "-1"), (None, "inf"), (None, "abc")])
def test_composition_bad_input(owner, composed, delta, eps):
    with pytest.raises(InvalidInput) as caught:
        dataset_composition(user=owner, dataset_id=composed["dataset"].public_id, delta=delta, eps=eps)
    assert set(caught.value.fields) == ({"delta"} if delta is not None else {"eps"})


def test_composition_of_anothers_dataset_is_not_found(buyer, users, composed):
    with pytest.raises(NotFound):
        dataset_composition(user=buyer, dataset_id=composed["dataset"].public_id)


def _counts():
    return {model._meta.label: model.objects.count() for model in apps.get_models() if model._meta.managed}


@pytest.fixture
def regression(owner):
    rng = np.random.default_rng(3)
    x1, x2 = rng.normal(size=400), rng.normal(size=400)
    y = 1 + 2 * x1 - x2 + rng.normal(scale=0.1, size=400)
    lines = ["y,x1,x2"] + [f"{a:.6f},{b:.6f},{'' if i % 10 == 0 else f'{c:.6f}'}" for i, (a, b, c) in enumerate(zip(y, x1, x2))]
    return ready_dataset(owner=owner, name="regression", data=("\n".join(lines) + "\n").encode(), total_budget="10")


def test_sampled_sensitivity_of_a_ridge_regression_writes_nothing(owner, regression):
    before = _counts()
    with CaptureQueriesContext(connection) as queries:
        result = dataset_sampled_sensitivity(user=owner, dataset_id=regression.public_id, kind="ridge", target="y",
                                             features=["x1", "x2"], lam="1", gamma2="0.9", pairs="200", subsample="300")
    writes = [q["sql"] for q in queries.captured_queries
              if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == [] and _counts() == before
    assert result["records"] == 400 and result["dropped"] == 40 and result["sampled_records"] == 300
    assert result["pairs"] == 200 and 0 < result["sampled_sensitivity"] <= result["largest_seen"]
    assert result["empirical_risk"] == pytest.approx(0.9 * (1 - 2 * math.exp(-2 * 0.1**2 * 200)))
    assert result["empirical_risk"] > 0.85 and result["share_covered"] == pytest.approx(0.8)
    assert "replaced record" in result["replace_pairs_note"]  # this dataset's size is private
    regression.refresh_from_db()
    assert "sampled" not in str(regression.__dict__)


def test_sampled_sensitivity_of_a_mean(owner, regression):
    """The mean of x1 over 300 records moves by |a - b| / 300 for a replaced record: small, positive."""
    result = dataset_sampled_sensitivity(user=owner, dataset_id=regression.public_id, kind="mean", column="x1",
                                         gamma2=0.5, pairs=100, subsample=300)
    assert 0 < result["sampled_sensitivity"] < 10 / 300 and result["dropped"] == 0


@pytest.mark.parametrize("inputs, fields", [
    ({"kind": "median"}, {"kind"}),
    ({"kind": "mean", "column": "nope"}, {"column"}),
    ({"kind": "ridge", "target": "y", "features": [], "lam": "1"}, {"features"}),
    ({"kind": "ridge", "target": "y", "features": ["y"], "lam": "1"}, {"features"}),
    ({"kind": "ridge", "target": "y", "features": ["x1", "x1"], "lam": "1"}, {"features"}),
    ({"kind": "ridge", "target": "y", "features": ["x1"], "lam": "0"}, {"lam"}),
    ({"kind": "ridge", "target": "y", "features": ["x1"]}, {"lam"}),
    ({"kind": "mean", "column": "x1", "gamma2": "0"}, {"gamma2"}),
    ({"kind": "mean", "column": "x1", "gamma2": "1.5"}, {"gamma2"}),
    ({"kind": "mean", "column": "x1", "pairs": "501"}, {"pairs"}),
    ({"kind": "mean", "column": "x1", "pairs": "2.5"}, {"pairs"}),
    ({"kind": "mean", "column": "x1", "subsample": "100000"}, {"subsample"}),
    ({"kind": "mean", "column": "x1", "subsample": "2"}, {"subsample"}),
])
def test_sampled_sensitivity_bad_input(owner, regression, inputs, fields):
    given = {"gamma2": "0.9", "pairs": "10", "subsample": "50", **inputs}
    with pytest.raises(InvalidInput) as caught:
        dataset_sampled_sensitivity(user=owner, dataset_id=regression.public_id, **given)
    assert set(caught.value.fields) == fields


# --------------------------------------------------------------------------
# the API


def test_composition_api(api, owner, composed):
    dataset = composed["dataset"]
    answer = api(owner).get(f"/api/v1/datasets/{dataset.public_id}/composition/", {"delta": "1e-5", "eps": "0.2"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    figures = dataset_composition(user=owner, dataset_id=dataset.public_id, delta="1e-5", eps="0.2")
    assert body["count"] == 4 and Decimal(body["basic"]) == Decimal("3.75")
    assert body["advanced"] == pytest.approx(figures["advanced"]) and body["at_risk"] == pytest.approx(figures["at_risk"])
    assert [row["excluded"] is None for row in body["listings"]] == [True, False, False, False]
    # the chance a listing is credited with is a decimal rounded down (never overstated): 6 places
    gamma = next(row["risk"] for row in figures["listings"] if row["risk"] is not None)
    shown = next(row["risk"] for row in body["listings"] if row["risk"] is not None)
    assert Decimal(str(shown)) == Decimal(repr(gamma)).quantize(Decimal("0.000001"), rounding=ROUND_FLOOR)
    assert "enforces" in body["what_if"]


@pytest.mark.parametrize("query", [{"delta": "0"}, {"delta": "2"}, {"eps": "0"}, {"eps": "x"}, {"delta": ""}])
def test_composition_api_bad_input(api, owner, composed, query):
    answer = api(owner).get(f"/api/v1/datasets/{composed['dataset'].public_id}/composition/", query)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["status"] == 400 and set(error["fields"]) == set(query)


def test_sampled_sensitivity_api(api, owner, regression):
    address = f"/api/v1/datasets/{regression.public_id}/sampled-sensitivity/"
    before = _counts()
    answer = api(owner).post(address, {"kind": "ridge", "target": "y", "features": ["x1"], "lam": 2, "gamma2": 0.9,
                                       "pairs": 50, "subsample": 100}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["dropped"] == 0 and answer.json()["sampled_records"] == 100  # x2 not read: nothing missing
    assert _counts() == before
    for body, field in (({"kind": "mean", "column": "x1", "gamma2": 0.9, "pairs": 50, "subsample": 100,
                          "sensitivity": 1}, "sensitivity"),  # strict: an unknown field is refused
                        ({"kind": "mean", "column": "x1", "gamma2": 0.9, "pairs": 501, "subsample": 100}, "pairs"),
                        ({"kind": "mean", "column": "nope", "gamma2": 0.9, "pairs": 5, "subsample": 100}, "column")):
        answer = api(owner).post(address, body, format="json")
        assert answer.status_code == 400 and field in answer.json()["error"]["fields"], answer.content
    assert api(owner).post(address, "kind=mean", content_type="text/plain").status_code == 415


def test_whatifs_of_anothers_dataset_are_not_found(api, buyer, regression):
    assert api(buyer).get(f"/api/v1/datasets/{regression.public_id}/composition/").status_code == 404
    answer = api(buyer).post(f"/api/v1/datasets/{regression.public_id}/sampled-sensitivity/", {}, format="json")
    assert answer.status_code == 404 and answer.json()["error"]["status"] == 404


def test_a_finer_level_above_a_listings_level_counts_that_listing_at_its_own_level(owner, composed):
    """eps 0.3 is above the lattice listing's 0.25: that listing is counted at 0.25 (it is 0.25-DP), not refused."""
    figures = dataset_composition(user=owner, dataset_id=composed["dataset"].public_id, eps="0.3")
    assert {row["title"]: row["finer"] for row in figures["listings"]}["Lattice"] == 0.25
    eps = [0.3, 0.3, 0.25, 0.3]
    expected = composition_at_risk_levels([0.5, 1.0, 0.25, 2.0], eps, [gamma_at_risk(0.3, 0.5), 0, 0, 0], 1e-6)
    assert figures["at_risk"] == pytest.approx(expected, rel=1e-14)
