"""Levels in the API's sentences read as people write them ("5", "0.5"), never "5.0000"; the decimal
fields keep their four places."""

import re

import pytest

from market.catalog.services import listing_create
from market.trading.services import purchase_create
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv
from tests.marketplace.test_api import assert_error

pytestmark = pytest.mark.django_db

PADDED = re.compile(r"\b\d+\.\d*0\b")  # "5.0000", "0.5000", "2.50"


def _plain(error):
    texts = [error["message"], *(m for ms in error["fields"].values() for m in ms)]
    for text in texts:
        assert not PADDED.search(text), text
    return texts


def test_a_level_above_the_ceiling_is_named_plainly(api, listing, buyer):
    assert listing.ceiling.as_tuple().exponent == -4  # stored with four places
    error = assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=6.5"), 400)
    assert "epsilon: 6.5 is above the highest level sold on this listing, 4.5 (its ceiling 5 less the 0.5 its size " \
           "release took)" in _plain(error)
    profile = assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/privacy-profile/?epsilon=5.5"), 400)
    assert "epsilon: 5.5 is above this listing's ceiling of 4.5" in _plain(profile)
    # the fields stay decimals with four places
    shown = api(buyer).get(f"/api/v1/listings/{listing.pk}/").json()
    assert (shown["ceiling"], shown["buyable_ceiling"], shown["size_level"]) == ("5.0000", "4.5000", "0.5000")


def test_a_level_already_held_is_named_plainly(api, listing, buyer, fund, eager_celery,
                                               django_capture_on_commit_callbacks):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1.5")
    error = assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=1"), 400)
    assert "epsilon: you already hold level 1.5; buy a level above it" in _plain(error)


def test_the_budget_is_named_plainly(api, owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="3")
    listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=STATISTICS, ceiling="2",
                   price_per_epsilon="1")
    body = {"dataset": dataset.public_id, "title": "t2", "statistics": STATISTICS, "ceiling": "1.5",
            "price_per_epsilon": "1"}
    error = assert_error(api(owner).post("/api/v1/listings/", body, format="json"), 400, field="ceiling")
    assert any("the dataset's budget is 3; 2 is taken by its listings, so this ceiling can be at most 1" in t
               for t in _plain(error)), error
    size = assert_error(api(owner).post("/api/v1/listings/", {**body, "ceiling": "0.5", "size_level": "0.5"},
                                        format="json"), 400, field="size_level")
    assert "Below 0.5 (the ceiling)." in _plain(size)
