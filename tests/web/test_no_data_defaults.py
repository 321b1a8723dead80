"""Nothing derived from the data is a default of what a listing publishes: the listing builder holds
none of the data's values (categories) nor its minimum and maximum, in its inputs or in the data its
script reads, also when a row is added or the form comes back with errors. The owner sees them on the
dataset's review page only, with a warning of what choosing from them publishes."""

import json
import re

import pytest
from django.urls import reverse

from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db

SEEN = ("Quokka-Ridge", "Wombat-Flats", "Numbat-Creek")  # values "seen in the data", distinctive on a page
LOW, HIGH = "17.25", "93.75"  # the data's minimum and maximum of age
LISTING_NEW = reverse("web:owner-listing-new")


@pytest.fixture
def dataset(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="3")
    dataset.columns = [
        {"name": "age", "type": "decimal", "missing": "none", "min": float(LOW), "max": float(HIGH)},
        {"name": "income", "type": "decimal", "missing": "none", "min": 1.5, "max": 2.5},
        {"name": "visits", "type": "categorical", "missing": "none", "distinct": 3,
         "categories": [{"value": v, "count": 10 - i} for i, v in enumerate(SEEN)]},
    ]
    dataset.save(update_fields=["columns"])
    return dataset


def _builder_data(page: str) -> dict:
    return json.loads(page.split('<script id="listing-builder" type="application/json">')[1].split("</script>")[0])


def _posted(dataset, **row) -> dict:
    data = {"dataset": dataset.public_id, "title": "t", "ceiling": "1", "price_kind": "linear",
            "price_per_epsilon": "1", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0",
            "stats-MIN_NUM_FORMS": "0", "stats-MAX_NUM_FORMS": "20"}
    data.update({f"stats-0-{name}": value for name, value in row.items()})
    return data


def _assert_nothing_from_the_data(page: str) -> None:
    for value in (*SEEN, LOW, HIGH):
        assert value not in page, value
    builder = _builder_data(page)
    assert set(builder) == {"kinds", "types"}
    for name in ("lower", "upper"):  # the bound inputs hold nothing the owner did not type
        for tag in re.findall(rf'<input[^>]*name="stats-\d+-{name}"[^>]*>', page):
            assert "value=" not in tag, tag
    for textarea in re.findall(r'name="stats-\d+-categories2?"[^>]*>(.*?)</textarea>', page, re.S):
        assert textarea.strip() == ""


def test_the_builder_page_holds_no_value_nor_range_of_the_data(client, owner, dataset):
    client.force_login(owner)
    page = client.get(LISTING_NEW + f"?dataset={dataset.public_id}")
    assert page.status_code == 200
    _assert_nothing_from_the_data(page.content.decode())


def test_adding_a_row_or_an_error_fills_in_nothing_from_the_data(client, owner, dataset):
    client.force_login(owner)
    grouped = _posted(dataset, kind="mean", column="age", by="visits")
    added = client.post(LISTING_NEW, {**grouped, "action": "add-row"})
    assert added.status_code == 200
    _assert_nothing_from_the_data(added.content.decode())
    refused = client.post(LISTING_NEW, grouped)  # no bounds, no categories: errors, nothing filled in
    assert refused.status_code == 200
    body = refused.content.decode()
    _assert_nothing_from_the_data(body)
    assert "List the categories of visits" in body


def test_the_review_page_shows_the_values_seen_with_what_choosing_them_publishes(client, owner, dataset):
    client.force_login(owner)
    page = client.get(reverse("web:owner-dataset-columns", args=[dataset.public_id])).content.decode()
    section = page.split('id="values-seen"')[1].split("</section>")[0]
    assert all(value in section for value in SEEN) and f"{LOW} to {HIGH}" in section
    assert "choosing values from this list publishes that they occur" in section
    assert "never filled in for you" in section
