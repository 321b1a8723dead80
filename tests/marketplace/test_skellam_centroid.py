"""The centroid on the exact Skellam path: sums of whole grid steps with noise calibrated to the
length of one record's change, every worst case of that change in the calibration, sold and read
through the product (service, API, quotes, releases)."""

from decimal import Decimal

import numpy as np
import pytest

from market.catalog.models import Dataset, Listing
from market.catalog.services import listing_compare, listing_create
from market.core.errors import InvalidInput
from market.trading.selectors import release_readings
from market.trading.services import purchase_create
from releases.engine import skellam_privacy as sp
from releases.engine.mechanisms.skellam import PAIRS
from releases.models import NoisePoint, Release
from tests.datasets import ready_dataset
from tests.marketplace.test_vector import locations_csv

pytestmark = pytest.mark.django_db

CENTROID = [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, -300], "radius": 3000}]


@pytest.fixture
def places(owner):
    """400 places whose number is public, with a δ."""
    dataset = ready_dataset(owner=owner, name="places", data=locations_csv(), relation="public_size", total_budget="10")
    Dataset.objects.filter(pk=dataset.pk).update(delta_budget=Decimal("1e-6"))
    dataset.refresh_from_db()
    return dataset


def _truth():
    lines = locations_csv().decode().splitlines()[1:]
    return np.array([[float(v) for v in line.split(",")[:2]] for line in lines])


def test_a_centroid_is_sold_on_the_skellam_path_and_read_as_the_mean_point(
        owner, places, users, fund, eager_celery, django_capture_on_commit_callbacks):
    listing = listing_create(owner=owner, dataset_id=places.public_id, title="Centre", statistics=CENTROID,
                             ceiling="2", price_per_epsilon="1", mechanism="skellam")
    stat = listing.statistics[0]
    assert stat["grid"] == "150"  # the radius over 20 steps: 13 worst cases in two dimensions
    cases = listing.plan["layout"]["unit_cases"]
    assert len(cases) == len(sp.frontier(4 * 441, 2)) == 13  # (20 + sqrt(2)/2)^2 = 441.2...
    assert max(a * a + b * b for (_, a), (_, b) in (c if len(c) == 2 else (c[0], (1, 0)) for c in cases)) <= 4 * 441
    # the true sums, in steps: each point pulled into the ball, rounded to the grid
    points = _truth() - [1000, -300]
    length = np.linalg.norm(points, axis=1, keepdims=True)
    steps = np.round(points * np.minimum(1, 3000 / length) / 150)
    assert np.array_equal(listing.true_answer(), steps.sum(axis=0).astype(np.int64))

    buyer = users("bea")
    fund(buyer, 100)
    for level in ("0.5", "2"):
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level)
    low = NoisePoint.objects.get(path__listing=listing, level=Decimal("0.5")).noise_of(PAIRS)
    high = NoisePoint.objects.get(path__listing=listing, level=Decimal(2)).noise_of(PAIRS)
    assert (high <= low).all()  # one path of counts: the higher level thins the lower's
    release = Release.objects.get(listing=listing, level=Decimal(2))
    readings = release_readings(release)
    assert [r["label"] for r in readings] == ["centroid(east)", "centroid(north)"]
    noise = (high[:, 0] - high[:, 1]) * 150
    mean = [1000, -300] + (steps.sum(axis=0) * 150 + noise) / 400
    assert np.allclose([r["value_exact"] for r in readings], mean)
    mu = listing.release_mechanism.time(Decimal(2))
    radius = sp.norm_bound(mu, 2) * 150 / 400
    assert readings[0]["error_bound_exact"] == pytest.approx(radius)
    assert abs(np.array([r["value_exact"] for r in readings]) - _truth().mean(axis=0)).max() < 4 * radius


def test_a_centroid_is_refused_off_the_skellam_path_with_its_reason(owner, places):
    with pytest.raises(InvalidInput, match="a centroid is released on the Skellam path"):
        listing_create(owner=owner, dataset_id=places.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=CENTROID)
    private = ready_dataset(owner=owner, name="private", data=locations_csv(), total_budget="10")
    Dataset.objects.filter(pk=private.pk).update(delta_budget=Decimal("1e-6"))
    with pytest.raises(InvalidInput, match="sold only when that number is public"):
        listing_create(owner=owner, dataset_id=private.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=CENTROID, mechanism="skellam")
    fine = [{**CENTROID[0], "grid": "1"}]
    with pytest.raises(InvalidInput, match="at most 64 are allowed: use a coarser grid"):
        listing_create(owner=owner, dataset_id=places.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=fine, mechanism="skellam")
    with pytest.raises(InvalidInput, match="vector statistic is listed on its own"):
        listing_create(owner=owner, dataset_id=places.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=CENTROID + [{"kind": "count"}], mechanism="skellam")
    assert not Listing.objects.exists()


def test_the_comparison_proposes_the_only_path_that_sells_a_centroid(owner, places):
    found = listing_compare(owner=owner, dataset_id=places.public_id, statistics=CENTROID, ceiling="1")
    assert found["proposed"] == "skellam" and found["ratio"] is None
    lattice, skellam = found["mechanisms"]
    assert not lattice["available"] and "released on the Skellam path" in lattice["reason"]
    assert skellam["available"] and [v["label"] for v in skellam["values"]] == ["sum(east - 1000)", "sum(north + 300)"]


def test_a_centroid_listing_composes_by_the_envelope_of_its_worst_cases(owner, places):
    """In its dataset's composition a listing with several worst cases counts as one case that dominates
    them all: its moves sorted, each the largest any case has there."""
    listing = listing_create(owner=owner, dataset_id=places.public_id, title="Centre", statistics=CENTROID,
                             ceiling="1", price_per_epsilon="1", mechanism="skellam")
    found = listing.release_mechanism
    cases = [sp.case_of(case, listing.plan["weights"]) for case in listing.plan["layout"]["unit_cases"]]
    law = found.top_law(listing.plan)
    top = found.time(found.ladder()[-1])
    assert law.delta(1.0) >= max(sp.profile(top, cases, [1.0]))  # the envelope costs at least every case
    assert sp.envelope(cases) == ((1, 29, 1), (1, 41, 1))  # the largest first move, the largest second


def test_the_api_lists_and_quotes_a_centroid(owner, places, api, users):
    answer = api(owner).post("/api/v1/listings/", {
        "dataset": places.public_id, "title": "Centre", "statistics": CENTROID, "ceiling": "1",
        "price_per_epsilon": "1", "mechanism": "skellam"}, format="json")
    assert answer.status_code == 201, answer.content
    listing_id = answer.json()["id"]
    quote = api(users("bea")).get(f"/api/v1/listings/{listing_id}/quote/?epsilon=1")
    assert quote.status_code == 200, quote.content
    body = quote.json()
    [statistic] = body["statistics"]
    assert statistic["name"] == "error radius of the centroid" and statistic["kind"] == "centroid"
    mechanism = Listing.objects.get(pk=listing_id).release_mechanism
    assert statistic["error_bound"] == pytest.approx(sp.norm_bound(mechanism.time(Decimal(1)), 2) * 150 / 400)
    assert [a["label"] for a in body["accuracy"]] == ["sum(east - 1000)", "sum(north + 300)"]
