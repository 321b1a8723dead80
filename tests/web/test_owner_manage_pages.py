"""The owner's listing page manages the listing (title, description, price, close, reopen); the
listing's page shows its dataset's description, source and licence; the create-listing form shows
every error at once and marks as optional only what is."""

import html
import re

import pytest
from django.urls import reverse

from market.catalog.models import Listing
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv
from tests.web.test_owner_pages import listing_post

pytestmark = pytest.mark.django_db


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def errors_of(response, field_id: str) -> list[str]:
    found = re.search(rf'<ul class="errorlist" id="{re.escape(field_id)}_error">(.*?)</ul>', page_text(response), re.S)
    return re.findall(r"<li>(.*?)</li>", found.group(1)) if found else []


def manage(action, listing_id) -> str:
    return reverse(f"web:owner-listing-{action}", args=[listing_id])


def test_the_owner_edits_title_and_description(client, owner, listing):
    client.force_login(owner)
    page = page_text(client.get(reverse("web:owner-listing", args=[listing.pk])))
    assert "Manage this listing" in page and 'value="Clinic visits"' in page
    answer = client.post(manage("edit", listing.pk), {"title": "Clinic visits 2024", "description": "Weekly."}, follow=True)
    assert "Saved: buyers see the new title and description." in page_text(answer)
    fresh = Listing.objects.get(pk=listing.pk)
    assert (fresh.title, fresh.description) == ("Clinic visits 2024", "Weekly.")
    refused = client.post(manage("edit", listing.pk), {"title": "  ", "description": ""})
    assert refused.status_code == 400 and errors_of(refused, "id_title") == ["This field is required."]
    assert Listing.objects.get(pk=listing.pk).title == "Clinic visits 2024"


def test_the_owner_changes_the_price_and_the_page_says_what_it_does(client, owner, listing):
    client.force_login(owner)
    page = page_text(client.get(reverse("web:owner-listing", args=[listing.pk])))
    assert "P(ε) = 10.00 × ε credits" in page and "P<sub>new</sub>(b) − P<sub>new</sub>(a)" in page
    answer = client.post(manage("price", listing.pk), {"price_kind": "power", "price_per_epsilon": "3", "p": "1.5"}, follow=True)
    assert "The new price applies to purchases from now on" in page_text(answer)
    assert Listing.objects.get(pk=listing.pk).price_curve == {"kind": "power", "c": "3", "p": "1.5"}
    refused = client.post(manage("price", listing.pk), {"price_kind": "power", "price_per_epsilon": "3", "p": "4"})
    assert refused.status_code == 400 and "averaging several cheaper answers would beat buying one" in " ".join(errors_of(refused, "id_p"))
    missing = client.post(manage("price", listing.pk), {"price_kind": "linear"})
    assert missing.status_code == 400 and errors_of(missing, "id_price_per_epsilon") == ["Required for this price curve."]
    assert Listing.objects.get(pk=listing.pk).price_curve == {"kind": "power", "c": "3", "p": "1.5"}


def test_the_owner_closes_and_reopens(client, owner, listing):
    client.force_login(owner)
    answer = client.post(manage("close", listing.pk), {"reason": "Paused while we check the data."}, follow=True)
    text = page_text(answer)
    assert "Listing closed" in text and "Paused while we check the data." in text and "Reopen the listing" in text
    assert not Listing.objects.get(pk=listing.pk).is_open
    answer = client.post(manage("reopen", listing.pk), follow=True)
    assert "Listing reopened" in page_text(answer) and "Close the listing" in page_text(answer)
    assert Listing.objects.get(pk=listing.pk).is_open


def test_a_listing_that_cannot_reopen_says_why(client, owner, listing):
    centroid = [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 50000], "radius": 100}]
    Listing.objects.filter(pk=listing.pk).update(statistics=centroid, is_open=False, closed_reason="Closed: centroid")
    client.force_login(owner)
    answer = client.post(manage("reopen", listing.pk))
    assert answer.status_code == 409
    assert re.search(r"<strong>Not reopened.</strong> this listing cannot be reopened: ", page_text(answer))


