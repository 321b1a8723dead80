"""A listing on the exact Skellam path, through the product: made on a dataset with a delta, sold on
its calibrated ladder, its levels read off one path of counts, composed with the dataset's other
listings by privacy-loss distributions."""

from decimal import Decimal

import numpy as np
import pytest

from market.catalog.models import Dataset
from market.catalog.services import listing_create
from market.core.errors import InvalidInput
from market.trading.services import purchase_create
from releases.engine.mechanisms.skellam import PAIRS
from releases.models import NoisePoint, Release
from tests.datasets import ready_dataset
from tests.fixtures.market import HIST_BINS, make_csv

pytestmark = pytest.mark.django_db

SPEC = [{"kind": "count"}, {"kind": "histogram", "column": "age", "bins": HIST_BINS}]


def _dataset(owner, *, delta="1e-6", budget="4"):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(400), total_budget=budget)
    if delta is not None:
        Dataset.objects.filter(pk=dataset.pk).update(delta_budget=Decimal(delta))
        dataset.refresh_from_db()
    return dataset


def test_a_skellam_listing_sells_its_ladder_off_one_path_of_counts(owner, users, fund, eager_celery,
                                                                   django_capture_on_commit_callbacks):
    dataset = _dataset(owner)
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=SPEC, ceiling="2",
                             price_per_epsilon="1", mechanism="skellam", delta="1e-8")
    assert listing.mechanism == "skellam" and listing.delta == Decimal("1e-8")
    found = listing.release_mechanism
    ladder = found.ladder()
    assert ladder[-1] == Decimal("2") and ladder[0] == Decimal("0.125")
    times = [found.time(level) for level in ladder]
    assert times == sorted(times, reverse=True)  # more eps, less noise
    buyer = users("bea")
    fund(buyer, 1000)
    for level in ("0.5", "2"):
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level)
    points = {p.level: p.noise_of(PAIRS) for p in NoisePoint.objects.filter(path__listing=listing)}
    low, high = points[Decimal("0.5")], points[Decimal("2")]
    assert low.shape == high.shape == (len(listing.labels), 2)
    assert (high <= low).all()  # the less noisy level's counts are a thinning of the noisier one's
    truth = listing.true_answer()
    values = np.array(Release.objects.get(listing=listing, level=Decimal("2")).values)
    noise = high[:, 0] - high[:, 1]
    assert np.array_equal(values, np.clip(truth + noise, listing.lower, listing.upper))
    other = users("cal")
    fund(other, 1000)
    with pytest.raises(InvalidInput, match="sells the levels 0.125, 0.1875, 0.25, 0.375, 0.5, 0.75, 1, 1.5, 2; 1.1 is"):
        purchase_create(buyer=other, listing_id=listing.pk, epsilon="1.1")


def test_the_skellam_path_needs_a_dataset_with_a_delta_and_a_delta_within_it(owner):
    plain = _dataset(owner, delta=None)
    with pytest.raises(InvalidInput, match="the dataset has no δ"):
        listing_create(owner=owner, dataset_id=plain.public_id, title="t", statistics=SPEC, ceiling="1",
                       price_per_epsilon="1", mechanism="skellam")
    with_delta = _dataset(owner, delta="1e-7")
    with pytest.raises(InvalidInput, match=r"the delta \(at most the dataset's δ\) must be a number above 0 and at most 1e-7"):
        listing_create(owner=owner, dataset_id=with_delta.public_id, title="t", statistics=SPEC, ceiling="1",
                       price_per_epsilon="1", mechanism="skellam", delta="1e-6")
    with pytest.raises(InvalidInput, match="only to a listing on the Skellam path"):
        listing_create(owner=owner, dataset_id=with_delta.public_id, title="t", statistics=SPEC, ceiling="1",
                       price_per_epsilon="1", delta="1e-9")


