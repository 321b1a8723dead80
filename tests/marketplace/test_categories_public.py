"""Declared categories are published to every buyer, and which values occur in a dataset is itself
private: a listing that declares categories is made only with the owner's explicit confirmation,
``categories_public: true`` on each statistic (or microdata column) that declares them, through the
API as through the browser. Without it: a 400 in the one error shape, naming the statistic, and
nothing created."""

import pytest

from market.catalog.models import Listing
from market.catalog.services import listing_create
from market.core.errors import InvalidInput
from tests.marketplace.test_microdata import ISLANDS, public_dataset  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

BY_ISLAND = {"kind": "count", "by": "island", "categories": ISLANDS}
TABLE = {"kind": "table", "rows": "island", "columns": "sex", "row_categories": ISLANDS,
         "column_categories": ["female", "male"]}
MEAN_BY_SEX = {"kind": "mean", "column": "mass", "lower": 2000, "upper": 7000, "by": "sex",
               "categories": ["female", "male"]}


def _body(dataset, statistics):
    return {"dataset": dataset.public_id, "title": "Penguins", "statistics": statistics, "ceiling": "2",
            "price_per_epsilon": "1.00"}


@pytest.mark.parametrize("statistic, name", [(BY_ISLAND, "statistic 2 (count)"), (TABLE, "statistic 2 (table)"),
                                             (MEAN_BY_SEX, "statistic 2 (mean)")])
@pytest.mark.parametrize("confirmation", [{}, {"categories_public": False}])
def test_declared_categories_without_the_confirmation_are_refused_and_nothing_is_made(
        owner, public_dataset, api, statistic, name, confirmation):
    dataset, _ = public_dataset(relation="private_size")
    answer = api(owner).post("/api/v1/listings/", _body(dataset, [{"kind": "count"}, {**statistic, **confirmation}]),
                             format="json")
    assert answer.status_code == 400, answer.json()
    error = answer.json()["error"]
    assert error["status"] == 400 and set(error) >= {"code", "message", "fields"}
    messages = error["fields"]["statistics"]
    assert any(m.startswith(f"{name}: ") and "categories_public: true" in m for m in messages), messages
    assert not any(m.startswith("statistic 1") for m in messages)  # the count declares none
    assert not Listing.objects.exists()


def test_confirmed_categories_make_the_listing_and_the_confirmation_is_not_stored(owner, public_dataset, api):
    dataset, _ = public_dataset(relation="private_size")
    confirmed = [{**s, "categories_public": True} for s in (BY_ISLAND, TABLE, MEAN_BY_SEX)]
    made = api(owner).post("/api/v1/listings/", _body(dataset, [{"kind": "count"}, *confirmed]), format="json")
    assert made.status_code == 201, made.json()
    listing = Listing.objects.get()
    assert listing.statistics[1] == BY_ISLAND
    assert all("categories_public" not in s for s in listing.statistics)
    assert all("categories_public" not in s for s in made.json()["statistics"])


def test_a_statistic_declaring_no_categories_needs_no_confirmation(owner, public_dataset, api):
    dataset, _ = public_dataset(relation="private_size")
    made = api(owner).post("/api/v1/listings/", _body(dataset, [{"kind": "count"}, {
        "kind": "mean", "column": "mass", "lower": 2000, "upper": 7000}]), format="json")
    assert made.status_code == 201, made.json()


def test_the_service_itself_refuses_unconfirmed_categories(owner, public_dataset):
    """The browser's form asks for the confirmation first; the service is the rule for every way in."""
    dataset, _ = public_dataset()
    with pytest.raises(InvalidInput) as refused:
        listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=[BY_ISLAND], ceiling="1",
                       price_per_epsilon="1.00")
    assert refused.value.fields["statistics"][0].startswith("statistic 1 (count): ")
    assert not Listing.objects.exists()


def test_microdata_categories_need_the_confirmation_per_column(owner, public_dataset, api):
    dataset, _ = public_dataset()
    columns = [{"column": "island", "categories": ISLANDS}, {"column": "sex", "categories": ["female", "male"],
                                                              "categories_public": True}]
    body = {"dataset": dataset.public_id, "title": "Penguins", "price_per_epsilon": "1.00",
            "microdata": {"columns": columns, "levels": ["1", "2"]}}
    refused = api(owner).post("/api/v1/listings/microdata/", body, format="json")
    assert refused.status_code == 400, refused.json()
    messages = refused.json()["error"]["fields"]["microdata"]
    assert any(m.startswith("column 1 (island): ") and "categories_public: true" in m for m in messages), messages
    assert not any(m.startswith("column 2") for m in messages)
    assert not Listing.objects.exists()
    columns[0]["categories_public"] = True
    made = api(owner).post("/api/v1/listings/microdata/", body, format="json")
    assert made.status_code == 201, made.json()
    assert Listing.objects.get().microdata().fields[0].categories == tuple(ISLANDS)
