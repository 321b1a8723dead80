"""The exact lattice path seen through the pages, the downloads and the API (Django's test client):
an owner builds a count, a histogram and a sum on a 0.01 grid; a buyer's release reads whole
numbers for the counts and bins and at most two decimals for the sum, everywhere it is shown."""

import csv
import html
import io
import json
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from market.catalog.models import Listing
from market.trading.models import Purchase
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db

LISTING_NEW = reverse("web:owner-listing-new")
WHOLE = re.compile(r"-?\d+")
CENTS = re.compile(r"-?\d+(\.\d{1,2})?")
ROWS = [
    {"kind": "count"},
    {"kind": "histogram", "column": "age", "bins": "0, 30, 60, 90"},
    {"kind": "sum", "column": "income", "lower": "0", "upper": "200000", "grid": "0.01"},
]


def text(response) -> str:
    return html.unescape(response.content.decode())


def listing_post(dataset, rows) -> dict:
    data = {"dataset": dataset.public_id, "title": "Exact clinic", "description": "", "ceiling": "2",
            "price_per_epsilon": "3.00", "stats-TOTAL_FORMS": str(len(rows)), "stats-INITIAL_FORMS": "0"}
    for i, row in enumerate(rows):
        data.update({f"stats-{i}-{name}": value for name, value in row.items()})
    return data


def cells(page: str) -> dict[str, str]:
    """The release table of a purchase page: label -> the value cell's text."""
    rows = re.findall(r'<tr><th scope="row">(.*?)</th><td class="num">(.*?)</td>', page)
    return {label: value.strip() for label, value in rows}


def test_a_count_histogram_and_sum_on_a_grid_are_released_as_whole_numbers_and_cents(
    client, owner, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="5")
    client.force_login(owner)
    created = client.post(LISTING_NEW, listing_post(dataset, ROWS))
    listing = Listing.objects.get()
    assert created.status_code == 302, text(created)
    assert listing.engine == "lattice" and listing.statistics[2]["grid"] == "0.01"
    grids = dict(zip(listing.labels, listing.grids))
    total = next(label for label in grids if label.startswith("sum("))
    wholes = [label for label in grids if label != total]  # the count and three bins
    assert len(wholes) == 4 and {grids[label] for label in wholes} == {"1"} and grids[total] == "0.01"

    for page in (text(client.get(created["Location"])), text(client.get(reverse("web:listing", args=[listing.pk])))):
        assert "Exact integer noise, exactly ε-differentially private" in page
        assert "exactly ε-differentially private, with no exception (δ = 0)" in page
        assert "each value rounded to a multiple of 0.01" in page
        assert "Floating-point" not in page

    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(reverse("web:listing-buy", args=[listing.pk]), {"epsilon": "1"})
    purchase = Purchase.objects.get()
    assert purchase.status == "released"
    shown = cells(text(client.get(bought["Location"])))
    assert sorted(shown) == sorted(grids)
    for label in wholes:
        assert WHOLE.fullmatch(shown[label]), (label, shown[label])
    assert CENTS.fullmatch(shown[total]), shown[total]

    release = purchase.release
    download = client.get(reverse("web:release-download", args=[release.public_id, "csv"]))
    values = {row["label"]: row["value"] for row in csv.DictReader(io.StringIO(download.content.decode()))}
    assert sorted(values) == sorted(grids)
    assert all(WHOLE.fullmatch(values[label]) for label in wholes), values
    assert CENTS.fullmatch(values[total]), values
    as_json = json.loads(client.get(reverse("web:release-download", args=[release.public_id, "json"])).content)
    assert {r["label"]: type(r["value"]) for r in as_json["values"] if r["label"] in wholes} == dict.fromkeys(wholes, int)

    api = APIClient()
    api.force_authenticate(buyer)
    read = json.loads(api.get(f"/api/v1/releases/{release.public_id}/").content)
    counts = [r["value"] for r in read["values"] if r["kind"] in ("count", "histogram")]
    assert len(counts) == 4 and all(type(v) is int for v in counts), counts
    released = next(r["value"] for r in read["values"] if r["kind"] == "sum")
    assert CENTS.fullmatch(repr(released).removesuffix(".0")), released
    offered = json.loads(api.get(f"/api/v1/listings/{listing.pk}/").content)
    assert offered["engine"] == "lattice"
    assert offered["statistics"][2] == {"kind": "sum", "column": "income", "lower": 0.0, "upper": 200000.0,
                                        "grid": "0.01"}


def test_a_grid_the_bounds_cannot_take_is_refused_at_the_grid_input(client, owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(50), total_budget="5")
    client.force_login(owner)
    for grid, reason in (("0.0000001", "too fine for these bounds"), ("1000000", "coarser than the bounds")):
        rows = [{"kind": "count"}, {**ROWS[2], "grid": grid}]
        answer = client.post(LISTING_NEW, listing_post(dataset, rows))
        assert answer.status_code == 200
        found = re.search(r'<ul class="errorlist" id="id_stats-1-grid_error">(.*?)</ul>', text(answer), re.S)
        assert found and reason in found.group(1), grid
    assert not Listing.objects.exists()


def test_the_builder_offers_the_grid_to_sums_and_means_with_its_help(client, owner):
    ready_dataset(owner=owner, name="visits", data=make_csv(50), total_budget="5")
    client.force_login(owner)
    page = text(client.get(LISTING_NEW))
    assert page.count('data-input="grid"') == 4  # one per row
    assert 'placeholder="from the bounds"' in page
    assert "rounded to a multiple of this" in page and "whole number of grid steps" in page
    builder = json.loads(re.search(r'<script id="listing-builder" type="application/json">(.*?)</script>',
                                   page, re.S).group(1))
    assert [kind for kind, inputs in builder["kinds"].items() if "grid" in inputs] == ["sum", "mean", "centroid"]
