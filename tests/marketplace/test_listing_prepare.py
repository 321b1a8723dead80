"""Listing creation as a task on a large table (``LISTING_PREPARE_INLINE_ROWS``, or Spark): the owner's
request judges everything and reserves the budget under the dataset's lock, creating the listing
``preparing`` (hidden from buyers, never computed in the request); the task ``listing_prepare``
computes its answer outside every lock, stores it with its size release under the dataset's lock if the
dataset has not moved, and opens it. A listing whose dataset moved, or whose work was lost too often,
fails, holding no budget. Here "large" is any table: the setting is 0."""

from decimal import Decimal

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from market.catalog import services
from market.catalog.models import Listing
from market.catalog.selectors import ceilings_needed, listing_search
from market.catalog.services import (
    dataset_budget_set,
    listing_close,
    listing_create,
    listing_prepare,
    listing_reopen,
    listings_prepare_sweep,
)
from market.core.errors import Conflict, InvalidInput, NotFound
from market.trading.services import purchase_create
from releases.models import NoisePath
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv
from tests.marketplace.test_dataset_budget import staff  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def large(settings):
    settings.LISTING_PREPARE_INLINE_ROWS = 0  # every table counts as large
    return settings


@pytest.fixture
def dataset(owner):
    return ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="8")


def create(owner, dataset, ceiling="5", **extra):
    return listing_create(owner=owner, dataset_id=dataset.public_id, title="Visits", statistics=STATISTICS,
                          ceiling=ceiling, price_per_epsilon="10.00", **extra)


@pytest.fixture
def queued(monkeypatch):
    """The listings whose preparation was queued (the task itself is run by the test)."""
    sent = []
    monkeypatch.setattr(services.preparation, "queue", lambda *, listing_pk: sent.append(listing_pk))
    return sent


def test_a_large_table_is_listed_preparing_without_reading_it_in_the_request(
        large, owner, dataset, buyer, queued, monkeypatch, django_capture_on_commit_callbacks):
    def never(*args, **kwargs):
        raise AssertionError("the request read the data")

    monkeypatch.setattr(services.listings, "_computed", never)
    with django_capture_on_commit_callbacks(execute=True):
        listing = create(owner, dataset)
    listing.refresh_from_db()
    assert (listing.status, listing.is_open, listing.size_release) == ("preparing", False, None)
    assert listing.size_level == Decimal("0.5") and listing.prepared_from == dataset.version
    assert queued == [listing.pk] and NoisePath.objects.filter(listing=listing).exists()
    # its budget is reserved: the dataset's 8 has 3 left
    assert ceilings_needed(dataset_pk=dataset.pk) == Decimal(5)
    with pytest.raises(InvalidInput, match="can be at most 3"):
        create(owner, dataset, ceiling="4")
    # buyers do not see it, nor can they buy it
    assert listing.pk not in {l.pk for l in listing_search(user=buyer)}
    with pytest.raises(NotFound):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")


def test_the_task_stores_the_answer_the_request_would_have_computed_and_opens_the_listing(
        large, settings, owner, dataset, buyer, fund, queued):
    prepared = create(owner, dataset, ceiling="3")
    assert listing_prepare(listing_id=prepared.pk) == "ready"
    settings.LISTING_PREPARE_INLINE_ROWS = 10**9
    inline = create(owner, dataset, ceiling="3")
    prepared.refresh_from_db()
    assert (prepared.status, prepared.is_open, prepared.prepared_from) == ("ready", True, None)
    assert np.array_equal(prepared.true_answer(), inline.true_answer())
    assert [c["index"] for c in prepared.size_release["cells"]] == [c["index"] for c in inline.size_release["cells"]]
    # sold like any listing, and a second delivery of the task changes nothing
    sealed = bytes(prepared.answer)
    assert listing_prepare(listing_id=prepared.pk) == "skipped"
    assert bytes(Listing.objects.get(pk=prepared.pk).answer) == sealed
    fund(buyer, 100)
    assert purchase_create(buyer=buyer, listing_id=prepared.pk, epsilon="1").purchase.status == "queued"
    assert prepared.pk in {l.pk for l in listing_search(user=buyer)}


def test_a_dataset_that_moves_before_the_answer_is_stored_fails_the_listing_and_frees_its_budget(
        large, owner, dataset, staff, queued, monkeypatch):
    listing = create(owner, dataset)

    def moved(name):
        if name == "prepared":
            dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="9", reason="more")

    monkeypatch.setattr(services.preparation, "_checkpoint", moved)
    assert listing_prepare(listing_id=listing.pk) == "failed"
    listing.refresh_from_db()
    assert (listing.status, listing.is_open, listing.counted_in_budget) == ("failed", False, False)
    assert "the dataset changed" in listing.failure and bytes(listing.answer) == b""
    assert ceilings_needed(dataset_pk=dataset.pk) == 0
    monkeypatch.undo()
    assert create(owner, dataset, ceiling="9").status == "preparing"  # the whole budget is free again
    with pytest.raises(Conflict, match="never made"):
        listing_reopen(owner=owner, listing_id=listing.pk)


def test_two_deliveries_at_once_store_one_answer_and_one_size_release(large, owner, dataset, queued, monkeypatch):
    listing = create(owner, dataset)
    outcomes, started = [], []

    def meanwhile(name):
        if name == "prepared" and not started:
            started.append(True)
            outcomes.append(listing_prepare(listing_id=listing.pk))  # the copy that finishes first

    monkeypatch.setattr(services.preparation, "_checkpoint", meanwhile)
    outcomes.append(listing_prepare(listing_id=listing.pk))
    assert outcomes == ["ready", "skipped"]
    listing.refresh_from_db()
    assert listing.status == "ready" and listing.size_release is not None


