"""The owner's pages: dashboard, dataset upload, listing creation, a listing's figures."""

from tests.datasets import ready_dataset
import html
import json
import re
from decimal import Decimal
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from market.trading import dashboard
from market.catalog.models import Dataset, Listing
from market.trading.models import Purchase
from market.trading.services import purchase_create, purchase_fail
from releases.models import NoisePoint

from tests.fixtures.market import make_csv, old_float_listing

pytestmark = pytest.mark.django_db

OWNER = reverse("web:owner")
DATASET_NEW = reverse("web:owner-dataset-new")
LISTING_NEW = reverse("web:owner-listing-new")


def owner_listing(listing_id) -> str:
    return reverse("web:owner-listing", args=[listing_id])


def text(response) -> str:
    """The page with HTML entities decoded (quotes in messages are escaped)."""
    return html.unescape(response.content.decode())


def error_of(response, field_id: str) -> str:
    """The text of the error list shown with one input (its id is ``<input id>_error``)."""
    found = re.search(rf'<ul class="errorlist" id="{re.escape(field_id)}_error">(.*?)</ul>', text(response), re.S)
    return found.group(1) if found else ""


def row_block(response, number: int) -> str:
    """The HTML of statistic row ``number`` (1-based) of the listing form."""
    blocks = text(response).split('<fieldset class="stat-row')[1:]
    return blocks[number - 1].split("</fieldset>")[0]


def figure(page: str, figure_id: str) -> str:
    """The markup of one chart (an SVG the server drew) in its ``<figure>``."""
    return re.search(rf'<figure class="plot-figure" id="{figure_id}">(.*?)</figure>', page, re.S).group(1)


def buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    purchase.refresh_from_db()
    return purchase


