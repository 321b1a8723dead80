"""An owner, in a real browser at desktop and phone size: manages a listing (title, price, close,
reopen), meets every error of the create-listing form at once, changes roles, and reads the
dashboard on a phone without scrolling the page sideways."""

import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Listing
from tests.browser.test_buyer_flow import log_in
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def assert_no_sideways_scroll(page, width):
    assert page_width(page) <= width, f"{page.url}: the page is {page_width(page)} px wide on a {width} px screen"


@pytest.fixture
def owned(users):
    """Olivia's dataset (described, with a source and a licence) and a listing on it."""
    from market.catalog.services import listing_create

    owner = users("olivia", owner=True)
    dataset = ready_dataset(owner=owner, name="Clinic visits 2023, three sites, weekly", data=make_csv(300),
                            total_budget="20", description="Visits to three clinics in 2023.",
                            source="https://example.org/clinics", licence="CC-BY-4.0")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS,
                             ceiling="5", price_per_epsilon="10")
    return owner, dataset, listing


@pytest.mark.parametrize("size", SIZES)
def test_an_owner_renames_reprices_closes_and_reopens_a_listing(browse, owned, users, size, shot):
    owner, dataset, listing = owned
    width, height = SIZES[size]
    page = browse(width, height)
    log_in(page, "olivia")
    page.goto(f"/owner/listings/{listing.pk}/")
    manage = page.locator("#manage")
    expect(manage.get_by_role("heading", name="Manage this listing")).to_be_visible()
    assert_no_sideways_scroll(page, width)

    manage.get_by_label(re.compile("^Title")).fill("Clinic visits, weekly")
    manage.get_by_role("button", name="Save title and description").click()
    expect(page.get_by_text("Saved: buyers see the new title and description.")).to_be_visible()
    expect(page.get_by_role("heading", name="Clinic visits, weekly")).to_be_visible()

    manage = page.locator("#manage")
    expect(manage.locator("#price-change-note")).to_contain_text("what was sold keeps the price it was sold at")
    manage.locator("#id_price_kind_1").check()  # power
    manage.get_by_label(re.compile(r"^Price scale c")).fill("4")
    manage.get_by_label(re.compile(r"^Power p")).fill("3")
    manage.get_by_role("button", name="Change the price").click()
    expect(page.locator("#id_p_error")).to_contain_text("At most 2")  # refused, with the reason, nothing changed
    assert Listing.objects.get(pk=listing.pk).price_curve == {"kind": "linear", "c": "10.00"}
    page.locator("#manage").get_by_label(re.compile(r"^Power p")).fill("1.5")
    page.locator("#manage").get_by_role("button", name="Change the price").click()
    expect(page.get_by_text("The new price applies to purchases from now on")).to_be_visible()
    expect(page.locator("#price-change-note")).to_contain_text("P(ε) = 4.00 × ε^1.5 credits")

    page.locator("#manage").get_by_label(re.compile("^Reason")).fill("Paused while the clinics check the data.")
    page.get_by_role("button", name="Close the listing").click()
    expect(page.get_by_text("Listing closed: nothing more is sold on it.")).to_be_visible()
    expect(page.locator("#closed-reason")).to_have_text("Paused while the clinics check the data.")
    assert not Listing.objects.get(pk=listing.pk).is_open
    shot(page, f"owner-listing-closed-{size}")
    assert_no_sideways_scroll(page, width)

    # a buyer who holds nothing no longer finds it
    visitor = browse(width, height)
    assert visitor.goto(f"/listings/{listing.pk}/").status == 404

    page.get_by_role("button", name="Reopen the listing").click()
    expect(page.get_by_text("Listing reopened")).to_be_visible()
    expect(page.get_by_role("button", name="Close the listing")).to_be_visible()
    visitor.goto(f"/listings/{listing.pk}/")
    expect(visitor.get_by_role("heading", name="Clinic visits, weekly")).to_be_visible()
    # the dataset's description, source and licence are on the listing
    expect(visitor.locator("#dataset-description")).to_have_text("Visits to three clinics in 2023.")
    expect(visitor.locator("#dataset-source").get_by_role("link", name="https://example.org/clinics")).to_be_visible()
    expect(visitor.locator("#dataset-licence")).to_have_text("CC-BY-4.0")
    assert_no_sideways_scroll(visitor, width)


def test_managing_works_with_javascript_off(chromium, live_server, owned):
    owner, dataset, listing = owned
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = context.new_page()
    log_in(page, "olivia")
    page.goto(f"/owner/listings/{listing.pk}/")
    page.get_by_role("button", name="Close the listing").click()
    expect(page.locator("#closed-reason")).to_contain_text("Closed by its owner")
    page.get_by_role("button", name="Reopen the listing").click()
    expect(page.get_by_text("Listing reopened")).to_be_visible()
    assert Listing.objects.get(pk=listing.pk).is_open
    context.close()


