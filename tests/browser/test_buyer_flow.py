"""A buyer, in a real browser: signs up, is funded, buys step by step, watches releases arrive."""

from tests.datasets import ready_dataset
import re

import pytest
from tests.fixtures.market import STATISTICS, make_csv
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listing(users, fund):
    from market.catalog.services import listing_create

    owner = users("olivia", owner=True)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(800), total_budget="100")
    return listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS, ceiling="5", price_per_epsilon="10",
        compensation={"E": "40", "rate": "1", "E_min": "0"},
    )


def sign_up(page, username, role_label):
    page.goto("/signup/")
    page.get_by_label("Username").fill(username)
    page.get_by_label(role_label).check()
    page.locator("#id_password1").fill("a-long-password-1")
    page.locator("#id_password2").fill("a-long-password-1")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_text(f"Welcome, {username}.")).to_be_visible()


def confirm_and_wait(page):
    """Confirm the quote on the page, then wait for the release (the worker makes it; the purchase
    page updates itself, htmx, no reload)."""
    confirm = page.get_by_role("button", name=re.compile("Confirm: pay"))
    expect(confirm).to_be_visible()
    confirm.click()
    page.wait_for_url(re.compile(r"/purchases/[0-9a-f-]+/$"))
    expect(page.locator('#purchase-status[data-status="released"]')).to_be_visible(timeout=30_000)


def buy(page, listing_id, eps):
    page.goto(f"/listings/{listing_id}/")
    page.get_by_label("Buy up to ε").fill(eps)
    page.get_by_role("button", name="See the price").click()
    confirm_and_wait(page)
    row = page.get_by_role("row", name=re.compile(r"^count "))
    return float(row.locator("td").nth(1).inner_text().replace("±", "").replace(",", "").strip())





def test_a_buyer_buys_step_by_step_and_the_error_shrinks(browse, worker, listing, shot):
    page = browse()
    page.goto("/")
    shot(page, "catalogue")
    sign_up(page, "bea", "Buy data")

    page.goto("/library/")
    page.get_by_label("Amount (credits)").fill("100")
    page.get_by_role("button", name="Top up (demo)").click()
    expect(page.get_by_text("Added 100.00 credits.")).to_be_visible()

    page.goto(f"/listings/{listing.pk}/")
    expect(page.locator(".error-chart svg.plot").first).to_be_visible()
    # whom a release protects and what it guarantees, in plain words
    expect(page.locator("#protects")).to_contain_text("Protects any one record, whether or not they are in the data")
    expect(page.locator("#engine")).to_contain_text("Exact integer noise, exactly ε-differentially private")
    expect(page.locator("#guarantee")).to_contain_text("exactly ε-differentially private, with no exception (δ = 0)")
    page.get_by_label("Buy up to ε").fill("0.5")
    page.get_by_role("button", name="See the price").click()
    expect(page.get_by_text("5.00 credits", exact=True)).to_be_visible()
    shot(page, "listing-with-quote")

    bound_05 = buy(page, listing.pk, "0.5")
    shot(page, "purchase-released")
    bound_15 = buy(page, listing.pk, "1.5")
    assert bound_15 < bound_05 / 2.5  # the bound scales as 1/eps: 0.5 -> 1.5 is 3x smaller

    page.goto(f"/listings/{listing.pk}/")
    expect(page.get_by_role("heading", name="Your level: ε = 1.5")).to_be_visible()
    page.goto("/library/")
    expect(page.get_by_text("bought ε = 1.5, released ε = 1.5")).to_be_visible()
    expect(page.locator("#wallet .stat")).to_contain_text("85.00")
    shot(page, "library")
    with page.expect_download() as download:
        page.get_by_role("link", name="JSON").first.click()
    assert download.value.suggested_filename.endswith("-eps-1.5.json")

    # the owner sees the sale and the privacy spent: the largest level, 1.5, not 0.5 + 1.5, plus the
    # listing's size release (0.5, a tenth of its ceiling, published when it was made)
    owner = browse()
    log_in(owner, "olivia")
    owner.goto(f"/owner/listings/{listing.pk}/")
    expect(owner.get_by_text(re.compile(r"ε 2 spent of your ceiling ε 5"))).to_be_visible()
    expect(owner.locator("#privacy-gauge svg.plot")).to_be_visible()
    # privacy at risk: per released level, the finer eps, its risk and the budgets (a folded reference section)
    expect(owner.get_by_role("heading", name="Privacy at risk and compensation")).to_be_visible()
    for summary in owner.locator("details.reference > summary").all():
        summary.click()
    expect(owner.locator("#budget-chart svg.plot")).to_be_visible()
    risk = owner.locator("details", has=owner.get_by_role("heading", name="Privacy at risk and compensation"))
    expect(risk.get_by_role("row").filter(has_text="credits")).to_have_count(2)  # levels 0.5 and 1.5, with budgets
    # the exact guarantee of each released level, charted and tabled
    expect(owner.locator("#profile-chart svg.plot")).to_be_visible()
    expect(owner.locator("#profile-table tbody tr")).to_have_count(2)
    owner.evaluate("document.querySelectorAll('details.reference').forEach(d => d.open = false)")  # as it arrives
    shot(owner, "owner-listing")


def test_pages_read_without_javascript(chromium, live_server, listing, users, fund):
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/")
    expect(page.get_by_role("link", name="Clinic visits")).to_be_visible()
    page.goto(f"/listings/{listing.pk}/")
    # the charts' figures are in a table too
    expect(page.get_by_role("table").filter(has_text="price (credits)")).to_be_visible()
    page.get_by_label("Buy up to ε").fill("2")
    page.get_by_role("button", name="See the price").click()
    expect(page.get_by_text("20.00 credits", exact=True)).to_be_visible()
    context.close()


def log_in(page, username):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("a-long-password-1")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def test_a_level_above_the_ceiling_shows_its_error(browse, listing, users):
    users("carl")
    page = browse(width=390, height=844)  # a phone
    log_in(page, "carl")
    page.goto(f"/listings/{listing.pk}/")
    page.get_by_label("Buy up to ε").fill("9")
    page.get_by_role("button", name="See the price").click()
    expect(page.get_by_text("At most 4.5 (the ceiling less the size release).")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("Confirm"))).to_have_count(0)