@pytest.fixture
def signed_in(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in


def listing_post(dataset, rows, **fields) -> dict:
    """The listing form as posted: the listing's fields and the statistic rows (dicts)."""
    data = {
        "dataset": dataset.public_id,
        "title": "Ages",
        "description": "",
        "ceiling": "2",
        "price_per_epsilon": "3.50",
        "stats-TOTAL_FORMS": str(len(rows)),
        "stats-INITIAL_FORMS": "0",
        "stats-MIN_NUM_FORMS": "0",
        "stats-MAX_NUM_FORMS": "20",
    }
    for i, row in enumerate(rows):
        for name, value in row.items():
            data[f"stats-{i}-{name}"] = value
        data.setdefault(f"stats-{i}-kind", "")
    data.update(fields)
    return data


BLANK = {}


# --- who may see what


@pytest.mark.parametrize("url", [OWNER, DATASET_NEW, LISTING_NEW, "/owner/listings/1/"])
def test_anonymous_visitors_are_sent_to_log_in(client, url):
    answer = client.get(url)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", [OWNER, DATASET_NEW, LISTING_NEW, "/owner/listings/1/"])
def test_a_signed_in_non_owner_is_told_how_to_become_one(signed_in, buyer, url):
    answer = signed_in(buyer).get(url)
    assert answer.status_code == 403
    page = text(answer)
    assert "Owner tools are for data owners" in page and "How to become an owner" in page


def test_another_owners_listing_and_dataset_do_not_exist(signed_in, listing, users):
    intruder = users("mallory", owner=True)
    ready_dataset(owner=intruder, name="mine", data=make_csv(20), total_budget="100")
    client = signed_in(intruder)
    assert client.get(owner_listing(listing.pk)).status_code == 404
    assert client.get(f"{LISTING_NEW}?dataset={listing.dataset.public_id}").status_code == 404
    assert "Clinic visits" not in text(client.get(OWNER))

    posted = client.post(LISTING_NEW, listing_post(listing.dataset, [{"kind": "count"}]))
    assert posted.status_code == 200
    assert "Choose one of your datasets." in error_of(posted, "id_dataset")
    assert Listing.objects.count() == 1  # only the victim's


# --- the dashboard


def test_dashboard_lists_datasets_and_listings_with_their_figures(signed_in, owner, make_listing):
    listing = make_listing(budget="8")
    page = text(signed_in(owner).get(OWNER))
    assert "Upload a dataset" in page and "Create a listing" in page
    assert listing.title in page and owner_listing(listing.pk) in page
    assert "visits" in page and "500" in page and "age, income, visits" in page
    cells = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "ε 8 ε 5 ε 0" in cells  # the dataset's budget, its listings' ceilings, spent so far


def test_the_overview_takes_the_same_queries_for_one_listing_or_many(owner, make_listing):
    make_listing()
    with CaptureQueriesContext(connection) as one:
        dashboard.owner_overview(user=owner)
    make_listing()
    make_listing()
    with CaptureQueriesContext(connection) as three:
        overview = dashboard.owner_overview(user=owner)
    assert len(overview["listings"]) == 3 and len(one.captured_queries) == len(three.captured_queries)


# --- uploading a dataset


def upload(client, content: bytes, **fields):
    data = {"name": "Clinic", "description": "patients", "total_budget": "100", **fields}
    data["file"] = SimpleUploadedFile("clinic.csv", content, content_type="text/csv")
    return client.post(DATASET_NEW, data)


def test_the_upload_form_takes_a_csv_file(signed_in, owner):
    page = text(signed_in(owner).get(DATASET_NEW))
    assert 'type="file"' in page and 'accept=".csv,.tsv,.txt,.gz,.parquet,text/csv"' in page
    assert 'enctype="multipart/form-data"' in page
    for field in ("id_name", "id_description", "id_source", "id_licence", "id_file", "id_total_budget", "id_relation_0",
                  "id_record_name"):
        assert f'<label for="{field}"' in page


def test_an_upload_is_stored_and_leads_to_creating_a_listing(signed_in, owner):
    client = signed_in(owner)
    answer = upload(client, make_csv(150), total_budget="6", relation="public_size", record_name="visit", record_name_plural="visits")
    dataset = Dataset.objects.get(owner=owner)
    assert answer.status_code == 302 and answer["Location"] == f"/owner/datasets/{dataset.public_id}/columns/"
    assert dataset.column_names == ["age", "income", "visits"] and dataset.row_count == 150
    assert dataset.total_budget == Decimal("6") and dataset.public_size == 150
    assert dataset.protects == "Protects any one visit's values; the number of visits (150) is public."
    page = text(client.get(answer["Location"]))
    assert "Dataset “Clinic” uploaded" in page and "Ready: 150 records, 3 columns" in page
    # confirming the columns as inferred leads to creating a listing
    confirmed = client.post(answer["Location"], {"type-0": "integer", "missing-0": "none"})
    assert confirmed.status_code == 302 and confirmed["Location"] == f"{LISTING_NEW}?dataset={dataset.public_id}"


def test_a_bad_file_shows_its_reasons_and_keeps_nothing(signed_in, owner):
    client = signed_in(owner)
    answer = upload(client, b"age,income\n30,1000\n31\n")
    dataset = Dataset.objects.get()
    assert answer.status_code == 302 and dataset.status == "failed" and not dataset.upload_file
    page = html.unescape(text(client.get(answer["Location"])))
    assert "The file was not accepted" in page and "line 3: has 1 cells but the header has 2" in page


def test_a_wrong_column_type_is_refused_with_its_reason(signed_in, owner):
    client = signed_in(owner)
    answer = upload(client, b"id,city\n1,Oslo\n2,Bergen\n")
    refused = client.post(answer["Location"], {"type-1": "integer", "missing-1": "none"})
    assert refused.status_code == 200
    assert "column 'city': 2 values are not whole numbers, first at line 2 ('Oslo')" in html.unescape(text(refused))
    assert [c["type"] for c in Dataset.objects.get().columns] == ["integer", "categorical"]


def test_a_bad_budget_is_shown_at_its_field(signed_in, owner):
    answer = upload(signed_in(owner), make_csv(20), total_budget="0")
    assert answer.status_code == 200 and "greater than 0" in error_of(answer, "id_total_budget")
    assert not Dataset.objects.exists()


def test_missing_name_and_file_are_shown_at_their_fields(signed_in, owner):
    answer = signed_in(owner).post(DATASET_NEW, {"name": ""})
    assert answer.status_code == 200
    assert "required" in error_of(answer, "id_name") and "required" in error_of(answer, "id_file")


# --- creating a listing


@pytest.fixture
def dataset(owner):
    return ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="3")


