"""Buying by accuracy: the cheapest level meeting a buyer's 95% error bounds, in the service and the API;
and every statistic's bound in a quote: a mean's from the listing's size release, or, on a listing made
before size releases (``legacy``), under a stated assumption of its cell's size."""

from decimal import Decimal

import pytest

from market.catalog import accuracy, sizes
from market.catalog.pricing import price_increment
from market.catalog.selectors import listing_plan
from market.core.errors import InvalidInput
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create, purchase_quote
from tests.datasets import as_before_size_releases
from tests.marketplace.test_api import assert_error

pytestmark = pytest.mark.django_db

STEP = Decimal("0.0001")


def bound_of(listing, name, eps, records=None):
    curves = accuracy.statistic_curves(listing_plan(listing), records=records, size=sizes.release_of(listing))
    return next(c for c in curves if c["name"] == name)["bound"](eps)


@pytest.fixture
def legacy(listing):
    """The listing as one made before size releases: no size release, its whole ceiling sold."""
    return as_before_size_releases(listing)


def test_a_means_quote_comes_from_the_size_release_and_assumes_nothing(listing, buyer):
    assert listing.size_release is not None and listing.size_level == Decimal("0.5")
    mean = purchase_quote(buyer=buyer, listing=listing, epsilon="1").statistics[1]
    assert mean["name"] == "mean(age)" and mean["assumes_records"] is None and mean["assumption"] == ""
    assert not mean["too_few"] and 0 < mean["error_bound"] < 100
    assert mean["error_bound"] == bound_of(listing, "mean(age)", Decimal(1))
    with pytest.raises(InvalidInput, match="above the highest level sold"):  # the size release is not for sale
        purchase_quote(buyer=buyer, listing=listing, epsilon="5")


def test_a_quote_lists_every_statistic_a_mean_under_its_assumption(legacy, buyer):
    listing = legacy
    quote = purchase_quote(buyer=buyer, listing=listing, epsilon="1")
    names = [s["name"] for s in quote.statistics]
    assert names == ["count", "mean(age)", "each bin of the age histogram"]
    mean = quote.statistics[1]
    assert mean["assumes_records"] == 1000 and mean["assumption"] == "if the cell holds 1,000 records"
    assert 0 < mean["error_bound"] < 100  # a real figure, below the width of [0, 100]
    assert all(s["assumes_records"] is None for s in quote.statistics if s["kind"] != "mean")
    # the count's figure is its coordinate's, as in the per-value list
    assert quote.statistics[0]["error_bound"] == pytest.approx(quote.accuracy[0]["error_bound"])
    # fewer records in the cell: a wider bound, and the quote says which number it assumed
    small = purchase_quote(buyer=buyer, listing=listing, epsilon="1", records=200).statistics[1]
    assert small["assumes_records"] == 200 and small["error_bound"] > mean["error_bound"]


@pytest.mark.parametrize("records", [0, -1, "most + 1", True, 2.5])
def test_an_impossible_assumption_is_refused(listing, buyer, records, settings):
    if records == "most + 1":  # more than the dataset may hold
        records = settings.UPLOAD_MAX_ROWS + 1
    with pytest.raises(InvalidInput) as refused:
        purchase_quote(buyer=buyer, listing=listing, epsilon="1", records=records)
    assert "records" in refused.value.fields


@pytest.mark.parametrize("target", [
    [("mean(age)", Decimal("2"))],  # 500 records: ±1 is out of reach below eps 4.5, and the quote now knows it
    [(None, Decimal("20"))],
    [("count", Decimal("12")), ("each bin of the age histogram", Decimal("30"))],
    [(None, Decimal("30")), ("mean(age)", Decimal("2.5"))],
])
def test_the_level_is_the_cheapest_that_meets_every_target(listing, buyer, target):
    quote = purchase_quote(buyer=buyer, listing=listing, target=target)
    eps = quote.epsilon
    assert eps == eps.quantize(STEP) and 0 < eps <= listing.ceiling
    names = [s["name"] for s in quote.statistics]

    def met(level):
        return all(bound_of(listing, n, level) <= float(t) for name, t in target for n in names if name in (None, n))

    assert met(eps) and not met(eps - STEP)  # one grid step lower misses a target
    assert quote.price == price_increment(listing, Decimal(0), eps)
    assert quote.target == [{"name": name, "error_bound": t} for name, t in target]
    # the other statistics' bounds at that level are in the quote too
    assert [s["error_bound"] for s in quote.statistics] == pytest.approx([bound_of(listing, n, eps) for n in names])


