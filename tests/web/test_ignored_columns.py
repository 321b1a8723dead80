"""Columns the owner set to "ignored" are left out of everything buyers read: the listing page, the
dashboards, the API. The owner's column review still lists them (to change them back)."""

import re

import pytest
from django.urls import reverse

from market.catalog.services import dataset_columns_set, dataset_process, listing_create
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def listing(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="100")
    dataset = dataset_columns_set(owner=owner, dataset_id=dataset.public_id, columns=[{"name": "income", "type": "ignored"}])
    dataset_process(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == "ready" and [c["name"] for c in dataset.columns if c["type"] == "ignored"] == ["income"]
    return listing_create(owner=owner, dataset_id=dataset.public_id, title="Visits", ceiling="2",
                          price_per_epsilon="10", statistics=[{"kind": "count"}, {"kind": "mean", "column": "age",
                                                                                   "lower": 0, "upper": 100}])


def test_ignored_columns_are_not_shown_to_buyers(client, buyer, owner, listing, api):
    assert listing.dataset.kept_column_names == ["age", "visits"]
    for who in (None, buyer):
        if who:
            client.force_login(who)
        page = client.get(f"/listings/{listing.pk}/").content.decode()
        columns = re.search(r"<dt>Columns</dt><dd>(.*?)</dd>", page).group(1)
        assert columns == "age, visits" and "income" not in page
    assert "income" not in api(buyer).get(f"/api/v1/listings/{listing.pk}/").content.decode()
    assert "income" not in api().get("/api/v1/listings/").content.decode()
    client.force_login(owner)
    dashboard = client.get(reverse("web:owner")).content.decode()
    assert "age, visits" in dashboard and "income" not in dashboard
    # the owner's own column review lists it, to set it back
    review = client.get(reverse("web:owner-dataset-columns", args=[listing.dataset.public_id])).content.decode()
    assert "income" in review