def test_the_listing_form_shows_the_columns_and_four_rows(signed_in, owner, dataset):
    page = text(signed_in(owner).get(LISTING_NEW))  # the newest dataset by default
    assert 'name="stats-TOTAL_FORMS" value="4"' in page
    age = next(c for c in dataset.columns if c["name"] == "age")
    assert f'<li>age <small>({age["type"]})</small></li>' in page  # the columns, not their ranges
    assert reverse("web:owner-dataset-columns", args=[dataset.public_id]) + "#values-seen" in page
    assert '<option value="income">income</option>' in page
    assert "its listings' ceilings take ε 0, so this ceiling can be at most ε 3" in page
    for field in ("id_title", "id_ceiling", "id_price_per_epsilon", "id_stats-0-kind", "id_stats-3-bins"):
        assert f'<label for="{field}"' in page


def test_a_listing_is_created_from_the_used_rows(signed_in, owner, dataset):
    rows = [
        {"kind": "count"},
        BLANK,
        {"kind": "mean", "column": "age", "lower": "0", "upper": "100"},
        {"kind": "histogram", "column": "visits", "bins": "0, 2, 5, 20"},
    ]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows))
    listing = Listing.objects.get()
    assert answer.status_code == 302 and answer["Location"] == owner_listing(listing.pk)
    assert listing.statistics == [
        {"kind": "count"},
        {"kind": "mean", "column": "age", "lower": 0.0, "upper": 100.0, "grid": "1"},  # an integer column's default
        {"kind": "histogram", "column": "visits", "bins": [0.0, 2.0, 5.0, 20.0]},
    ]
    # the mean divides by the private size: a size release at a tenth of the ceiling, the rest for sale
    assert (listing.total_level, listing.size_level, listing.ceiling) == (Decimal("2"), Decimal("0.2"), Decimal("1.8"))
    assert listing.price_per_epsilon == Decimal("3.50")


def test_incomplete_rows_are_shown_at_their_inputs(signed_in, owner, dataset):
    rows = [
        {"kind": "sum", "column": "age"},
        {"kind": "histogram", "column": "age", "bins": "0, ten, 100"},
        {"column": "age"},
    ]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows, title=""))
    assert answer.status_code == 200
    assert "Required for a sum." in error_of(answer, "id_stats-0-lower")
    assert "Required for a sum." in error_of(answer, "id_stats-0-upper")
    assert "'ten' is not a number" in html.unescape(error_of(answer, "id_stats-1-bins"))
    assert "Choose a kind for this row" in error_of(answer, "id_stats-2-kind")
    assert "required" in error_of(answer, "id_title")
    assert not Listing.objects.exists()


def test_a_statistics_error_is_shown_at_the_row_it_came_from(signed_in, owner, dataset):
    rows = [{"kind": "count"}, BLANK, {"kind": "sum", "column": "age", "lower": "10", "upper": "5"}]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows))
    assert answer.status_code == 200
    # the service numbers the used rows only: its "statistic 2" is the third row on the page
    assert "lower must be below upper" in row_block(answer, 3)
    assert "statistic 2" not in row_block(answer, 3)
    assert "lower must be below upper" not in row_block(answer, 1)


def test_a_duplicate_statistic_names_rows_as_numbered_on_the_page(signed_in, owner, dataset):
    rows = [BLANK, {"kind": "count"}, BLANK, {"kind": "count"}]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows))
    assert answer.status_code == 200 and "same as statistic 2" in row_block(answer, 4)
    assert not Listing.objects.exists()
    assert not Listing.objects.exists()


