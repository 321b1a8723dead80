"""The Skellam path through the owner's and the buyer's pages (Django's test client): an owner gives a
dataset a δ, compares the two mechanisms on twenty counts one record moves, creates the proposed
Skellam listing, sees what the composition spends and how many more listings fit; a buyer sees the
(ε, δ) guarantee and buys a level of the ladder, released as whole numbers."""

import html
import re

import pytest
from django.urls import reverse

from market.catalog.models import Dataset, Listing
from market.trading.models import Purchase
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db

LISTING_NEW = reverse("web:owner-listing-new")
WIDE = [{"kind": "count", "where_0_column": "age", "where_0_op": ">=", "where_0_value": str(a)} for a in range(20, 60, 2)]


def text(response) -> str:
    return html.unescape(response.content.decode())


def _post(dataset, rows, **extra) -> dict:
    data = {"dataset": dataset.public_id, "title": "Ages above", "description": "", "ceiling": "1",
            "price_per_epsilon": "3.00", "stats-TOTAL_FORMS": str(len(rows)), "stats-INITIAL_FORMS": "0", **extra}
    for i, row in enumerate(rows):
        data.update({f"stats-{i}-{name}": value for name, value in row.items()})
    return data


def test_an_owner_gives_a_delta_compares_and_lists_on_the_skellam_path_and_a_buyer_buys_a_ladder_level(
    client, owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="4")
    client.force_login(owner)
    budget_page = reverse("web:owner-dataset-budget", args=[dataset.public_id])
    refused = client.post(budget_page, {"total_budget": "4", "delta": "1e-5", "reason": "allow Gaussian noise"})
    assert refused.status_code == 200 and "at most 1e-6" in text(refused)
    changed = client.post(budget_page, {"total_budget": "4", "delta": "1e-6", "reason": "allow Gaussian noise"})
    assert changed.status_code == 302
    assert Dataset.objects.get(pk=dataset.pk).delta_budget is not None

    compared = client.post(LISTING_NEW, _post(dataset, WIDE, action="compare"))
    page = text(compared)
    assert compared.status_code == 200, page
    assert 'data-proposed="skellam"' in page and "Error bounds at the ceiling, by mechanism" in page
    assert re.search(r'value="skellam"[^>]*checked|checked[^>]*value="skellam"', page)  # the proposal is chosen
    assert Listing.objects.count() == 0

    created = client.post(LISTING_NEW, _post(dataset, WIDE, mechanism="skellam", delta="1e-8"))
    assert created.status_code == 302, text(created)
    listing = Listing.objects.get()
    assert listing.mechanism == "skellam" and str(listing.delta.normalize()) == "1E-8"

    figures = text(client.get(budget_page))
    assert re.search(r'id="composed">δ \d(\.\d)?e-\d+ at ε 4', figures), figures
    fits = text(client.get(budget_page, {"fit_mechanism": "lattice", "fit_ceiling": "0.5", "fit_values": ""}))
    found = re.search(r'<p id="fits">(\d+) more listing', fits)
    assert found and int(found.group(1)) >= 6  # 3.x of the budget is left: at least 6 at 0.5 (more, composed)

    fund(buyer, 100)
    client.force_login(buyer)
    shown = text(client.get(reverse("web:listing", args=[listing.pk])))
    assert "(ε, δ)-differential privacy with δ = 1e-8" in shown
    assert "is ε-differentially private" not in shown  # it is (ε, δ)-DP: the pure claim is not made
    assert "This listing sells the levels 0.0625, 0.0937, 0.125, 0.1875, 0.25, 0.375, 0.5, 0.75, 1" in shown
    assert '<option value="0.375">ε 0.375</option>' in shown
    off = client.post(reverse("web:listing-buy", args=[listing.pk]), {"epsilon": "0.3"})
    assert off.status_code == 400 and "One of 0.0625, 0.0937" in text(off)
    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(reverse("web:listing-buy", args=[listing.pk]), {"epsilon": "0.5"})
    assert bought.status_code == 302, text(bought)
    assert Purchase.objects.get().status == "released"
    values = re.findall(r'<tr><th scope="row">(.*?)</th><td class="num">(.*?)</td>', text(client.get(bought["Location"])))
    assert len(values) == 20 and all(re.fullmatch(r"-?\d+", v.strip()) for _, v in values)


def test_an_owner_lists_a_centroid_in_the_builder_and_a_buyer_reads_the_mean_point_with_its_radius(
    client, owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    """The builder's centroid row (its own columns, center and radius inputs), the comparison proposing
    the only path that sells it, the listing's error radius before purchase and the mean point after."""
    from tests.marketplace.test_vector import locations_csv

    dataset = ready_dataset(owner=owner, name="places", data=locations_csv(), relation="public_size",
                            total_budget="10")
    Dataset.objects.filter(pk=dataset.pk).update(delta_budget="1e-6")
    client.force_login(owner)
    row = {"kind": "centroid", "points": "east, nowhere", "center": "1000", "radius": "3000"}
    wrong = text(client.post(LISTING_NEW, _post(dataset, [row], mechanism="skellam")))
    assert "'nowhere' is not a numeric column of this dataset." in wrong and Listing.objects.count() == 0
    row.update(points="east, north", center="1000, -300")
    compared = text(client.post(LISTING_NEW, _post(dataset, [row], action="compare")))
    assert 'data-proposed="skellam"' in compared and "released on the Skellam path" in compared
    lattice = text(client.post(LISTING_NEW, _post(dataset, [row], mechanism="lattice")))
    assert "a centroid is released on the Skellam path" in lattice and Listing.objects.count() == 0
    created = client.post(LISTING_NEW, _post(dataset, [row], mechanism="skellam"))
    assert created.status_code == 302, text(created)
    listing = Listing.objects.get()
    assert listing.statistics[0]["grid"] == "150" and listing.labels == ["sum(east - 1000)", "sum(north + 300)"]

    fund(buyer, 100)
    client.force_login(buyer)
    shown = text(client.get(reverse("web:listing", args=[listing.pk])))
    assert "error radius of the centroid" in shown
    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(reverse("web:listing-buy", args=[listing.pk]), {"epsilon": "1"})
    assert bought.status_code == 302, text(bought)
    release = text(client.get(bought["Location"]))
    values = dict(re.findall(r'<tr><th scope="row">(.*?)</th><td class="num">(.*?)</td>', release))
    assert set(values) == {"centroid(east)", "centroid(north)"}, release
    east, north = (float(values[k].replace(",", "")) for k in ("centroid(east)", "centroid(north)"))
    assert abs(east - 1200) < 1000 and abs(north + 350) < 1000  # the places' centre, within a few radii
