"""The pages of bit-report microdata: an owner makes a microdata listing in the form (a dataset of
private size refused with the reason, every error shown at once), a buyer reads its ladder, buys
its levels only (an off-ladder level refused), reads the decoded counts and downloads the records
(their own only); the owner's listing page shows the ladder and the levels sold."""

import csv
import io
import re
from decimal import Decimal

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from market.catalog.models import Listing
from market.catalog.services import listing_create_microdata
from market.core.levels import rounded_text
from market.trading.models import Purchase
from market.trading.services import purchase_create
from releases.models import Release
from tests.datasets import ready_dataset

pytestmark = pytest.mark.django_db

ISLANDS = ["Biscoe", "Dream", "Torgersen"]
SPEC = {"columns": [{"column": "island", "categories": ISLANDS, "categories_public": True},
                    {"column": "sex", "categories": ["female", "male"], "categories_public": True},
                    {"column": "name", "bloom": {"bits": 16, "hashes": 2}}],
        "levels": ["1", "2", "4"]}


def birds_csv(rows: int = 400, seed: int = 5) -> bytes:
    """Penguins with a categorical island and sex, a many-valued name (for a Bloom filter), a true/false
    column and a number."""
    rng = np.random.default_rng(seed)
    island = rng.choice(ISLANDS + ["Anvers"], size=rows, p=[0.5, 0.3, 0.15, 0.05])
    sex = rng.choice(["female", "male"], size=rows)
    tagged = rng.choice(["true", "false"], size=rows)
    lines = ["island,sex,name,tagged,mass"] + [
        f"{i},{s},bird{rng.integers(0, 10_000)},{t},{m}"
        for i, s, t, m in zip(island, sex, tagged, rng.integers(3000, 6000, rows))
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def birds(owner):
    return ready_dataset(owner=owner, name="birds", data=birds_csv(), total_budget="20", relation="public_size")


@pytest.fixture
def private_birds(owner):
    return ready_dataset(owner=owner, name="hidden birds", data=birds_csv(), total_budget="20")


@pytest.fixture
def md_listing(owner, birds):
    return listing_create_microdata(owner=owner, dataset_id=birds.public_id, title="Birds by record",
                                    microdata_spec=SPEC, price_per_epsilon="2.00", shuffle=np.random.default_rng(3))


@pytest.fixture
def bought(md_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks):
    """The buyer holds level 1 of the microdata listing, released."""
    fund(buyer, 1000)
    with django_capture_on_commit_callbacks(execute=True):
        result = purchase_create(buyer=buyer, listing_id=md_listing.pk, epsilon="1")
    return result.purchase


def text(response) -> str:
    import html

    body = html.unescape(response.content.decode())
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


# ---------------------------------------------------------------- the owner's form


def column_index(page, name: str) -> int:
    found = re.search(rf'data-column="{name}".*?name="col_(\d+)_include"', page, re.S)
    return int(found.group(1))


def test_the_form_offers_the_categorical_columns_without_their_values_and_creates_the_listing(client, owner, birds):
    client.force_login(owner)
    page = client.get(reverse("web:owner-listing-new-microdata"))
    assert page.status_code == 200
    body = page.content.decode()
    words = text(page)
    assert "one row each" in words and "never learn more than the highest level sold" in words
    assert "needs a dataset whose number of records is public" in words
    island, sex, name, tagged = (column_index(body, c) for c in ("island", "sex", "name", "tagged"))
    assert 'data-column="mass"' not in body  # a number is not sold as bits
    shown = re.search(rf'name="col_{island}_categories"[^>]*>(.*?)</textarea>', body, re.S).group(1)
    assert shown.strip() == ""  # never filled in from the data (which values occur is private)
    for value in ("Biscoe", "Dream", "Torgersen", "female"):
        assert value not in body
    assert f'name="col_{island}_categories_public"' in body
    assert f'name="col_{tagged}_bloom"' not in body  # a true/false column needs no categories nor filter
    posted = {
        "dataset": birds.public_id, "title": "Birds by record", "levels": "0.5, 1, 2",
        "price_kind": "linear", "price_per_epsilon": "3",
        f"col_{island}_include": "on", f"col_{island}_categories": "Biscoe\nDream",
        f"col_{sex}_include": "on", f"col_{sex}_categories": "female, male", f"col_{sex}_categories_public": "on",
        f"col_{name}_include": "on", f"col_{name}_bloom": "on", f"col_{name}_bits": "16", f"col_{name}_hashes": "2",
        f"col_{tagged}_include": "on",
    }
    refused = client.post(reverse("web:owner-listing-new-microdata"), posted)  # island's categories not confirmed
    assert refused.status_code == 400 and not Listing.objects.exists()
    assert list(refused.context["form"].errors) == [f"col_{island}_categories_public"]
    assert "public" in refused.context["form"].errors[f"col_{island}_categories_public"][0]
    made = client.post(reverse("web:owner-listing-new-microdata"), {**posted, f"col_{island}_categories_public": "on"})
    listing = Listing.objects.get()
    assert made.status_code == 302 and made["Location"] == reverse("web:owner-listing", args=[listing.pk])
    md = listing.microdata()
    assert [str(level.normalize()) for level in md.levels] == ["0.5", "1", "2"]
    assert md.labels[:3] == ("island = Biscoe", "island = Dream", "island = other")
    assert [f.encoding for f in md.fields] == ["onehot", "onehot", "bloom", "onehot"]
    assert md.fields[3].labels == ("tagged = true", "tagged = false")
    assert listing.price_curve["kind"] == "linear" and Decimal(listing.price_curve["c"]) == 3


def test_every_error_is_shown_at_once_and_nothing_is_made(client, owner, birds):
    client.force_login(owner)
    body = client.get(reverse("web:owner-listing-new-microdata")).content.decode()
    island, name = column_index(body, "island"), column_index(body, "name")
    refused = client.post(reverse("web:owner-listing-new-microdata"), {
        "dataset": birds.public_id, "title": "", "levels": "1, 40", "price_kind": "linear",
        f"col_{island}_include": "on", f"col_{island}_categories": "Biscoe, Biscoe",
        f"col_{name}_include": "on", f"col_{name}_bloom": "on", f"col_{name}_bits": "16", f"col_{name}_hashes": "",
    })
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert "title" in errors and "price_per_epsilon" in errors and f"col_{name}_hashes" in errors
    assert any("twice" in e for e in errors[f"col_{island}_categories"])
    assert not Listing.objects.exists()
    # the form valid but the service refusing: its messages land at the inputs at fault, all at once
    refused = client.post(reverse("web:owner-listing-new-microdata"), {
        "dataset": birds.public_id, "title": "Birds", "levels": "1, 40", "price_kind": "linear",
        "price_per_epsilon": "-1", f"col_{name}_include": "on", f"col_{name}_bloom": "on",
        f"col_{name}_bits": "16", f"col_{name}_hashes": "9",
    })
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert any("hashes" in e for e in errors[f"col_{name}_bits"]), errors
    assert "price_per_epsilon" in errors
    assert not Listing.objects.exists()
    refused = client.post(reverse("web:owner-listing-new-microdata"), {
        "dataset": birds.public_id, "title": "Birds", "levels": "1, 40", "price_kind": "linear",
        "price_per_epsilon": "1", f"col_{island}_include": "on", f"col_{island}_categories": "Biscoe",
    })
    assert refused.status_code == 400 and any("budget. At most 20" in e for e in refused.context["form"].errors["levels"])
    assert not Listing.objects.exists()


def test_a_dataset_of_private_size_is_refused_with_the_reason(client, owner, private_birds):
    client.force_login(owner)
    alone = client.get(reverse("web:owner-listing-new-microdata"))
    assert alone.status_code == 200
    assert "You have no ready dataset whose number of records is public" in text(alone)
    assert "hidden birds" in text(alone) and reverse("web:owner-dataset-new") in alone.content.decode()
    asked = client.get(reverse("web:owner-listing-new-microdata") + f"?dataset={private_birds.public_id}")
    assert "cannot be sold as randomised records" in text(asked) and "number of records is public" in text(asked)
    posted = client.post(reverse("web:owner-listing-new-microdata"), {
        "dataset": private_birds.public_id, "title": "t", "levels": "1", "price_per_epsilon": "1",
        "col_0_include": "on", "col_0_categories": "Biscoe",
    })
    assert posted.status_code == 400 and "cannot be sold as randomised records" in text(posted)
    assert not Listing.objects.exists()
    assert client.get(reverse("web:owner-listing-new-microdata") + "?dataset=ds_nobody").status_code == 404


def test_the_dashboard_and_the_listing_form_link_to_it(client, owner, birds):
    client.force_login(owner)
    address = reverse("web:owner-listing-new-microdata")
    assert address in client.get(reverse("web:owner")).content.decode()
    assert address in client.get(reverse("web:owner-listing-new")).content.decode()


# ---------------------------------------------------------------- the buyer's pages


def test_the_listing_page_shows_the_ladder_and_sells_its_levels_only(client, md_listing, buyer, fund):
    page = client.get(reverse("web:listing", args=[md_listing.pk]))
    assert page.status_code == 200
    body, words = page.content.decode(), text(page)
    md = md_listing.microdata()
    ladder = re.search(r'<table id="ladder-table".*?</table>', body, re.S).group(0)
    for eps in md.levels:
        p, q = md.rates(eps)
        assert f"{p:.3f}" in ladder and f"{q:.3f}" in ladder and rounded_text(md.bound(eps), 1, up=True) in ladder
    assert ">4.00<" in ladder and ">8.00<" in ladder  # 2 credits per ε, from nothing
    assert 'id="curves"' not in body  # no statistics' charts
    select = re.search(r'<select name="epsilon".*?</select>', body, re.S).group(0)
    assert re.findall(r'value="([^"]+)"', select) == ["1", "2", "4"]
    assert "One row per record (400 rows)" in words and "CSV or Parquet" in words
    assert md.salt in body and "island = Biscoe" in words and "Bloom filter of 16 bits" in words
    assert "Randomised records" in words  # the engine's guarantee line
    # buying by accuracy names its one bound, the same for every bit (not "every statistic")
    target = re.search(r'<select name="statistic".*?</select>', body, re.S).group(0)
    assert re.findall(r">([^<]+)</option>", target) == ["each decoded count"]

    client.force_login(buyer)
    fund(buyer, 100)
    off = client.get(reverse("web:listing", args=[md_listing.pk]) + "?epsilon=1.5")
    assert off.status_code == 400 and "1, 2, 4" in text(off)
    quote = client.get(reverse("web:listing", args=[md_listing.pk]) + "?epsilon=2")
    assert quote.status_code == 200 and quote.context["quote"].price == Decimal("4.00")
    bound2 = md.bound(Decimal(2))
    by_accuracy = client.get(reverse("web:listing", args=[md_listing.pk]) + f"?within={bound2 + 1:.2f}&statistic=")
    assert by_accuracy.status_code == 200 and by_accuracy.context["quote"].epsilon == Decimal(2)  # rounded up the ladder
    posted = client.post(reverse("web:listing-buy", args=[md_listing.pk]), {"epsilon": "3"})
    assert posted.status_code == 400 and "1, 2, 4" in text(posted)
    assert not Purchase.objects.exists()


def test_the_release_shows_the_decoded_counts_and_the_buyers_records_only(
    client, md_listing, bought, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks
):
    client.force_login(buyer)
    page = client.get(reverse("web:purchase", args=[bought.pk]))
    release = Release.objects.get(buyer=buyer)
    md = md_listing.microdata()
    p, q = md.rates(Decimal(1))
    words = text(page)
    assert f"p = {p:.3f}" in words and f"q = {q:.3f}" in words
    decoded = re.search(r'<table id="decoded">.*?</table>', page.content.decode(), re.S).group(0)
    for d in md.decoded(release.values, Decimal(1)):
        assert d["label"] in decoded and f"{d['estimate']:.1f}" in decoded
    csv_address = reverse("web:release-records", args=[release.public_id, "csv"])
    parquet_address = reverse("web:release-records", args=[release.public_id, "parquet"])
    assert csv_address in page.content.decode() and parquet_address in page.content.decode()
    library = client.get(reverse("web:library")).content.decode()
    assert csv_address in library and parquet_address in library and "island = Biscoe" in library

    got = client.get(csv_address)
    assert got.status_code == 200 and got["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(b"".join(got.streaming_content).decode())))
    assert rows[0] == ["record", *md_listing.labels] and len(rows) == 401
    assert [sum(int(row[j + 1]) for row in rows[1:]) for j in range(md.bits)] == [d["reported"] for d in
                                                                                  md.decoded(release.values, 1)]
    table = pq.read_table(io.BytesIO(client.get(parquet_address).content))
    assert table.num_rows == 400 and table.column_names == rows[0]
    assert client.get(reverse("web:release-records", args=[release.public_id, "json"])).status_code == 404

    other = users("carol")
    client.force_login(other)
    assert client.get(csv_address).status_code == 404 and client.get(parquet_address).status_code == 404
    client.logout()
    assert client.get(csv_address).status_code == 302  # to the sign-in page


def test_a_release_of_statistics_has_no_records(client, listing, buyer, fund, eager_celery,
                                                django_capture_on_commit_callbacks):
    fund(buyer, 1000)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    release = Release.objects.get(buyer=buyer)
    client.force_login(buyer)
    assert client.get(reverse("web:release-records", args=[release.public_id, "csv"])).status_code == 404


def test_going_up_the_ladder_offers_the_next_level(client, md_listing, bought, buyer):
    client.force_login(buyer)
    page = client.get(reverse("web:listing", args=[md_listing.pk]))
    body = page.content.decode()
    select = re.search(r'<select name="epsilon".*?</select>', body, re.S).group(0)
    assert re.findall(r'value="([^"]+)"', select) == ["2", "4"]
    md = md_listing.microdata()
    assert "going to ε = 2 costs 2.00 credits" in text(page)
    assert f"{rounded_text(md.bound(Decimal(1)) / md.bound(Decimal(2)), 1, up=False)}× smaller" in text(page)


def test_the_owners_listing_page_shows_the_ladder_and_the_levels_sold(client, owner, md_listing, bought):
    client.force_login(owner)
    page = client.get(reverse("web:owner-listing", args=[md_listing.pk]))
    assert page.status_code == 200
    ladder = re.search(r'<table id="ladder-table">.*?</table>', page.content.decode(), re.S).group(0)
    rows = re.findall(r"<tr>(.*?)</tr>", ladder, re.S)[1:]
    assert len(rows) == 3 and "yes (1 release)" in rows[0] and "not yet" in rows[1] and "not yet" in rows[2]
    assert page.context["spent"] == Decimal(1)  # the largest level sold, not the ladder's top drawn first
    assert [p["level"] for p in page.context["profiles"]] == [Decimal(1)]
