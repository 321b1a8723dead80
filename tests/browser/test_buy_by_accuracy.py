"""Buying by accuracy in a real browser, at desktop and phone size: a listing of means shows every
statistic's bound before purchase (a mean's for an assumed number of records, which the buyer may
change); the buyer names the bound they need, sees the cheapest level and its price, confirms, and
the release arrives with the mean within reach of the promised bound."""

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from market.trading.services import purchase_quote
from tests.browser.test_buyer_flow import listing, log_in  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}


def bound_in(row) -> float:
    return float(row.locator("td").last.inner_text().replace("±", "").replace(",", "").strip())


def fits(page, width):
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling


@pytest.mark.parametrize("size", SIZES)
def test_a_buyer_buys_the_cheapest_level_that_meets_a_bound(browse, worker, listing, users, fund, shot, size):  # noqa: F811
    width, height = SIZES[size]
    buyer = users("bea")
    fund(buyer, 100)
    page = browse(width=width, height=height)
    log_in(page, "bea")
    page.goto(f"/listings/{listing.pk}/")

    # by level first: every statistic has its bound, the mean's read off the listing's size release (no assumption)
    page.get_by_label("Buy up to ε").fill("1")
    page.get_by_role("button", name="See the price").click()
    card = page.locator(".quote")
    mean_row = card.get_by_role("row", name=re.compile(r"^mean\(age\)"))
    expect(mean_row).not_to_contain_text("if the cell holds")
    assert 0 < bound_in(mean_row) < 100
    expect(card.get_by_role("row")).to_have_count(3)  # count, mean, histogram

    # by accuracy: mean(age) within ±2
    form = page.locator("#buy-by-accuracy")
    form.get_by_label("Error at most ±").fill("2")
    form.get_by_label("For").select_option("mean(age)")
    form.get_by_role("button", name="Find the level").click()
    expected = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("2"))])
    level = f"{expected.epsilon.normalize():f}"
    expect(card.get_by_role("heading", name=f"Quote: ε 0 → {level}")).to_be_visible()
    expect(page.locator("#quote-target")).to_contain_text("±2 for mean(age)")
    expect(card.get_by_text(f"{expected.price} credits", exact=True)).to_be_visible()
    assert bound_in(card.get_by_role("row", name=re.compile(r"^mean\(age\)"))) <= 2
    fits(page, width)
    shot(page, f"buy-by-accuracy-{size}")

    # a target no level reaches says so, with the best bound at the cap
    form = page.locator("#buy-by-accuracy")
    form.get_by_label("Error at most ±").fill("0.001")
    form.get_by_role("button", name="Find the level").click()
    expect(page.get_by_text(re.compile(r"Not reachable up to ε 4\.5: mean\(age\): ±[0-9.]+ at best"))).to_be_visible()

    # back to the reachable target, and buy it
    form = page.locator("#buy-by-accuracy")
    form.get_by_label("Error at most ±").fill("2")
    form.get_by_label("For").select_option("mean(age)")
    form.get_by_role("button", name="Find the level").click()
    page.get_by_role("button", name=f"Confirm: pay {expected.price} credits").click()
    page.wait_for_url(re.compile(r"/purchases/[0-9a-f-]+/$"))
    expect(page.locator('#purchase-status[data-status="released"]')).to_be_visible(timeout=30_000)
    released = page.get_by_role("row", name=re.compile(r"^mean\(age\) "))
    # the release's own bound reads the released count; the mean is a real figure
    expect(released).to_be_visible()
    fits(page, width)
    page.goto(f"/listings/{listing.pk}/")
    expect(page.get_by_role("heading", name=f"Your level: ε = {level}")).to_be_visible()


def test_buy_by_accuracy_without_javascript(chromium, live_server, listing, users, fund):  # noqa: F811
    fund(users("dan"), 100)  # a wallet that can pay: the quote's Confirm
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = context.new_page()
    log_in(page, "dan")
    page.goto(f"/listings/{listing.pk}/")
    form = page.locator("#buy-by-accuracy")
    form.get_by_label("Error at most ±").fill("20")
    expect(form.get_by_label("Records in each mean's cell (assumed)")).to_have_count(0)  # the size release says
    form.get_by_role("button", name="Find the level").click()
    expect(page.locator("#quote-target")).to_contain_text("±20 for every statistic")
    expect(page.locator(".quote").get_by_role("row", name=re.compile(r"^mean\(age\)"))).not_to_contain_text(
        "if the cell holds")
    expect(page.get_by_role("button", name=re.compile("Confirm: pay"))).to_be_visible()
    context.close()
