"""A new listing's answer is computed before the dataset's lock is taken (decrypting the file and
running the statistics hold nobody up); under the lock the dataset's version is read again, and a
dataset that moved meanwhile (a new typed file, other columns, another budget) refuses the listing
with 409 ``dataset_changed``, creating nothing. The race is injected at the service's checkpoint
between the two (``market.catalog.services.listings._checkpoint("computed")``)."""

from decimal import Decimal

import numpy as np
import pytest
from django.db import connection

from market.catalog import services
from market.catalog.models import Dataset, Listing
from market.catalog.services import dataset_budget_set, dataset_columns_set, listing_create, listing_create_microdata
from market.core.errors import Conflict, InvalidInput
from releases.models import NoisePath
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv
from tests.marketplace.test_api import assert_error
from tests.marketplace.test_dataset_budget import staff  # noqa: F401 - fixture
from tests.marketplace.test_microdata import SPEC, penguins_csv

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dataset(owner):
    return ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="8")


def create(owner, dataset, ceiling="1"):
    return listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Visits", statistics=STATISTICS[:1], ceiling=ceiling,
        price_per_epsilon="10.00",
    )


def at_checkpoint(monkeypatch, action):
    def checkpoint(name):
        if name == "computed":
            action()

    monkeypatch.setattr(services.listings, "_checkpoint", checkpoint)


def test_the_answer_is_computed_outside_any_transaction_and_lock(owner, dataset, monkeypatch):
    seen = []
    real = services.listings.compute
    monkeypatch.setattr(services.listings, "compute", lambda plan, table, **how: (seen.append(connection.in_atomic_block),
                                                                               real(plan, table, **how))[1])
    listing = create(owner, dataset)
    assert seen == [False]
    assert listing.dataset_id == dataset.pk and NoisePath.objects.filter(listing=listing).exists()


def test_a_budget_change_between_compute_and_lock_is_refused(owner, dataset, staff, monkeypatch):
    at_checkpoint(monkeypatch, lambda: dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="9", reason="more"))
    with pytest.raises(Conflict) as refused:
        create(owner, dataset)
    assert refused.value.code == "dataset_changed" and refused.value.status == 409
    assert not Listing.objects.exists() and not NoisePath.objects.exists()
    assert Dataset.objects.get(pk=dataset.pk).version == dataset.version + 1


def test_new_columns_between_compute_and_lock_are_refused(owner, dataset, monkeypatch):
    def retype():
        dataset_columns_set(owner=owner, dataset_id=dataset.public_id, columns=[{"name": "visits", "type": "categorical"}])

    at_checkpoint(monkeypatch, retype)
    with pytest.raises(Conflict, match="the dataset changed"):  # retyped and processed again meanwhile
        create(owner, dataset)
    after = Dataset.objects.get(pk=dataset.pk)
    assert not Listing.objects.exists() and after.is_ready and after.version > dataset.version


def test_a_rebuilt_typed_file_between_compute_and_lock_is_refused(owner, dataset, monkeypatch):
    # a processing run that finishes meanwhile: the dataset is ready again, on a new file
    def reprocess():
        Dataset.objects.filter(pk=dataset.pk).update(status=Dataset.Status.PROCESSING, progress={"job": "j"})
        services.dataset_process(dataset_id=dataset.pk, job="j")

    at_checkpoint(monkeypatch, reprocess)
    with pytest.raises(Conflict, match="the dataset changed"):
        create(owner, dataset)
    assert Dataset.objects.get(pk=dataset.pk).is_ready and not Listing.objects.exists()
    monkeypatch.setattr(services.listings, "_checkpoint", lambda name: None)
    assert create(owner, dataset).pk  # tried again, it goes through


def test_another_listing_taking_the_budget_meanwhile_is_caught_under_the_lock(owner, dataset, monkeypatch):
    at_checkpoint(monkeypatch, lambda: (monkeypatch.setattr(services.listings, "_checkpoint", lambda name: None), create(owner, dataset, "7")))
    with pytest.raises(InvalidInput) as refused:
        create(owner, dataset, "2")
    assert "ceiling" in refused.value.fields and Listing.objects.count() == 1


def test_a_microdata_listing_is_refused_the_same_way(owner, staff, monkeypatch):
    data, _ = penguins_csv(300)
    dataset = ready_dataset(owner=owner, name="penguins", data=data, total_budget="20", relation="public_size")
    at_checkpoint(monkeypatch, lambda: dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="99", reason="more"))
    with pytest.raises(Conflict):
        listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="t", microdata_spec=SPEC,
                                 price_per_epsilon="2.00", shuffle=np.random.default_rng(7))
    assert not Listing.objects.exists()


def test_the_api_answers_409_in_its_one_error_shape(api, owner, dataset, staff, monkeypatch):
    at_checkpoint(monkeypatch, lambda: dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="9", reason="more"))
    body = {"dataset": dataset.public_id, "title": "t", "statistics": [{"kind": "count"}], "ceiling": "1",
            "price_per_epsilon": "10.00"}
    answer = api(owner).post("/api/v1/listings/", body, format="json")
    assert_error(answer, 409, code="dataset_changed")
    assert not Listing.objects.exists()
    assert Dataset.objects.get(pk=dataset.pk).total_budget == Decimal("9")
