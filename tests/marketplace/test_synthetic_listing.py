"""A synthetic-data listing through the product: listed through the API on a dataset whose number of
records is public, bought at two levels, its rows downloaded as CSV and Parquet, the same for every
buyer of a level and every download, drawn from the release's tables alone."""

import io
from decimal import Decimal

import numpy as np
import pyarrow.parquet as pq
import pytest

from market.catalog.models import Dataset, Listing
from market.catalog.services import dataset_columns_set, dataset_process
from market.catalog.synthetic import sizes_of
from market.trading.models import Purchase
from market.trading.services import purchase_create
from releases.engine.synthetic import Workload
from releases.models import Release
from tests.datasets import ready_dataset

pytestmark = pytest.mark.django_db

CSV = b"species,island,mass,sex\n" + b"".join(
    f"{s},{i},{m},{x}\n".encode()
    for s, i, m, x in zip(
        ["Adelie", "Gentoo", "Chinstrap"] * 100, ["Biscoe", "Dream", "Biscoe", "Torgersen"] * 75,
        np.linspace(2800, 6200, 300).round(), ["female", "male", ""] * 100)
)
SPEC = [{"kind": "synthetic", "categories_public": True, "columns": [
    {"column": "species", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
    {"column": "island", "categories": ["Biscoe", "Dream", "Torgersen"]},
    {"column": "mass", "bins": [3000, 4000, 5000, 6000]},
    {"column": "sex", "categories": ["female", "male"]},
]}]


def _listed(owner, *, budget: str, ceiling: str, price: str):
    """A synthetic-data listing of species, island and mass (every record counted in each) on the birds,
    whose number is public."""
    from market.catalog.services import listing_create

    dataset = ready_dataset(owner=owner, name="birds", data=CSV, relation="public_size", total_budget=budget)
    spec = [{**SPEC[0], "columns": SPEC[0]["columns"][:3]}]
    return listing_create(owner=owner, dataset_id=dataset.public_id, title="Birds", statistics=spec, ceiling=ceiling,
                          price_per_epsilon=price)


def _buy(buyer, listing, level, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level)
    return Purchase.objects.get(pk=purchase.pk).release


def test_rows_are_drawn_from_the_release_and_the_same_for_every_buyer_of_a_level(
        owner, users, fund, api, eager_celery, django_capture_on_commit_callbacks):
    dataset = ready_dataset(owner=owner, name="birds", data=CSV, relation="public_size", total_budget="10")
    dataset_columns_set(owner=owner, dataset_id=dataset.public_id, columns=[{"name": "sex", "missing": "category"}])
    dataset_process(dataset_id=dataset.pk)
    dataset = Dataset.objects.get(pk=dataset.pk)
    made = api(owner).post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "Birds, synthetic",
                                                 "statistics": SPEC, "ceiling": "4", "price_per_epsilon": "1"},
                           format="json")
    assert made.status_code == 201, made.content
    listing = Listing.objects.get(pk=made.json()["id"])
    sizes = sizes_of(listing.statistics[0], listing.labels)
    assert sizes == (4, 4, 3, 4)  # categories and "other", three bins, and "missing" for sex
    assert len(listing.labels) == Workload(sizes).width

    bea, cal = users("bea"), users("cal")
    for buyer in (bea, cal):
        fund(buyer, 100)
    first = _buy(bea, listing, "1", django_capture_on_commit_callbacks)
    same_level = _buy(cal, listing, "1", django_capture_on_commit_callbacks)
    higher = _buy(bea, listing, "4", django_capture_on_commit_callbacks)

    shown = api(bea).get(f"/api/v1/releases/{first.public_id}/").json()
    assert shown["synthetic"]["columns"] == ["species", "island", "mass", "sex"] and shown["synthetic"]["rows"] == 300
    csv_link, parquet_link = shown["synthetic"]["rows_csv"], shown["synthetic"]["rows_parquet"]
    got = api(bea).get(csv_link)
    assert got.status_code == 200 and got["Content-Type"] == "text/csv"
    text = got.content.decode()
    lines = text.strip().splitlines()
    assert lines[0] == '"species","island","mass","sex"' and len(lines) == 301
    assert api(bea).get(csv_link).content == got.content  # the same file every time
    theirs = api(cal).get(f"/api/v1/releases/{same_level.public_id}/rows.csv")
    assert theirs.content == got.content  # and for every buyer of the level
    assert api(cal).get(csv_link).status_code == 404  # never another buyer's release

    table = pq.read_table(io.BytesIO(api(bea).get(parquet_link).content)).to_pandas()
    assert len(table) == 300
    assert set(table["species"]) <= {"Adelie", "Chinstrap", "Gentoo", "other"}
    assert set(table["sex"].dropna()) <= {"female", "male", "other"}
    masses = table["mass"].dropna()
    assert masses.between(3000, 6000).all()

    upgraded = api(bea).get(f"/api/v1/releases/{higher.public_id}/rows.csv").content
    assert upgraded != got.content and len(upgraded.decode().strip().splitlines()) == 301
    assert Release.objects.filter(listing=listing).count() == 3