def test_no_statistics_at_all_is_shown_above_the_rows(signed_in, owner, dataset):
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, [BLANK] * 4))
    assert answer.status_code == 200
    page = text(answer)
    assert "the list of statistics is empty" in page.split('<fieldset class="stat-row')[0].split('id="statistics"')[1]
    assert not Listing.objects.exists()


def test_a_ceiling_over_the_datasets_budget_is_shown_at_the_ceiling(signed_in, owner, dataset):
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, [{"kind": "count"}], ceiling="5"))
    assert answer.status_code == 200 and "At most 3" in error_of(answer, "id_ceiling")
    assert not Listing.objects.exists()


def test_a_negative_price_is_shown_at_the_price(signed_in, owner, dataset):
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, [{"kind": "count"}], price_per_epsilon="-1"))
    assert answer.status_code == 200 and "Must be at least 0." in error_of(answer, "id_price_per_epsilon")
    assert not Listing.objects.exists()


def test_adding_a_row_keeps_what_was_typed_and_saves_nothing(signed_in, owner, dataset):
    rows = [{"kind": "sum", "column": "income", "lower": "0", "upper": "1e6"}] + [BLANK] * 3
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows, title="Incomes", action="add-row"))
    page = text(answer)
    assert answer.status_code == 200 and not Listing.objects.exists()
    assert 'name="stats-TOTAL_FORMS" value="5"' in page
    assert 'value="Incomes"' in page and '<option value="income" selected>' in page
    assert 'class="errorlist"' not in page

    flooded = listing_post(dataset, rows, action="add-row", **{"stats-TOTAL_FORMS": "1000000"})
    assert 'name="stats-TOTAL_FORMS" value="20"' in text(signed_in(owner).post(LISTING_NEW, flooded))


def test_choosing_another_dataset_shows_its_columns(signed_in, owner, dataset):
    other = ready_dataset(owner=owner, name="heights", data=b"height,weight\n170,60\n182,81\n", total_budget="100")
    client = signed_in(owner)
    newest = text(client.get(LISTING_NEW))
    assert '<option value="height">height</option>' in newest and f'<option value="{other.public_id}" selected>' in newest
    older = text(client.get(f"{LISTING_NEW}?dataset={dataset.public_id}"))
    assert '<option value="age">age</option>' in older and '<option value="height">' not in older
    assert f'name="dataset" value="{dataset.public_id}"' in older


# --- a listing's figures


