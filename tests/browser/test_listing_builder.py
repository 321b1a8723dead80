"""An owner builds a listing with a group-by and a filter in a real browser, with the page's script on."""

import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from market.catalog.services import dataset_create
from tests.browser.test_owner_flow import sign_up_as_owner
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db(transaction=True)

def _typed(dataset):
    """The dataset's columns as ingestion types them: visits (0, 1, 2, ...) read as categories."""
    dataset.columns = [
        {"name": "age", "type": "integer", "missing": "none"},
        {"name": "income", "type": "decimal", "missing": "none"},
        {"name": "visits", "type": "categorical", "missing": "none", "categories": [{"value": v, "count": 10} for v in ("1", "2", "3")]},
    ]
    dataset.save(update_fields=["columns"])


def test_the_builder_shows_each_kinds_inputs_and_fills_in_nothing_from_the_data(browse, shot):
    page = browse()
    sign_up_as_owner(page, "bea")
    from market.accounts.models import User

    _typed(dataset_create(owner=User.objects.get(username="bea"), name="Clinic", data=make_csv(300), total_budget="10"))
    page.goto("/owner/listings/new/")
    row = page.locator("fieldset.stat-row").first
    kind = row.get_by_label(re.compile("^Kind:?$"))
    kind.select_option("histogram")
    expect(row.get_by_label(re.compile("^Bin edges:?$"))).to_be_visible()
    expect(row.get_by_label(re.compile("^Group by:?$"))).to_be_hidden()
    kind.select_option("count")
    expect(row.get_by_label(re.compile("^Bin edges:?$"))).to_be_hidden()
    categories = row.get_by_label(re.compile("^Categories:?$"))
    expect(categories).to_be_hidden()  # until a column is chosen to group by
    row.get_by_label(re.compile("^Group by:?$")).select_option("visits")
    expect(categories).to_be_visible()
    expect(categories).to_have_value("")  # the values seen in the data are never filled in
    expect(row.get_by_label("I confirm these categories are public")).not_to_be_checked()
    for bound in ("Lower", "Upper"):  # nor its minimum and maximum
        for box in page.get_by_label(re.compile(f"^{bound}:?$")).all():
            assert box.input_value() == ""
    assert "suggestions" not in page.evaluate("JSON.parse(document.getElementById('listing-builder').textContent)")
    # one filter shown; a second appears once the first is used
    expect(row.get_by_label("Filter 2: column")).to_be_hidden()
    row.get_by_label("Filter 1: column").select_option("age")
    expect(row.get_by_label("Filter 2: column")).to_be_visible()
    shot(page, "owner-listing-builder")


def _new_listing(browse, owner: str, title: str):
    """A new owner with a typed dataset, on the "new listing" page with its title, ceiling 2 and price
    scale 5 filled in: the page and its first statistic row."""
    page = browse()
    sign_up_as_owner(page, owner)
    from market.accounts.models import User

    _typed(dataset_create(owner=User.objects.get(username=owner), name="Clinic", data=make_csv(300),
                          total_budget="10"))
    page.goto("/owner/listings/new/")
    page.get_by_label(re.compile("^Title:?$")).fill(title)
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("2")
    page.get_by_label(re.compile(r"^Price scale c")).fill("5")
    return page, page.locator("fieldset.stat-row").first


def test_an_owner_lists_a_grouped_and_filtered_count(browse, shot):
    page, row = _new_listing(browse, "bruno", "Visits of adults")
    row.get_by_label(re.compile("^Kind:?$")).select_option("count")
    row.get_by_label(re.compile("^Group by:?$")).select_option("visits")
    row.get_by_label(re.compile("^Categories:?$")).fill("1\n2")
    row.get_by_label("I confirm these categories are public").check()
    row.get_by_label("Filter 1: column").select_option("age")
    row.get_by_label("operator").first.select_option(">=")
    row.get_by_label("value(s)").first.fill("18")
    shot(page, "owner-listing-builder-filled")
    page.get_by_role("button", name="Create the listing").click()

    expect(page.get_by_role("heading", name="Visits of adults")).to_be_visible()
    listing = Listing.objects.get(title="Visits of adults")
    assert listing.statistics[0]["by"] == "visits" and listing.statistics[0]["categories"] == ["1", "2"]
    assert listing.statistics[0]["where"] == [{"column": "age", "op": ">=", "value": 18}]
    offered = page.locator("#offered-title").locator("..")
    expect(offered).to_contain_text("visits")
    expect(offered).to_contain_text("age")


def test_an_owner_lists_quantiles_from_a_builder_row(browse):
    page, row = _new_listing(browse, "quinn", "Age quantiles")
    quantiles = row.get_by_label(re.compile("^Quantiles:?$"))
    expect(quantiles).to_be_hidden()
    row.get_by_label(re.compile("^Kind:?$")).select_option("quantile")
    expect(quantiles).to_be_visible()  # the row shows what the kind's schema lists: column, edges, quantiles
    expect(row.get_by_label(re.compile("^Bin edges:?$"))).to_be_visible()
    expect(row.get_by_label(re.compile("^Lower:?$"))).to_be_hidden()
    expect(row.get_by_label(re.compile("^Group by:?$"))).to_be_hidden()
    row.get_by_label(re.compile("^Column:?$")).select_option("age")
    row.get_by_label(re.compile("^Bin edges:?$")).fill("0, 30, 50, 70, 100")
    quantiles.fill("0.25, 0.5, 0.75")
    page.get_by_role("button", name="Create the listing").click()

    expect(page.get_by_role("heading", name="Age quantiles")).to_be_visible()
    listing = Listing.objects.get(title="Age quantiles")
    assert listing.statistics == [{"kind": "quantile", "column": "age", "bins": [0.0, 30.0, 50.0, 70.0, 100.0],
                                   "quantiles": [0.25, 0.5, 0.75]}]
    expect(page.get_by_text(re.compile("Quantiles 0.25, 0.5, 0.75 of age"))).to_be_visible()