@pytest.mark.parametrize("action", ["edit", "price", "close", "reopen"])
def test_nobody_else_manages_the_listing(client, users, owner, buyer, listing, action):
    data = {"title": "Mine", "description": "", "price_kind": "linear", "price_per_epsilon": "1", "reason": "mine"}
    client.force_login(users("oscar", owner=True))
    assert client.post(manage(action, listing.pk), data).status_code == 404
    client.force_login(buyer)
    assert client.post(manage(action, listing.pk), data).status_code == 403
    client.logout()
    assert client.post(manage(action, listing.pk), data).status_code == 302  # to log in
    fresh = Listing.objects.get(pk=listing.pk)
    assert fresh.is_open and fresh.title == "Clinic visits" and fresh.price_curve == {"kind": "linear", "c": "10.00"}


def test_the_listing_shows_its_datasets_description_source_and_licence(client, owner):
    from market.catalog.services import listing_create

    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="5",
                            description="Visits to three clinics, 2023.", source="https://example.org/clinics",
                            licence="CC-BY-4.0")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Visits", statistics=[{"kind": "count"}],
                             ceiling="1", price_per_epsilon="1")
    page = page_text(client.get(reverse("web:listing", args=[listing.pk])))
    assert re.search(r'<dd id="dataset-description">Visits to three clinics, 2023.</dd>', page)
    assert re.search(r'<dd id="dataset-source"><a href="https://example.org/clinics"[^>]*>https://example.org/clinics</a></dd>', page)
    assert '<dd id="dataset-licence">CC-BY-4.0</dd>' in page


def test_the_listing_leaves_out_what_the_dataset_does_not_say(client, listing):
    page = page_text(client.get(reverse("web:listing", args=[listing.pk])))
    assert "dataset-source" not in page and "dataset-licence" not in page and "dataset-description" not in page


def test_the_create_form_shows_every_error_at_once(client, owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(60), total_budget="3")
    client.force_login(owner)
    rows = [{"kind": "sum", "column": "age", "lower": "5", "upper": "1"}, {"kind": "mean"},
            {"kind": "mean", "column": "age", "lower": "0", "upper": "100"}, {"kind": "count"}]
    answer = client.post(reverse("web:owner-listing-new"),
                         listing_post(dataset, rows, title="", ceiling="10", price_per_epsilon=""))
    assert errors_of(answer, "id_title") == ["This field is required."]
    assert errors_of(answer, "id_ceiling") == ["At most 3."]  # the service's, beside the form's own
    assert errors_of(answer, "id_price_per_epsilon") == ["Required for this price curve."]
    assert errors_of(answer, "id_stats-0-lower") == ["lower must be below upper"]  # a service error on a row
    assert errors_of(answer, "id_stats-1-column") == ["Required for a mean."]
    assert not Listing.objects.exists()
    # fixed as told, in one go: created
    rows[0].update(lower="0", upper="100")
    rows[1].update(column="income", lower="0", upper="300000")
    answer = client.post(reverse("web:owner-listing-new"), listing_post(dataset, rows, title="Ages", ceiling="3"))
    assert answer.status_code == 302 and Listing.objects.get().title == "Ages"


def test_optional_is_said_only_of_what_is_optional(client, owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(60), total_budget="3")
    client.force_login(owner)
    page = page_text(client.get(reverse("web:owner-listing-new") + f"?dataset={dataset.public_id}"))
    marks = dict((label.strip(), mark) for label, mark in re.findall(r"<label[^>]*>([^<]*)<small>\(([^)]*)\)</small>", page))
    assert marks["Description"] == "optional"
    assert marks["Price scale c (credits)"] == "for a linear or power price"
    assert marks["Power p"] == "for a power price" and marks["Margin"] == "for a compensation-derived price"
    assert "Radius" not in marks and "centroid (mean point)" in page  # a row's inputs are bare: each kind says what it needs
    assert "Price curve" not in marks and "Title" not in marks and "Ceiling (ε)" not in marks
    assert "" not in marks  # no label without its input