def test_a_buyer_holding_a_level_pays_from_it(listing, buyer, fund, eager_celery, seeded_noise):
    fund(buyer, 100)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="0.5")
    quote = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("2"))])
    assert quote.current_level == Decimal("0.5") and quote.epsilon > Decimal("0.5")
    assert quote.price == price_increment(listing, Decimal("0.5"), quote.epsilon)
    # the level held already meets a loose target: nothing to buy, and said so
    with pytest.raises(InvalidInput, match="already meets"):
        purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("90"))])


def test_the_assumption_moves_the_level(legacy, buyer):
    listing = legacy
    many = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("1"))], records=5000).epsilon
    default = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("1"))]).epsilon
    assert many < default


def test_an_unreachable_target_names_the_best_bound_at_the_cap(legacy, buyer):
    listing = legacy
    best = bound_of(listing, "mean(age)", listing.ceiling)
    with pytest.raises(InvalidInput) as refused:
        purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("0.01"))])
    message = refused.value.message
    assert "not reachable up to your cap of ε 5" in message
    assert f"±{best:,.4g} at best" in message and "if the cell holds 1,000 records" in message


@pytest.mark.parametrize("target,match", [
    ([("median(age)", Decimal("1"))], "no statistic named 'median\\(age\\)'"),
    ([("count", Decimal("1")), ("count", Decimal("2"))], "'count' is given two targets"),
    ([(None, Decimal("1")), (None, Decimal("2"))], "every statistic is given two targets"),
    ([("count", Decimal("0"))], "not a positive error bound"),
    ([], "at least one"),
])
def test_bad_targets_are_refused(listing, buyer, target, match):
    with pytest.raises(InvalidInput, match=match):
        purchase_quote(buyer=buyer, listing=listing, target=target)


def test_epsilon_and_target_are_exclusive(listing, buyer):
    with pytest.raises(InvalidInput, match="either epsilon or target"):
        purchase_quote(buyer=buyer, listing=listing, epsilon="1", target=[(None, Decimal("1"))])
    with pytest.raises(InvalidInput, match="either epsilon or target"):
        purchase_quote(buyer=buyer, listing=listing)


def test_an_owner_cannot_quote_by_accuracy(listing, owner):
    with pytest.raises(InvalidInput, match="you own this listing"):
        purchase_quote(buyer=owner, listing=listing, target=[(None, Decimal("50"))])


# --- the API


def test_api_quote_by_target(api, legacy, buyer):
    listing = legacy
    client = api(buyer)
    q = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"target": ["mean(age):1", "count:20"]})
    assert q.status_code == 200, q.content
    body = q.json()
    expected = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("1")), ("count", Decimal("20"))])
    assert body["epsilon"] == f"{expected.epsilon:.4f}" and body["price"] == f"{expected.price:.2f}"
    assert body["target"] == [{"name": "mean(age)", "error_bound": "1"}, {"name": "count", "error_bound": "20"}]
    assert [(s["name"], s["kind"], s["assumes_records"]) for s in body["statistics"]] == [
        ("count", "count", None), ("mean(age)", "mean", 1000), ("each bin of the age histogram", "histogram", None)]
    assert body["statistics"][1]["error_bound"] <= 1
    assert len(body["accuracy"]) == len(listing.labels)  # the per-value list stays
    every = client.get(f"/api/v1/listings/{listing.pk}/quote/?target=20").json()
    assert every["target"] == [{"name": None, "error_bound": "20"}]
    assert all(s["error_bound"] <= 20 for s in every["statistics"])
    # a name with spaces and a colon-free bound: everything before the last colon is the name
    hist = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"target": "each bin of the age histogram:30"})
    assert hist.status_code == 200 and hist.json()["statistics"][2]["error_bound"] <= 30
    # the assumption is the buyer's
    assumed = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"target": "mean(age):1", "records": "5000"}).json()
    assert assumed["statistics"][1]["assumes_records"] == 5000
    assert Decimal(assumed["epsilon"]) < Decimal(body["epsilon"])


