"""The reads every purchase makes (a quote's listing, the purchase read back after its wait) stay one
query each, and the faster way they find an open listing changes nobody's view of a closed one
(issue 32: the load's CPU per purchase)."""

import pytest

from market.catalog.selectors import listing_get
from market.catalog.services import listing_close
from market.core.errors import NotFound
from market.trading.selectors import purchase_get
from market.trading.services import purchase_create, purchase_quote

pytestmark = pytest.mark.django_db


def test_a_quote_reads_an_open_listing_and_the_holding_in_two_queries_and_nothing_later(
    make_listing, buyer, django_assert_num_queries
):
    listing = make_listing()
    with django_assert_num_queries(1):
        found = listing_get(user=buyer, listing_id=listing.pk, with_owner=False)
    with django_assert_num_queries(1):  # the holding: no field of the listing or its dataset is loaded late
        quote = purchase_quote(buyer=buyer, listing=found, epsilon="1")
    assert quote.price > 0


def test_a_closed_listing_is_seen_by_its_owner_and_its_holders_only(
    make_listing, owner, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks, django_assert_num_queries
):
    listing = make_listing()
    fund(buyer, 1000)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    listing_close(owner=owner, listing_id=listing.pk)
    stranger = users("sam")
    for who in (owner, buyer):
        for with_owner in (True, False):
            assert listing_get(user=who, listing_id=listing.pk, with_owner=with_owner).pk == listing.pk
    with django_assert_num_queries(2):  # not open: then through who may see it
        listing_get(user=buyer, listing_id=listing.pk, with_owner=False)
    for who in (stranger, None):
        with pytest.raises(NotFound):
            listing_get(user=who, listing_id=listing.pk)


def test_a_released_purchase_is_read_back_with_its_release_in_one_query(
    make_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks, django_assert_num_queries
):
    listing = make_listing()
    fund(buyer, 1000)
    with django_capture_on_commit_callbacks(execute=True):
        made = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1").purchase
    with django_assert_num_queries(1):
        purchase = purchase_get(user=buyer, purchase_id=made.pk)
        assert purchase.release.listing.labels