def test_a_listing_closed_while_it_is_prepared_stays_closed_and_reopens_when_asked(large, owner, dataset, queued):
    listing = create(owner, dataset)
    listing_close(owner=owner, listing_id=listing.pk, reason="Not yet")
    assert listing_prepare(listing_id=listing.pk) == "ready"
    listing.refresh_from_db()
    assert (listing.status, listing.is_open, listing.closed_reason) == ("ready", False, "Not yet")
    assert listing_reopen(owner=owner, listing_id=listing.pk).is_open


def test_the_sweeper_hands_out_a_lost_preparation_again_then_fails_it(large, settings, owner, dataset, queued):
    from datetime import timedelta

    settings.LISTING_PREPARE_MAX_ATTEMPTS = 2
    listing = create(owner, dataset)
    assert listings_prepare_sweep() == {"requeued": 0, "failed": 0, "skipped": 0}  # handed out just now
    queued.clear()
    assert listings_prepare_sweep(older_than=timedelta(0)) == {"requeued": 1, "failed": 0, "skipped": 0}
    assert queued == [listing.pk] and Listing.objects.get(pk=listing.pk).prepare_attempts == 2
    assert listings_prepare_sweep(older_than=timedelta(0)) == {"requeued": 0, "failed": 1, "skipped": 0}
    listing.refresh_from_db()
    assert listing.status == "failed" and "stopped 2 times" in listing.failure and not listing.counted_in_budget


def test_the_api_answers_202_and_shows_the_owner_the_status(large, owner, dataset, buyer, api, queued):
    body = {"dataset": dataset.public_id, "title": "Visits", "statistics": STATISTICS, "ceiling": "5",
            "price_per_epsilon": "10.00"}
    answer = api(owner).post("/api/v1/listings/", body, format="json")
    assert answer.status_code == 202, answer.content
    made = answer.json()
    assert (made["status"], made["is_open"], made["failure"], made["size_release"]) == ("preparing", False, "", None)
    assert api(buyer).get(f"/api/v1/listings/{made['id']}/").status_code == 404
    listing_prepare(listing_id=made["id"])
    shown = api(owner).get(f"/api/v1/listings/{made['id']}/").json()
    assert (shown["status"], shown["is_open"]) == ("ready", True) and shown["size_release"] is not None
    assert api(buyer).get(f"/api/v1/listings/{made['id']}/").json()["status"] == "ready"


def test_the_database_keeps_a_preparing_listing_closed_and_a_failed_one_out_of_the_budget(large, owner, dataset, queued):
    listing = create(owner, dataset)
    with pytest.raises(IntegrityError, match="listing_open_only_when_ready"), transaction.atomic():
        Listing.objects.filter(pk=listing.pk).update(is_open=True)
    with pytest.raises(IntegrityError, match="listing_failed_not_counted"), transaction.atomic():
        Listing.objects.filter(pk=listing.pk).update(status="failed")
    with pytest.raises(IntegrityError, match="listing_size_release_has_level"), transaction.atomic():
        Listing.objects.filter(pk=listing.pk).update(status="ready")


def test_the_owner_pages_show_preparing_then_failed(large, owner, dataset, client, queued, monkeypatch, staff):
    client.force_login(owner)
    answer = client.post("/owner/listings/new/", {
        "dataset": dataset.public_id, "title": "Visits", "description": "", "ceiling": "2", "price_kind": "linear",
        "price_per_epsilon": "10.00", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0", "stats-0-kind": "count",
    }, follow=True)
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "is being prepared" in page and 'id="preparing"' in page and 'id="close-form"' in page
    [listing] = Listing.objects.all()
    assert "preparing" in client.get("/owner/").content.decode()

    def moved(name):
        if name == "prepared":
            dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="9", reason="more")

    monkeypatch.setattr(services.preparation, "_checkpoint", moved)
    listing_prepare(listing_id=listing.pk)
    page = client.get(f"/owner/listings/{listing.pk}/").content.decode()
    assert 'id="failure"' in page and "the dataset changed" in page and 'id="failed-help"' in page
    assert 'id="reopen-form"' not in page


def test_a_microdata_listing_on_a_large_table_is_prepared_too(large, owner, buyer, queued, settings):
    """Bit-report microdata reads every record: over a large table its true bits are read by the task,
    with the spec and salt judged in the request; the bits' column sums are the data's counts."""
    from tests.marketplace.test_microdata import SPEC, penguins_csv

    data, counts = penguins_csv(600)
    dataset = ready_dataset(owner=owner, name="penguins", data=data, total_budget="20", relation="public_size")
    listing = services.listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="Records",
                                                microdata_spec=SPEC, price_per_epsilon="2.00")
    assert (listing.status, listing.is_open, bytes(listing.answer)) == ("preparing", False, b"")
    assert queued == [listing.pk] and ceilings_needed(dataset_pk=dataset.pk) == Decimal(4)
    assert listing_prepare(listing_id=listing.pk) == "ready"
    listing.refresh_from_db()
    bits = listing.truth_bits()
    assert listing.is_open and bits.shape == (600, listing.dim)
    column = dict(zip(listing.labels, bits.sum(axis=0)))
    matched = {label: int(column[label]) for label in counts if label in column}
    assert len(matched) >= 5 and matched == {label: counts[label] for label in matched}
