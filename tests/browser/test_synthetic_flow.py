"""Synthetic data in a real browser: an owner lists it from the builder (one column per line, the
categories confirmed public); a buyer buys two levels and downloads each level's rows."""

import csv
import io
import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from tests.browser.test_buyer_flow import confirm_and_wait, log_in
from tests.browser.test_owner_flow import LABEL, new_listing, sign_up_as_owner
from tests.datasets import ready_dataset
from tests.marketplace.test_synthetic_listing import CSV

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_lists_synthetic_data_and_a_buyer_downloads_two_levels_of_rows(browse, worker, users, fund, shot):
    from market.accounts.models import User

    page = browse()
    sign_up_as_owner(page, "olga")
    dataset = ready_dataset(owner=User.objects.get(username="olga"), name="Birds", data=CSV, relation="public_size",
                            total_budget="10")
    row = new_listing(page, dataset, "Birds, synthetic", "4", "1")
    row.get_by_label(LABEL["Kind"]).select_option("synthetic")
    codes = row.get_by_label(re.compile(r"^Columns and their codes"))
    expect(codes).to_be_visible()
    expect(row.get_by_label(LABEL["Column"])).to_be_hidden()
    codes.fill("species: Adelie, Chinstrap, Gentoo\nisland: Biscoe, Dream, Torgersen\nmass: 3000, 4000, 5000, 6000")
    row.get_by_label("I confirm these categories are public").check()
    shot(page, "owner-synthetic-row")
    page.get_by_role("button", name="Create the listing").click()
    expect(page.get_by_role("heading", name="Birds, synthetic")).to_be_visible()
    listing = Listing.objects.get(title="Birds, synthetic")
    expect(page.locator("#quality")).to_contain_text("No level has been released yet")

    buyer = users("bea")
    fund(buyer, 100)
    page = browse()
    log_in(page, "bea")
    files = []
    for level in ("1", "4"):
        page.goto(f"/listings/{listing.pk}/")
        page.get_by_label("Buy up to ε").fill(level)
        page.get_by_role("button", name="See the price").click()
        confirm_and_wait(page)
        expect(page.locator("#synthetic-rows")).to_contain_text("Synthetic rows of species, island, mass: 300 rows")
        with page.expect_download() as download:
            page.get_by_role("link", name="Download the rows (CSV)").click()
        files.append(open(download.value.path(), encoding="utf-8").read())
    shot(page, "purchase-released-synthetic")
    for text in files:
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0] == ["species", "island", "mass"] and len(rows) == 301
    assert files[0] != files[1]
