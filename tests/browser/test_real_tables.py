"""The penguins table as palmerpenguins ships it, through the browser end to end: an owner uploads it,
watches the progress, confirms the columns, builds a listing with a group-by (count by species, the
categories typed and confirmed public) and a filter (island = Biscoe); a buyer buys it and reads the
answer rows, each compared with the truth computed with pandas."""

import re

import pandas as pd
import pytest
from playwright.sync_api import expect

from market.catalog.models import Dataset, Listing
from tests.browser.test_buyer_flow import buy, sign_up
from tests.browser.test_owner_flow import LABEL, sign_up_as_owner
from tests.marketplace.real_tables import PENGUINS_PATH

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.queued_datasets]


def test_penguins_uploaded_listed_and_bought_in_the_browser(browse, worker, shot):
    page = browse()
    sign_up_as_owner(page, "petra")
    page.get_by_role("link", name="Upload a dataset").first.click()
    page.get_by_label(LABEL["Name"]).fill("Palmer penguins")
    page.get_by_label(re.compile(r"^Privacy budget")).fill("10")
    page.get_by_label(re.compile("^CSV or Parquet file")).set_input_files(
        {"name": "penguins.csv", "mimeType": "text/csv", "buffer": PENGUINS_PATH.read_bytes()})
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", name="Palmer penguins: its columns")).to_be_visible()
    # processing by the worker while the page polls, then the column review
    expect(page.locator("#dataset-status[data-status=ready]")).to_be_visible(timeout=30_000)
    review = page.locator("#column-review")
    expect(review.locator("tr[data-column=sex]")).to_contain_text("11 missing (NA)")
    page.get_by_role("button", name="Confirm columns").click()
    expect(page.get_by_role("heading", name="Create a listing")).to_be_visible()

    page.get_by_label(LABEL["Title"]).fill("Penguins on Biscoe")
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("2")
    page.get_by_label(re.compile(r"^Price scale c")).fill("5")
    row = page.locator("fieldset.stat-row").first
    row.get_by_label(LABEL["Kind"]).select_option("count")
    row.get_by_label(re.compile("^Group by:?$")).select_option("species")
    # nothing is filled in from the data: the owner types the species the study names, and confirms
    categories = row.get_by_label(re.compile("^Categories:?$"))
    expect(categories).to_have_value("")
    categories.fill("Adelie\nChinstrap\nGentoo")
    row.get_by_label("I confirm these categories are public").check()
    row.get_by_label("Filter 1: column").select_option("island")
    row.get_by_label("operator").first.select_option("=")
    row.get_by_label("value(s)").first.fill("Biscoe")
    shot(page, "owner-penguins-listing")
    page.get_by_role("button", name="Create the listing").click()
    expect(page.get_by_role("heading", name="Penguins on Biscoe")).to_be_visible()
    listing = Listing.objects.get(title="Penguins on Biscoe")
    assert listing.statistics == [{"kind": "count", "where": [{"column": "island", "op": "=", "value": "Biscoe"}],
                                   "by": "species", "categories": listing.statistics[0]["categories"]}]
    assert sorted(listing.statistics[0]["categories"]) == ["Adelie", "Chinstrap", "Gentoo"]
    assert Dataset.objects.get().row_count == 344

    buyer = browse()
    sign_up(buyer, "bart", "Buy data")
    buyer.goto("/library/")
    buyer.get_by_label("Amount (credits)").fill("100")
    buyer.get_by_role("button", name="Top up (demo)").click()
    expect(buyer.get_by_text("Added 100.00 credits.")).to_be_visible()
    buy(buyer, listing.pk, "2")
    shot(buyer, "buyer-penguins-release")

    df = pd.read_csv(PENGUINS_PATH)
    biscoe = df[df.island == "Biscoe"]
    truth = {s: int((biscoe.species == s).sum()) for s in ["Adelie", "Chinstrap", "Gentoo"]}
    truth["other"] = 0
    for species, true in truth.items():
        label = f"count | island = Biscoe, species = {species}"
        cells = buyer.get_by_role("row", name=re.compile("^" + re.escape(label))).locator("td")
        expect(cells).to_have_count(2)  # the label is the row's header: value, then ± bound
        value = float(cells.nth(0).inner_text().replace(",", "").strip())
        bound = float(cells.nth(1).inner_text().replace("±", "").replace(",", "").strip())
        # one release: each reading within 3 of its 95% bounds (Laplace: probability 1 - 1/8000 each)
        assert abs(value - true) <= 3 * bound, (label, value, bound, true)
