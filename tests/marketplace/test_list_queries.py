"""Every list endpoint of the API runs a fixed number of queries, however many items it lists
(issue 14: no N+1). Each list is read with one item and again with four more; the queries of
the two reads must be the same number."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from market.trading.services import purchase_create

pytestmark = pytest.mark.django_db

LISTS = ["/api/v1/purchases/", "/api/v1/releases/", "/api/v1/listings/", "/api/v1/wallet/statement/"]


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries)


def _one_and_five(client, url, add) -> tuple[int, int]:
    """The queries of reading ``url`` after one ``add()`` and after four more (each read once
    before it is counted, to fill the caches a first read fills, as a second read would find them)."""
    counts = []
    for times in (1, 4):
        for _ in range(times):
            add()
        client.get(url)
        counts.append(_queries(client, url))
    return counts[0], counts[1]


@pytest.mark.parametrize("url", LISTS)
def test_a_list_endpoint_runs_the_same_queries_for_one_item_and_for_five(
    url, make_listing, buyer, fund, api, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 10_000)
    client = api(buyer)

    def buy_on_a_new_listing():
        listing = make_listing()
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")

    one, five = _one_and_five(client, url, buy_on_a_new_listing)
    assert five == one, f"{url}: {one} queries for one item, {five} for five"


@pytest.mark.parametrize("url", ["/api/v1/datasets/", "/api/v1/listings/"])
def test_an_owners_list_runs_the_same_queries_for_one_item_and_for_five(url, make_listing, owner, api):
    one, five = _one_and_five(api(owner), url, make_listing)
    assert five == one, f"{url}: {one} queries for one item, {five} for five"