def test_rows_of_other_listings_are_not_found(owner, users, fund, api, eager_celery,
                                               django_capture_on_commit_callbacks):
    dataset = ready_dataset(owner=owner, name="birds", data=CSV, total_budget="10")
    made = api(owner).post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "Counts",
                                                 "statistics": [{"kind": "count"}], "ceiling": "1",
                                                 "price_per_epsilon": "1"}, format="json")
    listing = Listing.objects.get(pk=made.json()["id"])
    bea = users("bea")
    fund(bea, 100)
    release = _buy(bea, listing, "1", django_capture_on_commit_callbacks)
    assert api(bea).get(f"/api/v1/releases/{release.public_id}/").json()["synthetic"] is None
    answer = api(bea).get(f"/api/v1/releases/{release.public_id}/rows.csv")
    assert answer.status_code == 404 and "synthetic-data releases" in answer.json()["error"]["message"]
    assert Decimal(1) == release.level


def test_declared_categories_must_be_confirmed_public(owner, api):
    dataset = ready_dataset(owner=owner, name="birds", data=CSV, relation="public_size", total_budget="10")
    spec = [{"kind": "synthetic", "columns": SPEC[0]["columns"][:3]}]  # no categories_public
    answer = api(owner).post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "Birds", "statistics": spec,
                                                   "ceiling": "1", "price_per_epsilon": "1"}, format="json")
    assert answer.status_code == 400 and "categories_public: true" in answer.json()["error"]["message"]
    assert not Listing.objects.exists()


def test_each_table_states_its_expected_error_before_purchase_and_buying_by_accuracy_meets_it(owner, users, api):
    """On the lattice path with the number of records public, a table of c cells is quoted
    c E|Z| / (2n): E|Z| = 2a / (1 - a^2) of discrete Laplace noise at a = e^(-eps / 2m) (m tables, each
    moved by two cells when a record is replaced). A target on one table buys the least level meeting it."""
    import math

    dataset = ready_dataset(owner=owner, name="birds", data=CSV, relation="public_size", total_budget="10")
    spec = [{**SPEC[0], "columns": SPEC[0]["columns"][:3]}]
    made = api(owner).post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "Birds", "statistics": spec,
                                                 "ceiling": "8", "price_per_epsilon": "1"}, format="json")
    listing_id = made.json()["id"]
    bea = users("bea")
    quote = api(bea).get(f"/api/v1/listings/{listing_id}/quote/?epsilon=2").json()
    figures = {s["name"]: s["error_bound"] for s in quote["statistics"]}
    assert list(figures) == ["expected TVD of the species table", "expected TVD of the island table",
                             "expected TVD of the mass table", "expected TVD of the species × island table",
                             "expected TVD of the species × mass table", "expected TVD of the island × mass table"]
    a = math.exp(-2 / (2 * 6))
    each = 2 * a / (1 - a * a)
    assert figures["expected TVD of the species × island table"] == pytest.approx(16 * each / 600)
    assert figures["expected TVD of the mass table"] == pytest.approx(3 * each / 600)
    target = "expected TVD of the species × island table:0.1"
    bought = api(bea).get(f"/api/v1/listings/{listing_id}/quote/", {"target": target}).json()
    level = float(bought["epsilon"])
    at = lambda eps: 16 * 2 * math.exp(-eps / 12) / (1 - math.exp(-eps / 6)) / 600  # noqa: E731
    assert at(level) <= 0.1 < at(level - 0.01)


