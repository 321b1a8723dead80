"""Removing a dataset (``market.catalog.services.dataset_remove``, ``DELETE /api/v1/datasets/{id}/``, the
owner's "Remove" button): its listings close with a reason buyers see and stay closed, no listing can be
made on it, its stored files go; everything spent and released stays on record. A failed upload goes
entirely."""

from decimal import Decimal

import pytest
from django.urls import reverse

from market.catalog import files
from market.catalog.models import Dataset, DatasetBudgetChange, Listing
from market.catalog.services import (
    CLOSED_DATASET_REMOVED,
    dataset_budget_set,
    dataset_create,
    dataset_process,
    dataset_remove,
    listing_create,
    listing_reopen,
)
from market.core.errors import Conflict, NotFound
from market.ledger.models import Leg
from market.ledger.selectors import ledger_is_balanced
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create
from releases.models import NoisePath, Release
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def sold(owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks):
    """A dataset with a budget change, two listings (one closed by its owner), one of them sold once."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="10")
    dataset_budget_set(actor=owner, dataset_id=dataset.public_id, budget="12", reason="room for more")
    listings = [listing_create(owner=owner, dataset_id=dataset.public_id, title=f"Counts {i}", ceiling="2",
                               price_per_epsilon="10", statistics=[{"kind": "count", "where": [
                                   {"column": "age", "op": ">=", "value": 40}]}]) for i in (1, 2)]
    Listing.objects.filter(pk=listings[1].pk).update(is_open=False, closed_reason="Closed for the summer.")
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listings[0].pk, epsilon="1")
    assert Purchase.objects.get().status == "released"
    dataset.refresh_from_db()
    return dataset, listings


def _stored(*names):
    return [name for name in names if name and files.storage().exists(name)]


def test_removal_closes_the_listings_keeps_the_record_and_deletes_the_files(
        owner, buyer, client, sold, django_capture_on_commit_callbacks):
    dataset, (sold_listing, closed) = sold
    names = [dataset.upload_file, dataset.raw_file, dataset.typed_file]
    assert len(_stored(*names)) == 2  # the text and typed tables (the upload is deleted once read)
    record = (Leg.objects.count(), Release.objects.count(), Purchase.objects.count(), Holding.objects.count(),
              NoisePath.objects.count(), DatasetBudgetChange.objects.count())
    with django_capture_on_commit_callbacks(execute=True):
        dataset_remove(owner=owner, dataset_id=dataset.public_id)

    dataset.refresh_from_db()  # the row stays: the listings, the releases and the budget's history refer to it
    assert dataset.removed_at is not None and not dataset.is_ready
    assert _stored(*names) == []  # no release reads them: every answer is sealed on its listing
    assert (Leg.objects.count(), Release.objects.count(), Purchase.objects.count(), Holding.objects.count(),
            NoisePath.objects.count(), DatasetBudgetChange.objects.count()) == record
    assert ledger_is_balanced()
    sold_listing.refresh_from_db(), closed.refresh_from_db()
    assert not sold_listing.is_open and sold_listing.closed_reason == CLOSED_DATASET_REMOVED
    assert closed.closed_reason == "Closed for the summer."  # an earlier reason is kept
    assert Release.objects.get().listing_id == sold_listing.pk and sold_listing.answer  # still readable

    # the buyer sees why, and keeps the release
    client.force_login(buyer)
    assert CLOSED_DATASET_REMOVED in client.get(f"/listings/{sold_listing.pk}/").content.decode()
    library = client.get(reverse("web:library")).content.decode()
    assert "Counts 1" in library and Release.objects.get().public_id in library

    # nothing new on it, nothing reopened, and removing it again changes nothing
    with pytest.raises(NotFound):
        listing_create(owner=owner, dataset_id=dataset.public_id, title="again", ceiling="1", price_per_epsilon="1",
                       statistics=[{"kind": "count"}])
    with pytest.raises(Conflict, match="its dataset was removed"):
        listing_reopen(owner=owner, listing_id=closed.pk)
    dataset_remove(owner=owner, dataset_id=dataset.public_id)
    assert Dataset.objects.get(pk=dataset.pk).removed_at == dataset.removed_at


def test_a_failed_upload_is_removed_outright(owner, django_capture_on_commit_callbacks):
    dataset = dataset_create(owner=owner, name="broken", data=b"a,b\n1,2,3\n", total_budget="5")
    dataset_process(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    names = [dataset.upload_file, dataset.raw_file, dataset.typed_file]
    assert dataset.status == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        dataset_remove(owner=owner, dataset_id=dataset.public_id)
    assert not Dataset.objects.filter(pk=dataset.pk).exists() and not _stored(*names)
    with pytest.raises(NotFound):  # gone: nothing to remove again
        dataset_remove(owner=owner, dataset_id=dataset.public_id)


def test_another_owners_dataset_and_one_being_processed(owner, users):
    dataset = dataset_create(owner=owner, name="visits", data=make_csv(20), total_budget="5")
    Dataset.objects.filter(pk=dataset.pk).update(status="processing")  # as while its task runs
    with pytest.raises(NotFound):
        dataset_remove(owner=users("rival", owner=True), dataset_id=dataset.public_id)
    with pytest.raises(Conflict, match="still being processed"):
        dataset_remove(owner=owner, dataset_id=dataset.public_id)
    assert Dataset.objects.get(pk=dataset.pk).removed_at is None


def test_the_api_removes_with_204_idempotently_and_404_for_anothers(api, owner, users, sold):
    dataset, _ = sold
    address = f"/api/v1/datasets/{dataset.public_id}/"
    rival = api(users("rival", owner=True)).delete(address)
    assert rival.status_code == 404 and rival.json()["error"]["status"] == 404
    assert Dataset.objects.get(pk=dataset.pk).removed_at is None
    first, again = api(owner).delete(address), api(owner).delete(address)
    assert (first.status_code, again.status_code) == (204, 204) and first.content == b""
    assert api(owner).get(address).status_code == 404
    assert dataset.public_id not in api(owner).get("/api/v1/datasets/").content.decode()


def test_the_owners_page_removes_after_a_confirm(client, owner, sold):
    dataset, (listing, _) = sold
    failed = dataset_create(owner=owner, name="broken upload", data=b"a,b\n1,2,3\n", total_budget="5")
    dataset_process(dataset_id=failed.pk)
    client.force_login(owner)
    dashboard = client.get(reverse("web:owner")).content.decode()
    row = dashboard[dashboard.index("broken upload"):dashboard.index("</tr>", dashboard.index("broken upload"))]
    assert "Failed" in row and "Change the budget" not in row  # a failed upload has no budget to change
    page = client.get(reverse("web:owner-dataset-columns", args=[dataset.public_id])).content.decode()
    assert 'id="remove-dataset"' in page and "<details>" in page[page.index('id="remove-dataset"'):]
    assert client.get(reverse("web:owner-dataset-remove", args=[dataset.public_id])).status_code == 405
    answer = client.post(reverse("web:owner-dataset-remove", args=[dataset.public_id]))
    assert answer.status_code == 302 and answer["Location"] == reverse("web:owner")
    dashboard = client.get(reverse("web:owner")).content.decode()
    datasets = dashboard[dashboard.index('id="datasets"'):]
    assert "is removed" in dashboard and "visits</td>" not in datasets and "broken upload" in datasets
    assert client.get(reverse("web:owner-dataset-columns", args=[dataset.public_id])).status_code == 404
    assert not Listing.objects.get(pk=listing.pk).is_open
    mine = client.get(reverse("web:owner-listing", args=[listing.pk]))  # its sales stay on show
    assert mine.status_code == 200 and CLOSED_DATASET_REMOVED in mine.content.decode()
    assert 'id="budget-link"' not in mine.content.decode() and 'id="reopen-form"' not in mine.content.decode()
    assert "Its dataset was removed: this listing stays closed." in mine.content.decode()
