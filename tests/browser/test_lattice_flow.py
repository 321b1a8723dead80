"""The exact lattice path in a real browser: an owner builds a count, a histogram and a sum on a
0.01 grid (the grid's placeholder shows the server's default as the bounds are typed); a buyer's
release shows whole numbers for the count and bins and cents for the sum, on the page, in the CSV
and through the API."""

import csv
import io
import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from market.catalog.spec import default_grid
from tests.browser.test_buyer_flow import buy, log_in
from tests.browser.test_owner_flow import LABEL, sign_up_as_owner
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db(transaction=True)
WHOLE = re.compile(r"-?\d+")
CENTS = re.compile(r"-?\d+(\.\d{1,2})?")


def placeholder(lower, upper, integer=False) -> str:
    """The grid's placeholder the page should show: the server's own default for these bounds."""
    return "default: " + format(default_grid(lower, upper, integer=integer).normalize(), "f")


def test_an_owner_lists_a_sum_on_a_grid_and_a_buyer_reads_whole_numbers_and_cents(browse, worker, users, fund, shot):
    page = browse()
    sign_up_as_owner(page, "ola")
    from market.accounts.models import User

    ready_dataset(owner=User.objects.get(username="ola"), name="Clinic", data=make_csv(300), total_budget="10")
    page.goto("/owner/listings/new/")
    page.get_by_label(LABEL["Title"]).fill("Exact clinic")
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("4")
    page.get_by_label(re.compile(r"^Price scale c")).fill("5")
    rows = page.locator("fieldset.stat-row")
    grid = re.compile("^Rounding grid:?$")
    rows.nth(0).get_by_label(LABEL["Kind"]).select_option("count")
    expect(rows.nth(0).get_by_label(grid)).to_be_hidden()
    rows.nth(1).get_by_label(LABEL["Kind"]).select_option("histogram")
    rows.nth(1).get_by_label(LABEL["Column"]).select_option("age")
    rows.nth(1).get_by_label(LABEL["Bin edges"]).fill("0, 30, 60, 90")
    expect(rows.nth(1).get_by_label(grid)).to_be_hidden()
    total = rows.nth(2)
    total.get_by_label(LABEL["Kind"]).select_option("sum")
    expect(total.get_by_label(grid)).to_be_visible()
    expect(total.get_by_label(grid)).to_have_attribute("placeholder", "from the bounds")
    total.get_by_label(LABEL["Column"]).select_option("income")
    total.get_by_label(LABEL["Lower"]).fill("0")
    total.get_by_label(LABEL["Upper"]).fill("2.5")
    expect(total.get_by_label(grid)).to_have_attribute("placeholder", placeholder(0, 2.5))  # 0.00001
    total.get_by_label(LABEL["Upper"]).fill("200000")
    expect(total.get_by_label(grid)).to_have_attribute("placeholder", placeholder(0, 200000))  # 1
    # an integer column's grid is 1 at least: age's default for 0 to 100 is 1, not 0.0001
    total.get_by_label(LABEL["Column"]).select_option("age")
    total.get_by_label(LABEL["Upper"]).fill("100")
    expect(total.get_by_label(grid)).to_have_attribute("placeholder", placeholder(0, 100, integer=True))
    total.get_by_label(LABEL["Column"]).select_option("income")
    total.get_by_label(LABEL["Upper"]).fill("200000")
    total.get_by_label(grid).fill("0.01")
    shot(page, "owner-listing-builder-grid")
    page.get_by_role("button", name="Create the listing").click()

    expect(page.get_by_role("heading", name="Exact clinic")).to_be_visible()
    expect(page.locator("#engine")).to_contain_text("Exact integer noise, exactly ε-differentially private")
    expect(page.locator("#offered-title").locator("..")).to_contain_text("each value rounded to a multiple of 0.01")
    listing = Listing.objects.get(title="Exact clinic")
    assert listing.engine == "lattice" and listing.statistics[2]["grid"] == "0.01"

    buyer = users("bea")
    fund(buyer, 100)
    page = browse()
    log_in(page, "bea")
    buy(page, listing.pk, "1")
    table = page.locator("#purchase-status table")
    shown = {row.locator("th").inner_text(): row.locator("td").first.inner_text().strip()
             for row in table.locator("tbody tr").all()}
    sums = [label for label in shown if label.startswith("sum(")]
    assert len(shown) == 5 and len(sums) == 1, shown
    assert all(WHOLE.fullmatch(value) for label, value in shown.items() if label not in sums), shown
    assert CENTS.fullmatch(shown[sums[0]]), shown
    shot(page, "purchase-released-lattice")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    with open(download.value.path(), encoding="utf-8") as f:
        values = {row["label"]: row["value"] for row in csv.DictReader(io.StringIO(f.read()))}
    assert set(values) == set(shown)
    assert all(WHOLE.fullmatch(value) for label, value in values.items() if label not in sums), values
    assert CENTS.fullmatch(values[sums[0]]), values

    release = listing.releases.get()
    read = page.request.get(f"/api/v1/releases/{release.public_id}/").json()
    counts = [r["value"] for r in read["values"] if r["kind"] in ("count", "histogram")]
    assert len(counts) == 4 and all(type(v) is int for v in counts), counts