def test_a_dataset_with_a_delta_composes_its_listings_tighter_than_the_sum(owner):
    """Pure listings at 0.1 on a dataset at (2, 1e-6): the sum rule takes 20; composed by their
    privacy-loss distributions (randomised response at 0.1 each), 24 fit (the exact binomial
    figure: tests/engine/test_pld.py), and the next is refused with the figure it would spend."""
    dataset = _dataset(owner, delta="1e-6", budget="2")
    made = 0
    with pytest.raises(InvalidInput, match=r"would spend δ \d(\.\d)?e-6 at ε 2"):
        for _ in range(30):
            listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=[{"kind": "count"}],
                           ceiling="0.1", price_per_epsilon="1")
            made += 1
    assert made == 24


def test_the_api_makes_a_skellam_listing_and_shows_its_delta_and_ladder(owner, api):
    dataset = _dataset(owner, delta=None)
    client = api(owner)
    refused = client.post(f"/api/v1/datasets/{dataset.public_id}/budget/", {"budget": "4", "delta": "1e-5", "reason": "r"},
                          format="json")
    assert refused.status_code == 400 and "at most 1e-6" in refused.json()["error"]["message"]
    answer = client.post(f"/api/v1/datasets/{dataset.public_id}/budget/", {"budget": "4", "delta": "1e-6", "reason": "r"},
                         format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["delta"] == "1e-6" and answer.json()["composed"] == {"delta": "0", "epsilon": "0"}
    made = client.post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "t", "statistics": SPEC,
                                              "ceiling": "1", "price_per_epsilon": "1", "mechanism": "skellam",
                                              "delta": "1e-8"}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["mechanism"] == "skellam" and body["delta"] == "1e-8"
    assert body["levels"] == ["0.0625", "0.0937", "0.125", "0.1875", "0.25", "0.375", "0.5", "0.75", "1"]
    shown = client.get(f"/api/v1/datasets/{dataset.public_id}/").json()["composed"]
    assert 0 < float(shown["delta"]) <= 1e-8 * 1.01 and float(shown["epsilon"]) <= 1.0
    back = client.post(f"/api/v1/datasets/{dataset.public_id}/budget/", {"budget": "4", "delta": None, "reason": "r"},
                       format="json")
    assert back.status_code == 400 and "keeps a δ" in back.json()["error"]["message"]


def test_quotes_profiles_and_buying_by_accuracy_on_the_ladder(owner, users, fund, api):
    """Before purchase every figure is exact and on the ladder: a quote at a level off it is a 400
    naming the ladder, a quote by accuracy rounds up to a ladder level, each value's bound is the
    Skellam law's 95% quantile, and the profile at a level meets the listing's delta at it."""
    from scipy import stats

    dataset = _dataset(owner)
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=[{"kind": "count"}],
                             ceiling="1", price_per_epsilon="1", mechanism="skellam", delta="1e-8")
    buyer = users("bea")
    fund(buyer, 100)
    client = api(buyer)
    off = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"epsilon": "0.3"})
    assert off.status_code == 400 and "sells the levels" in off.json()["error"]["message"]
    quote = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"epsilon": "0.5"})
    assert quote.status_code == 200, quote.content
    value = quote.json()["accuracy"][0]
    assert quote.json()["statistics"][0]["error_bound"] == value["error_bound"]
    mu = float(listing.release_mechanism.time("0.5"))
    q = value["error_bound"]
    inside = stats.skellam.cdf(q, mu, mu) - stats.skellam.cdf(-q - 1, mu, mu)
    below = stats.skellam.cdf(q - 1, mu, mu) - stats.skellam.cdf(-q, mu, mu)
    assert below < 0.95 <= inside
    by_accuracy = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"target": str(int(q))})
    assert by_accuracy.status_code == 200, by_accuracy.content
    found = by_accuracy.json()
    assert found["epsilon"] == "0.5000" and found["accuracy"][0]["error_bound"] <= q  # 0.375's bound is above q
    profile = client.get(f"/api/v1/listings/{listing.pk}/privacy-profile/", {"epsilon": "0.5"})
    assert profile.status_code == 200, profile.content
    points = profile.json()["points"]
    assert points[-1]["epsilon"] == "0.500000" and 0 < points[-1]["delta"] <= 1e-8
    assert [p["delta"] for p in points] == sorted((p["delta"] for p in points), reverse=True)
    off_profile = client.get(f"/api/v1/listings/{listing.pk}/privacy-profile/", {"epsilon": "0.3"})
    assert off_profile.status_code == 400 and "sells the levels" in off_profile.json()["error"]["message"]