@pytest.mark.parametrize("size", SIZES)
def test_the_create_listing_form_shows_every_error_at_once(browse, users, size):
    owner = users("olivia", owner=True)
    ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="3")
    width, height = SIZES[size]
    page = browse(width, height)
    log_in(page, "olivia")
    page.goto("/owner/listings/new/")
    # "(optional)" only where it is so
    expect(page.locator("label[for=id_title]")).to_have_text("Title")
    expect(page.locator("label[for=id_price_per_epsilon]")).to_have_text("Price scale c (credits) (for a linear or power price)")
    expect(page.locator("label[for=id_description]")).to_have_text("Description (optional)")

    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("10")
    rows = page.locator("fieldset.stat-row")
    first = rows.nth(0)
    first.get_by_label(re.compile("^Kind:?$")).select_option("sum")
    first.get_by_label(re.compile("^Column:?$")).select_option("age")
    first.get_by_label(re.compile("^Lower:?$")).fill("5")
    first.get_by_label(re.compile("^Upper:?$")).fill("1")
    rows.nth(1).get_by_label(re.compile("^Kind:?$")).select_option("mean")
    page.get_by_role("button", name="Create the listing").click()

    # one submit: the title, the price, the ceiling against the budget, both rows
    expect(page.locator("#id_title_error")).to_have_text("This field is required.")
    expect(page.locator("#id_price_per_epsilon_error")).to_have_text("Required for this price curve.")
    expect(page.locator("#id_ceiling_error")).to_have_text("At most 3.")
    expect(page.locator("#id_stats-0-lower_error")).to_have_text("lower must be below upper")
    expect(page.locator("#id_stats-1-column_error")).to_have_text("Required for a mean.")
    assert_no_sideways_scroll(page, width)
    assert not Listing.objects.exists()


@pytest.mark.parametrize("size", SIZES)
def test_a_buyer_becomes_an_owner_and_stops_being_a_buyer(browse, users, size):
    users("bea")
    width, height = SIZES[size]
    page = browse(width, height)
    log_in(page, "bea")
    page.goto("/account/")
    expect(page.get_by_role("button", name=re.compile("^Stop being"))).to_have_count(0)
    page.get_by_role("button", name="Become an owner too (list my data)").click()
    expect(page.get_by_role("heading", name="Owner dashboard")).to_be_visible()
    assert_no_sideways_scroll(page, width)
    page.goto("/account/")
    page.get_by_role("button", name="Stop being a buyer").click()
    expect(page.get_by_text(re.compile("You are no longer a buyer; your releases stay in your library"))).to_be_visible()
    expect(page.get_by_role("button", name="Become a buyer too (buy data)")).to_be_visible()
    # the only role left is kept
    expect(page.get_by_role("button", name=re.compile("^Stop being"))).to_have_count(0)
    expect(page.get_by_text("take the other role first: an account keeps at least one")).to_be_visible()
    assert_no_sideways_scroll(page, width)


@pytest.mark.parametrize("size", SIZES)
def test_an_owner_with_an_open_listing_is_told_to_close_it_first(browse, owned, size):
    from market.accounts.services import user_role_add

    owner, dataset, listing = owned
    user_role_add(user=owner, role="buyer")
    width, height = SIZES[size]
    page = browse(width, height)
    log_in(page, "olivia")
    page.goto("/account/")
    page.get_by_role("button", name="Stop being an owner").click()
    expect(page.get_by_text(re.compile("You are still an owner: you have 1 open listing: close it first"))).to_be_visible()
    page.goto(f"/owner/listings/{listing.pk}/")
    page.get_by_role("button", name="Close the listing").click()
    page.goto("/account/")
    page.get_by_role("button", name="Stop being an owner").click()
    expect(page.get_by_text(re.compile("You are no longer an owner"))).to_be_visible()
    expect(page.get_by_role("link", name=re.compile("Owner", re.I)).filter(has_text=re.compile("^Owner"))).to_have_count(0)


@pytest.mark.parametrize("size", SIZES)
def test_the_owner_dashboard_fits_the_screen(browse, owned, users, size, shot):
    from market.catalog.services import listing_create

    owner, dataset, listing = owned
    for title in ("Mean income by age band and clinic, weekly, all three sites", "Counts"):
        listing_create(owner=owner, dataset_id=dataset.public_id, title=title, statistics=[{"kind": "count"}],
                       ceiling="1", price_per_epsilon="1234567.89")
    width, height = SIZES[size]
    page = browse(width, height)
    log_in(page, "olivia")
    page.goto("/owner/")
    expect(page.get_by_role("heading", name="Owner dashboard")).to_be_visible()
    assert_no_sideways_scroll(page, width)
    # a wide table scrolls inside its own wrapper, never the page
    for wrap in page.locator(".table-wrap").all():
        box = wrap.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
    if size == "phone":  # the listings table is wider than a phone: its wrapper scrolls
        scrolls = page.locator(".table-wrap").first.evaluate("w => w.scrollWidth > w.clientWidth")
        assert scrolls
    shot(page, f"owner-dashboard-{size}")
    page.goto(f"/owner/listings/{listing.pk}/")
    assert_no_sideways_scroll(page, width)


def test_an_owner_sees_a_listing_over_a_large_table_prepare_then_go_on_sale(browse, users, settings, late_worker, shot):
    """The dashboard and the listing's page say "preparing" while a worker computes the answer (every
    table is large here), then "on sale" once the worker has stored it."""
    from market.catalog.services import listing_create

    settings.LISTING_PREPARE_INLINE_ROWS = 0
    owner = users("olivia", owner=True)
    dataset = ready_dataset(owner=owner, name="Clinic visits", data=make_csv(300), total_budget="20")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Clinic visits by age",
                             statistics=STATISTICS, ceiling="5", price_per_epsilon="10")
    page = browse()
    log_in(page, "olivia")
    page.goto("/owner/")
    row = page.get_by_role("row", name=re.compile("Clinic visits by age"))
    expect(row.locator(".badge")).to_have_text("preparing")
    page.goto(f"/owner/listings/{listing.pk}/")
    expect(page.locator("#preparing")).to_contain_text("Its budget is reserved meanwhile")
    expect(page.locator("#status")).to_contain_text("Not on sale yet.")
    shot(page, "owner-listing-preparing")
    late_worker()  # the ingest worker computes it now
    for _ in range(60):
        if Listing.objects.get(pk=listing.pk).status != "preparing":
            break
        page.wait_for_timeout(500)
    page.reload()
    expect(page.locator("#status")).to_contain_text("Buyers can buy it now.")
    expect(page.locator("#preparing")).to_have_count(0)
