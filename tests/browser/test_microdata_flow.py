"""Microdata in a real browser: an owner makes a microdata listing in the form (a Bloom-hashed column
too); a buyer buys its lowest level, then a higher one, reads the decoded counts and downloads the
records as CSV, one row per record."""

import csv
import io
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from tests.browser.test_buyer_flow import confirm_and_wait
from tests.datasets import ready_dataset

pytestmark = pytest.mark.django_db(transaction=True)


def birds_csv(rows: int = 300) -> bytes:
    rng = np.random.default_rng(11)
    island = rng.choice(["Biscoe", "Dream", "Torgersen"], size=rows)
    sex = rng.choice(["female", "male"], size=rows)
    lines = ["island,sex,name,mass"] + [f"{i},{s},bird{rng.integers(0, 5000)},{m}"
                                        for i, s, m in zip(island, sex, rng.integers(3000, 6000, rows))]
    return ("\n".join(lines) + "\n").encode()


def column(form, name: str):
    return form.locator(f'fieldset[data-column="{name}"]')


def test_an_owner_lists_records_and_a_buyer_buys_two_levels(browse, worker, users, fund, shot):
    owner = users("olivia", owner=True)
    ready_dataset(owner=owner, name="birds", data=birds_csv(), total_budget="20", relation="public_size")
    page = browse()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("olivia")
    page.get_by_label("Password").fill("a-long-password-1")
    page.get_by_role("button", name=re.compile("Log in|Sign in")).click()
    page.goto("/owner/")
    page.get_by_role("link", name="Sell the records, randomised").click()
    expect(page.get_by_role("heading", name="Sell the records, randomised")).to_be_visible()
    form = page.locator("#microdata-form")
    form.get_by_label(re.compile("^Title")).fill("Birds by record")
    island = column(form, "island")
    island.get_by_label("Include island").check()
    expect(island.get_by_label("Its categories")).to_have_value("")  # never filled in from the data
    island.get_by_label("Its categories").fill("Biscoe\nDream\nTorgersen")
    island.get_by_label("I confirm these categories are public").check()
    sex = column(form, "sex")
    sex.get_by_label("Include sex").check()
    sex.get_by_label("Its categories").fill("female, male")
    sex.get_by_label("I confirm these categories are public").check()
    name = column(form, "name")
    name.get_by_label("Include name").check()
    name.get_by_label("Hash into a Bloom filter instead").check()
    name.get_by_label("Bloom bits").fill("16")
    form.get_by_label(re.compile(r"^Levels sold")).fill("1, 2, 4")
    form.get_by_label(re.compile(r"^Price scale c")).fill("2")
    form.get_by_role("button", name="Create the listing").click()
    expect(page.get_by_role("heading", name="The ladder of levels")).to_be_visible()
    listing = Listing.objects.get(title="Birds by record")
    assert listing.mechanism == "bits" and [f.encoding for f in listing.microdata().fields] == ["onehot", "onehot", "bloom"]

    buyer = users("bea")
    fund(buyer, 100)
    page = browse()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("bea")
    page.get_by_label("Password").fill("a-long-password-1")
    page.get_by_role("button", name=re.compile("Log in|Sign in")).click()
    page.goto(f"/listings/{listing.pk}/")
    expect(page.locator("#ladder-table")).to_be_visible()
    expect(page.locator("#bloom-salt")).to_have_text(listing.microdata().salt)
    shot(page, "microdata-listing")
    for level in ("1", "4"):
        page.goto(f"/listings/{listing.pk}/")
        page.get_by_label("Buy up to ε").select_option(level)
        page.get_by_role("button", name="See the price").click()
        confirm_and_wait(page)
        expect(page.locator("#microdata-rates")).to_contain_text(f"Released at ε = {level}")
    decoded = page.locator("#decoded")
    expect(decoded.get_by_role("row", name=re.compile(r"^island = Biscoe "))).to_be_visible()
    expect(decoded.get_by_role("row", name=re.compile(r"^name bloom bit 15 "))).to_be_visible()
    p, q = listing.microdata().rates(4)
    expect(page.locator("#microdata-rates")).to_contain_text(f"p = {p:.3f}")
    shot(page, "microdata-release")
    with page.expect_download() as caught:
        page.get_by_role("link", name="Download the records (CSV)").click()
    rows = list(csv.reader(io.StringIO(open(caught.value.path()).read())))
    assert rows[0] == ["record", *listing.labels] and len(rows) == 301
    assert {cell for row in rows[1:] for cell in row[1:]} <= {"0", "1"}