def test_the_buyers_pages_offer_the_rows(owner, users, fund, client, eager_celery, django_capture_on_commit_callbacks):
    from django.urls import reverse

    listing = _listed(owner, budget="10", ceiling="2", price="1")
    bea = users("bea")
    fund(bea, 100)
    release = _buy(bea, listing, "1", django_capture_on_commit_callbacks)
    client.force_login(bea)
    page = client.get(reverse("web:purchase", args=[release.purchase_id])).content.decode()
    link = reverse("web:release-rows", args=[release.public_id, "csv"])
    assert "Synthetic rows of species, island, mass: 300 rows" in page and link in page
    assert link in client.get(reverse("web:library")).content.decode()
    rows = client.get(link)
    assert rows.status_code == 200 and rows.content.decode().startswith('"species","island","mass"')
    client.force_login(users("cal"))
    assert client.get(link).status_code == 404


def test_only_the_owner_sees_the_delivered_quality_and_it_improves_with_the_level(
        owner, users, fund, client, eager_celery, django_capture_on_commit_callbacks):
    from django.urls import reverse

    from market.catalog.selectors import listing_delivered_quality
    from market.core.errors import NotFound

    listing = _listed(owner, budget="40", ceiling="32", price="0.1")
    bea = users("bea")
    fund(bea, 100)
    for level in ("0.5", "32"):
        _buy(bea, listing, level, django_capture_on_commit_callbacks)
    found = listing_delivered_quality(user=owner, listing_id=listing.pk)
    assert [q["level"] for q in found] == [Decimal("0.5"), Decimal("32")] and all(q["rows"] == 300 for q in found)
    assert found[1]["tvd"] < found[0]["tvd"] and found[1]["tvd"] < 0.1
    with pytest.raises(NotFound):  # another user's, even a buyer's: it reads the data's true tables
        listing_delivered_quality(user=bea, listing_id=listing.pk)
    client.force_login(owner)
    page = client.get(reverse("web:owner-listing", args=[listing.pk])).content.decode()
    assert "Delivered quality (only you see this)" in page and f"{found[1]['tvd']:.3f}" in page
    served = client.get(f"/api/v1/listings/{listing.pk}/quality/").json()
    assert served["listing"] == listing.pk and [q["tvd"] for q in served["levels"]] == [q["tvd"] for q in found]
    assert [q["level"] for q in served["levels"]] == ["0.5000", "32.0000"]
    client.force_login(bea)
    assert client.get(f"/api/v1/listings/{listing.pk}/quality/").status_code == 404


def test_the_owner_lists_synthetic_data_from_the_builder(owner, client):
    """The builder's synthetic-data row: one column per line, categories confirmed public, every table made."""
    from django.urls import reverse

    dataset = ready_dataset(owner=owner, name="birds", data=CSV, relation="public_size", total_budget="10")
    client.force_login(owner)
    post = {"dataset": dataset.public_id, "title": "Birds, synthetic", "description": "", "ceiling": "2",
            "price_kind": "linear", "price_per_epsilon": "1", "mechanism": "lattice", "stats-TOTAL_FORMS": "1",
            "stats-INITIAL_FORMS": "0", "stats-0-kind": "synthetic",
            "stats-0-synthetic_columns": "species: Adelie, Chinstrap, Gentoo\nmass: 3000, 4000, 5000, 6000\nnope: 1"}
    page = client.post(reverse("web:owner-listing-new"), post).content.decode()
    assert "line 3: &#x27;nope&#x27; is not a categorical, true/false or numeric column." in page
    post["stats-0-synthetic_columns"] = "species: Adelie, Chinstrap, Gentoo\nmass: 3000, 4000, 5000, 6000"
    unconfirmed = client.post(reverse("web:owner-listing-new"), post).content.decode()
    assert "confirm" in unconfirmed and not Listing.objects.exists()
    post["stats-0-categories_public"] = "on"
    made = client.post(reverse("web:owner-listing-new"), post)
    assert made.status_code == 302, made.content.decode()[:3000]
    listing = Listing.objects.get()
    assert listing.statistics == [{"kind": "synthetic", "columns": [
        {"column": "species", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
        {"column": "mass", "bins": [3000.0, 4000.0, 5000.0, 6000.0]}], "model": 2}]
