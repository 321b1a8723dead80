"""The Skellam path in a real browser: an owner gives a dataset a δ on its budget page, compares the
two mechanisms on the builder, chooses the Skellam path and lists; a buyer chooses a level from the
listing's ladder and reads whole numbers off the release."""

import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from tests.browser.test_buyer_flow import confirm_and_wait, log_in
from tests.browser.test_owner_flow import LABEL, new_listing, sign_up_as_owner
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_lists_on_the_skellam_path_and_a_buyer_buys_a_ladder_level(browse, worker, users, fund, shot):
    page = browse()
    sign_up_as_owner(page, "sam")
    from market.accounts.models import User

    dataset = ready_dataset(owner=User.objects.get(username="sam"), name="Clinic", data=make_csv(300),
                            total_budget="4")
    page.goto(f"/owner/datasets/{dataset.public_id}/budget/")
    page.get_by_label(re.compile(r"^New budget")).fill("4")
    page.get_by_label(re.compile(r"^δ \(optional\)")).fill("1e-6")
    page.get_by_label(re.compile(r"^Reason")).fill("allow the Skellam path")
    page.get_by_role("button", name="Change the budget").click()
    page.goto(f"/owner/datasets/{dataset.public_id}/budget/")
    expect(page.locator("#dataset-delta")).to_have_text("1e-6")

    page.goto("/owner/listings/new/")
    page.get_by_label(LABEL["Title"]).fill("Counts, Gaussian-like")
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("1")
    page.get_by_label(re.compile(r"^Price scale c")).fill("5")
    rows = page.locator("fieldset.stat-row")
    rows.nth(0).get_by_label(LABEL["Kind"]).select_option("count")
    rows.nth(1).get_by_label(LABEL["Kind"]).select_option("histogram")
    rows.nth(1).get_by_label(LABEL["Column"]).select_option("age")
    rows.nth(1).get_by_label(LABEL["Bin edges"]).fill("0, 30, 60, 90")
    page.get_by_role("button", name="Compare the mechanisms").click()
    comparison = page.locator("#comparison")
    expect(comparison).to_be_visible()
    expect(comparison.locator("tbody tr")).to_have_count(4)  # the count and three bins, each with both bounds
    expect(comparison).to_contain_text("Skellam path")
    proposed = comparison.locator("[data-proposed]").get_attribute("data-proposed")
    expect(page.get_by_role("radio", name=re.compile("Skellam path"))).to_be_checked(checked=proposed == "skellam")
    shot(page, "owner-listing-compare")
    page.get_by_role("radio", name=re.compile("Skellam path")).check()
    page.get_by_role("button", name="Create the listing").click()

    expect(page.get_by_role("heading", name="Counts, Gaussian-like")).to_be_visible()
    listing = Listing.objects.get(title="Counts, Gaussian-like")
    assert listing.mechanism == "skellam"

    buyer = users("bea")
    fund(buyer, 100)
    page = browse()
    log_in(page, "bea")
    page.goto(f"/listings/{listing.pk}/")
    expect(page.locator("#guarantee")).to_contain_text("(ε, δ)-differential privacy with δ = 1e-9")
    expect(page.locator("#levels-sold")).to_contain_text("0.0625, 0.0937, 0.125")
    page.get_by_label("Buy up to ε").select_option("0.5")
    page.get_by_role("button", name="See the price").click()
    confirm_and_wait(page)
    table = page.locator("#purchase-status table")
    shown = [row.locator("td").first.inner_text().strip() for row in table.locator("tbody tr").all()]
    assert len(shown) == 4 and all(re.fullmatch(r"-?\d+", v) for v in shown), shown
    shot(page, "purchase-released-skellam")


def test_an_owner_lists_a_centroid_from_the_builder_and_sees_its_error_radius(browse, shot):
    """The builder shows a centroid row's own inputs (columns, center, radius; no single column), and the
    listing made on the Skellam path states its error radius."""
    from market.accounts.models import User
    from market.catalog.models import Dataset
    from tests.marketplace.test_vector import locations_csv

    page = browse()
    sign_up_as_owner(page, "ines")
    dataset = ready_dataset(owner=User.objects.get(username="ines"), name="Places", data=locations_csv(),
                            relation="public_size", total_budget="10")
    Dataset.objects.filter(pk=dataset.pk).update(delta_budget="1e-6")
    row = new_listing(page, dataset, "Centre of the places", "1", "5")
    row.get_by_label(LABEL["Kind"]).select_option("centroid")
    expect(row.get_by_label(re.compile(r"^Columns$"))).to_be_visible()
    expect(row.get_by_label(LABEL["Column"])).to_be_hidden()
    row.get_by_label(re.compile(r"^Columns$")).fill("east, north")
    row.get_by_label(re.compile(r"^Center")).fill("1000, -300")
    row.get_by_label(re.compile(r"^Radius")).fill("3000")
    page.get_by_role("button", name="Compare the mechanisms").click()
    comparison = page.locator("#comparison")
    expect(comparison).to_contain_text("released on the Skellam path")
    expect(page.get_by_role("radio", name=re.compile("Skellam path"))).to_be_checked()
    shot(page, "owner-centroid-compare")
    page.get_by_role("button", name="Create the listing").click()
    expect(page.get_by_role("heading", name="Centre of the places")).to_be_visible()
    assert Listing.objects.get(title="Centre of the places").mechanism == "skellam"
    page.goto(f"/listings/{Listing.objects.get(title='Centre of the places').pk}/")
    expect(page.locator("body")).to_contain_text("error radius of the centroid")