def test_a_listing_closed_and_reopened_on_a_dataset_with_a_delta_is_checked_by_the_composition(owner):
    """Ceilings adding up to more than the budget are fine composed (the sum rule is not applied on
    reopening), and the database still refuses a single listing above the budget."""
    from django.db import IntegrityError, transaction

    from market.catalog.models import Listing
    from market.catalog.services import listing_close, listing_reopen

    dataset = _dataset(owner, delta="1e-6", budget="2")
    made = [listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=[{"kind": "count"}],
                           ceiling="0.1", price_per_epsilon="1") for _ in range(22)]
    listing_close(owner=owner, listing_id=made[0].pk)
    assert listing_reopen(owner=owner, listing_id=made[0].pk).is_open
    with pytest.raises(IntegrityError), transaction.atomic():
        Listing.objects.filter(pk=made[1].pk).update(ceiling=Decimal("2.5"))


def test_the_builder_compares_the_mechanisms_and_proposes_the_more_accurate(owner, api):
    """Twenty filtered counts that one record can all move: Laplace noise pays 20 shares of eps, the
    Skellam path about sqrt(20) times a factor for delta; the comparison shows both and proposes the Skellam path. One count
    alone: the lattice path's bound is the smaller and it is proposed. Without a delta, only the
    lattice path is available, with the reason."""
    dataset = _dataset(owner)
    client = api(owner)
    wide = [{"kind": "count", "where": [{"column": "age", "op": ">=", "value": a}]} for a in range(20, 60, 2)]
    found = client.post("/api/v1/listings/compare/", {"dataset": dataset.public_id, "statistics": wide,
                                                      "ceiling": "1"}, format="json")
    assert found.status_code == 200, found.content
    body = found.json()
    lattice, skellam = body["mechanisms"]
    assert body["proposed"] == "skellam" and skellam["available"] and skellam["delta"] == "1e-9"
    assert len(lattice["values"]) == len(skellam["values"]) == 20
    assert body["ratio"] < 0.7  # 0.64: a fifth smaller bounds at delta 1e-9; the gain grows like sqrt(values)
    assert all(s["error_bound"] < l["error_bound"] for l, s in zip(lattice["values"], skellam["values"]))
    one = client.post("/api/v1/listings/compare/", {"dataset": dataset.public_id, "statistics": [{"kind": "count"}],
                                                    "ceiling": "1"}, format="json").json()
    assert one["proposed"] == "lattice" and one["ratio"] > 1
    plain = _dataset(owner, delta=None)
    none = client.post("/api/v1/listings/compare/", {"dataset": plain.public_id, "statistics": [{"kind": "count"}],
                                                     "ceiling": "1"}, format="json").json()
    assert none["proposed"] == "lattice" and not none["mechanisms"][1]["available"]
    assert "has no δ" in none["mechanisms"][1]["reason"]


def test_a_ceiling_too_low_for_the_skellam_path_is_a_plain_400(owner, api):
    """Twenty counts at a ceiling of 0.0001 would need noise beyond the path's largest time: the
    listing, the comparison and the fit what-if each say so in a 400, and nothing is created."""
    dataset = _dataset(owner)
    client = api(owner)
    wide = [{"kind": "count", "where": [{"column": "age", "op": ">=", "value": a}]} for a in range(20, 60, 2)]
    for address, body in (("/api/v1/listings/", {"title": "t", "price_per_epsilon": "1000", "mechanism": "skellam"}),
                          ("/api/v1/listings/compare/", {})):
        found = client.post(address, {"dataset": dataset.public_id, "statistics": wide, "ceiling": "0.0001", **body},
                            format="json")
        assert found.status_code == 400, found.content
        assert "the level is too low for these values" in found.json()["error"]["message"]
    fits = client.get(f"/api/v1/datasets/{dataset.public_id}/fits/", {"mechanism": "skellam", "ceiling": "0.0001",
                                                                        "values": 1000})
    assert fits.status_code == 400 and "too low" in fits.json()["error"]["message"]
    from market.catalog.models import Listing

    assert not Listing.objects.exists()