def test_a_listings_figures_buyers_and_privacy_spent(
    signed_in, owner, listing, users, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    first, second = users("ann"), users("ben")
    for who in (first, second):
        fund(who, 100)
    cheap = buy(first, listing, "0.5", django_capture_on_commit_callbacks)
    dear = buy(second, listing, "2", django_capture_on_commit_callbacks)
    assert cheap.status == dear.status == "released"

    answer = signed_in(owner).get(owner_listing(listing.pk))
    assert answer.status_code == 200
    context = answer.context
    assert context["sales"] == 2 and context["revenue"] == cheap.price + dear.price == Decimal("25.00")
    # the largest level released, 2, and the size release's 0.5; the ceiling is the listing's total
    assert context["spent"] == Decimal("2.5") and context["ceiling"] == Decimal("5")
    assert [(b["username"], b["purchased"], b["released"]) for b in context["buyers"]] == [
        ("ben", Decimal("2"), Decimal("2")),
        ("ann", Decimal("0.5"), Decimal("0.5")),
    ]
    points = [(p["level"], p["method"]) for p in context["points"]]
    assert points == [(Decimal("0.5"), "initial"), (Decimal("2"), "relax")]

    page = text(answer)
    gauge = figure(page, "privacy-gauge")
    assert "ε 2.5 spent of ε 5" in gauge  # the largest level released and the size release
    track, fill = (float(w) for w in re.findall(r'class="meter-(?:track|fill)" x="8" y="26" width="([\d.]+)"', gauge))
    assert fill == pytest.approx(track * 2.5 / 5, abs=0.1)  # 2.5 of the ceiling 5
    revenue = figure(page, "revenue-chart")
    assert [title.split(": ")[1] for title in re.findall(r"<rect [^>]*><title>(.*?)</title>", revenue)] == ["25"]
    assert "25.00 credits" in page
    sentence = " ".join(page.split())  # the template wraps lines
    assert "2 buyers together learn no more than the one who bought the highest level (ε 2)" in sentence
    assert "although their levels add up to ε 2.5" in sentence
    assert ("Your spent privacy is that largest level plus the size release's ε 0.5 (its noisy counts of each mean's "
            "cell, published to everyone when the listing was made), 2.5 of your ceiling 5.") in sentence
    for name in ("ann", "ben"):
        assert f"<td>{name}</td>" in page
    assert "<script" not in page.split("<main", 1)[1].split("</main>")[0]  # charts drawn by the server: no script
    assert 'id="privacy-gauge"><svg class="plot"' in page
    assert "Mean of age (each value clamped to 0 … 100; derived from the released sum and count)" in page
    assert "Histogram of age in 50 bins from 0 to 100" in page


def test_failed_and_pending_purchases_are_not_sales(signed_in, owner, listing, buyer, users, fund):
    fund(buyer, 100)
    # outside a captured commit, the releases are never queued: both stay in flight
    failed, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    purchase_fail(purchase_id=failed.pk, reason="test")
    waiting = users("wendy")
    fund(waiting, 100)
    purchase_create(buyer=waiting, listing_id=listing.pk, epsilon="0.5")

    answer = signed_in(owner).get(owner_listing(listing.pk))
    assert answer.context["sales"] == 0 and answer.context["revenue"] == Decimal("0.00")
    assert answer.context["in_flight"] == {"count": 1, "amount": Decimal("5.00")}
    # nothing sold: only the size release (a tenth of the ceiling) is spent
    assert answer.context["spent"] == Decimal("0.5") and "ε 0.5 spent of ε 5" in answer.context["gauge"]
    overview = dashboard.owner_overview(user=owner)
    assert overview["listings"][0]["sales"] == 0 and overview["totals"]["revenue"] == Decimal("0.00")
    assert Purchase.objects.filter(status="failed").count() == 1


def test_the_owners_pages_never_show_stored_noise(
    signed_in, owner, listing, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    buy(buyer, listing, "3", django_capture_on_commit_callbacks)
    client = signed_in(owner)
    pages = [text(client.get(url)) for url in (OWNER, owner_listing(listing.pk))]
    # lattice noise is small whole numbers, which any page holds somewhere: look for each
    # level's noise vector as a sequence, as a list or a table would print it
    points = list(NoisePoint.objects.filter(path__listing=listing))
    assert listing.engine == "lattice" and len(points) == 2
    for point in points:
        noise = [int(v) for v in point.integers()]
        assert len(noise) == listing.dim and any(noise)
        for shown in (", ".join(map(str, noise)), ",".join(map(str, noise))):
            assert all(shown not in page for page in pages), shown


# --- every form


class _Forms(HTMLParser):
    """Each form of a page: its method and the names of its inputs."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"method": (attrs.get("method") or "get").lower(), "inputs": []})
        elif tag in ("input", "select", "textarea", "button") and self.forms:
            self.forms[-1]["inputs"].append(attrs.get("name"))


def test_every_form_that_posts_carries_a_csrf_token(signed_in, owner, listing):
    client = signed_in(owner)
    for url in (OWNER, DATASET_NEW, LISTING_NEW, owner_listing(listing.pk)):
        parser = _Forms()
        parser.feed(client.get(url).content.decode())
        posting = [form for form in parser.forms if form["method"] == "post"]
        assert posting, url  # at least the header's log-out form
        assert all("csrfmiddlewaretoken" in form["inputs"] for form in posting), url
        # the dataset picker is a GET form: a token there would end up in the address
        assert all("csrfmiddlewaretoken" not in form["inputs"] for form in parser.forms if form["method"] == "get")


# --- the listing builder: group-by, filters, tables; any kind on the listing's page


def test_the_owners_page_of_a_vector_listing_renders(signed_in, owner, buyer, fund, eager_celery,
                                                    before_float_retirement):
    """Issue 12: the owner's page of a centroid listing crashed with KeyError: 'bins'. An old centroid
    listing (the float path is retired): its page says its floating-point noise is retired."""
    data = ready_dataset(owner=owner, name="points", data=make_csv(50), total_budget="10", relation="public_size")
    listing = old_float_listing(
        data, [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 40000], "radius": 100}],
        ceiling="2", price="1.00", title="Mean point",
    )
    fund(buyer, 100)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    answer = signed_in(owner).get(owner_listing(listing.pk))
    assert answer.status_code == 200
    page = text(answer)
    assert "Centroid of (age, income)" in page and "floating-point noise is retired" in page
    assert "δ below" not in page


def _typed(dataset, **types):
    """Give the dataset's columns types (as an ingested dataset has), with the values seen in a categorical one."""
    dataset.columns = [
        {"name": name, "type": types.get(name, "decimal"), "missing": "none",
         **({"categories": [{"value": v, "count": 10} for v in ("1", "2", "3")]} if types.get(name) == "categorical" else {})}
        for name in ("age", "income", "visits")
    ]
    dataset.save(update_fields=["columns"])
    return dataset


def test_the_builder_offers_each_input_only_the_columns_it_may_read(signed_in, owner, dataset):
    _typed(dataset, visits="categorical")
    page = text(signed_in(owner).get(LISTING_NEW))
    column = page.split('name="stats-0-column"')[1].split("</select>")[0]
    by = page.split('name="stats-0-by"')[1].split("</select>")[0]
    where = page.split('name="stats-0-where_0_column"')[1].split("</select>")[0]
    assert '"age"' in column and '"visits"' not in column
    assert '"visits"' in by and '"age"' not in by
    assert all(f'"{name}"' in where for name in ("age", "income", "visits"))
    assert "I confirm these categories are public" in page
    builder = json.loads(page.split('<script id="listing-builder" type="application/json">')[1].split("</script>")[0])
    assert set(builder) == {"kinds", "types"} and builder["types"]["visits"] == "categorical"  # no values of the data
    assert "by" in builder["kinds"]["count"] and "bins" in builder["kinds"]["histogram"]


def test_an_unconfirmed_group_by_comes_back_with_no_categories_filled_in(signed_in, owner, dataset):
    _typed(dataset, visits="categorical")
    rows = [{"kind": "count", "by": "visits", "where_0_column": "age", "where_0_op": ">=", "where_0_value": "old"}]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows))
    assert answer.status_code == 200 and not Listing.objects.exists()
    assert "List the categories of visits" in error_of(answer, "id_stats-0-categories")
    assert "'old' is not a number" in error_of(answer, "id_stats-0-where_0_value")
    block = row_block(answer, 1)
    assert re.search(r'name="stats-0-categories"[^>]*>\s*</textarea>', block)  # nothing from the data
    assert 'name="stats-0-categories_public"' in block and "checked" not in block.split('categories_public"')[1][:40]


def test_adding_a_row_fills_in_no_categories_from_the_data(signed_in, owner, dataset):
    _typed(dataset, visits="categorical")
    rows = [{"kind": "count", "by": "visits", "categories_public": "on"}]
    answer = signed_in(owner).post(LISTING_NEW, listing_post(dataset, rows, action="add-row"))
    assert answer.status_code == 200 and 'class="errorlist"' not in text(answer)
    block = row_block(answer, 1)
    assert re.search(r'name="stats-0-categories"[^>]*>\s*</textarea>', block)
    assert '<option value="visits" selected>' in block