@pytest.mark.parametrize("query,field", [
    ({"target": "abc"}, "target"),
    ({"target": "mean(age):"}, "target"),
    ({"target": ":1"}, "target"),
    ({"target": "mean(age):-1"}, "target"),
    ({"target": "mean(age):0"}, "target"),
    ({"target": "mean(age):1e3"}, "target"),
    ({"target": ""}, "target"),
    ({"target": "median(age):1"}, "target"),
    ({"target": ["count:1", "count:2"]}, "target"),
    ({"target": "mean(age):0.001"}, "target"),  # unreachable
    ({"epsilon": "1", "target": "1"}, "target"),
    ({}, "epsilon"),
    ({"target": "1", "records": "0"}, "records"),
    ({"target": "1", "records": "many"}, "records"),
    ({"target": "1", "records": "1000000001"}, "records"),
])
def test_api_target_errors(api, listing, buyer, query, field):
    before = (Purchase.objects.count(), Holding.objects.count())
    error = assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/", query), 400)
    assert [f for f in error["fields"] if f.split(".")[0] == field], error  # "target.0": the first target
    assert (Purchase.objects.count(), Holding.objects.count()) == before


def test_api_unreachable_target_names_the_best_bound(api, legacy, buyer):
    listing = legacy
    error = assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?target=mean(age):0.001"), 400)
    best = bound_of(listing, "mean(age)", listing.ceiling)
    assert f"mean(age), if the cell holds 1,000 records: ±{best:,.4g} at best" in error["message"]


def test_the_schema_documents_the_target_syntax(api):
    schema = api().get("/api/schema/?format=json").json()
    parameters = schema["paths"]["/api/v1/listings/{listing_id}/quote/"]["get"]["parameters"]
    target = next(p for p in parameters if p["name"] == "target")
    assert target["schema"]["type"] == "array" and "pattern" in target["schema"]["items"]
    assert "mean(age):1" in target["description"] and "either" not in target.get("required", "")
    assert not next(p for p in parameters if p["name"] == "epsilon").get("required", False)
    assert next(p for p in parameters if p["name"] == "records")["schema"]["minimum"] == 1


def test_every_kind_has_a_statable_named_bound_and_the_search_is_minimal():
    from market.catalog.spec.columns import columns_from
    from market.catalog.spec import LATTICE, PUBLIC_SIZE, Neighbours, build_plan

    columns = columns_from([{"name": "x", "type": "decimal", "missing": "none"},
                            {"name": "y", "type": "decimal", "missing": "none"},
                            {"name": "g", "type": "categorical", "missing": "none"}])
    sized = Neighbours(PUBLIC_SIZE, size=400)
    centroid = build_plan([{"kind": "centroid", "columns": ["x", "y"], "center": [0, 0], "radius": 10}], columns,
                          neighbours=sized, offer=False)  # an old listing's
    grouped = build_plan([{"kind": "mean", "column": "x", "lower": 0, "upper": 10, "by": "g", "categories": ["a"]},
                          {"kind": "sum", "column": "x", "lower": 0, "upper": 10, "where": [{"column": "g", "op": "=", "value": "a"}]},
                          {"kind": "count", "by": "g", "categories": ["a"]}],
                         columns, neighbours=sized, mechanism=LATTICE)
    [radius] = accuracy.statistic_curves(centroid)
    assert radius["name"] == "error radius of the centroid" and radius["assumes_records"] is None
    curves = accuracy.statistic_curves(grouped)
    assert [(c["name"], c["assumes_records"]) for c in curves] == [
        ("mean of x (each group)", 400), ("sum(x; 0..10) | g = a (statistic 2)", None), ("count of records (each group)", None)]
    assert curves[0]["shown"] == "mean of x (each group), if each cell holds 400 records"  # at most the public size
    for plan, target in ((centroid, [(None, Decimal("1"))]), (grouped, [("mean of x (each group)", Decimal("0.5"))])):
        found = accuracy.statistic_curves(plan)
        level = accuracy.cheapest_level(found, target, above=Decimal(0), cap=Decimal(100))
        assert level is not None and not accuracy.misses(found, target, level)
        assert accuracy.misses(found, target, level - STEP)
