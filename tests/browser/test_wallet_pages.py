"""Money on the pages, in a real browser at desktop and phone size (issue 15): a purchase refused
for credits says why and keeps its quote, the quote warns of a short wallet (with a demo top-up
that comes back to it), statements carry a running balance, and an owner is paid out."""

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from market.ledger.models import Payout
from market.ledger.selectors import earnings_balance, wallet_balance
from market.trading.models import Purchase
from tests.browser.test_buyer_flow import log_in
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = pytest.mark.parametrize("size", [(1280, 900), (390, 844)], ids=["desktop", "phone"])


@pytest.fixture
def listing(users):
    from market.catalog.services import listing_create

    owner = users("olivia", owner=True)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(400), total_budget="100")
    return listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS, ceiling="5",
        price_per_epsilon="10",
    )


@pytest.fixture
def bought(listing, users, fund):
    """``bought(name, eps)``: a buyer ``name`` funded with 50 credits who bought the listing up to ``eps``."""
    from market.trading.services import purchase_create

    def buy(name, eps):
        buyer = users(name)
        fund(buyer, 50)
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
        return buyer

    return buy


def fits(page):
    """Nothing wider than the screen: no sideways scrolling of the page itself."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def statement_rows(page, table_id):
    rows = page.locator(f"#{table_id} tbody tr")
    return [[cell.strip() for cell in rows.nth(i).locator("td").all_inner_texts()][1:] for i in range(rows.count())]


@SIZES
def test_a_short_wallet_is_warned_refused_with_its_reason_and_topped_up(browse, listing, users, settings, size, shot):
    settings.DEMO_MODE = True
    users("nina")  # a new buyer: 0 credits
    page = browse(*size)
    log_in(page, "nina")
    page.goto(f"/listings/{listing.pk}/")
    page.get_by_label("Buy up to ε").fill("2")
    page.get_by_role("button", name="See the price").click()
    short = page.locator("#wallet-short")
    expect(short).to_contain_text("Your wallet cannot pay this: it is 20.00 credits short.")
    expect(short).to_contain_text("It holds 0.00 credits; this level costs 20.00 credits.")
    # no Confirm that must fail: the way to add credits instead, in view beside the quote
    expect(page.get_by_role("button", name=re.compile("Confirm: pay"))).to_have_count(0)
    short.scroll_into_view_if_needed()
    expect(short).to_be_in_viewport()
    expect(page.get_by_role("heading", name="Quote: ε 0 → 2")).to_be_visible()
    fits(page)
    shot(page, f"wallet-short-{size[0]}")
    assert not Purchase.objects.exists()

    # the demo top-up on the quote itself, prefilled with what is missing, comes back to the quote
    expect(page.get_by_label("Top up (credits)")).to_have_value("20.00")
    page.get_by_role("button", name="Add 20.00 credits (demo)").click()
    expect(page.get_by_text("Added 20.00 credits.")).to_be_visible()
    assert re.search(rf"/listings/{listing.pk}/\?epsilon=2#buy$", page.url)
    expect(page.get_by_role("heading", name="Quote: ε 0 → 2")).to_be_visible()
    expect(page.locator("#wallet-short")).to_have_count(0)
    expect(page.locator("#quote-wallet")).to_have_text("Wallet: 20.00 credits")
    expect(page.get_by_role("button", name="Confirm: pay 20.00 credits")).to_be_visible()  # now it can pay
    from market.accounts.models import User

    assert wallet_balance(user=User.objects.get(username="nina")) == Decimal("20.00")


@SIZES
def test_outside_demo_mode_the_quote_says_how_to_fund_the_wallet(browse, listing, users, settings, size):
    settings.DEMO_MODE = False
    users("nora")
    page = browse(*size)
    log_in(page, "nora")
    page.goto(f"/listings/{listing.pk}/?epsilon=1")
    expect(page.locator("#wallet-short")).to_contain_text("ask them to fund the wallet of nora")
    expect(page.get_by_role("button", name="Top up (demo)")).to_have_count(0)
    fits(page)


@SIZES
def test_the_wallet_statement_has_a_running_balance(browse, bought, size, shot):
    bought("bea", "0.5")
    page = browse(*size)
    log_in(page, "bea")
    page.goto("/library/")
    assert statement_rows(page, "wallet-statement") == [
        ["Purchase: Clinic visits, ε 0 → 0.5", "-5.00", "45.00"],
        ["Top-up", "+50.00", "50.00"],
    ]
    expect(page.locator("#wallet")).not_to_contain_text("eps")
    fits(page)
    shot(page, f"library-statement-{size[0]}")


@SIZES
def test_an_owner_reads_their_earnings_and_is_paid_out(browse, bought, settings, size, shot):
    settings.DEMO_MODE = True
    bought("bob", "2.5")
    page = browse(*size)
    log_in(page, "olivia")
    page.goto("/owner/")
    expect(page.locator("#earnings-card")).to_contain_text("25.00 credits")
    page.locator("#earnings-card").get_by_role("link", name="Earnings, statement and payouts").click()
    expect(page.get_by_role("heading", name="Earnings", exact=True)).to_be_visible()
    expect(page.locator("#earnings-balance")).to_have_text("25.00 credits")
    assert statement_rows(page, "earnings-statement") == [["Sale: Clinic visits, ε 0 → 2.5", "+25.00", "25.00"]]
    fits(page)

    amount = page.get_by_label("Amount (credits)")
    expect(amount).to_have_value("25.00")
    amount.fill("40")
    page.get_by_role("button", name="Pay out (demo)").click()
    expect(page.get_by_text("Your earnings hold 25.00 credits: ask for at most that.")).to_be_visible()
    assert not Payout.objects.exists()

    page.get_by_label("Amount (credits)").fill("10")
    page.get_by_role("button", name="Pay out (demo)").click()
    expect(page.get_by_text("Payout of 10.00 credits paid out.")).to_be_visible()
    expect(page.locator("#earnings-balance")).to_have_text("15.00 credits")
    expect(page.locator("#payouts-paid")).to_have_text("10.00 credits")
    assert statement_rows(page, "earnings-statement") == [
        ["Payout (paid) from Clinic visits", "-10.00", "15.00"],
        ["Sale: Clinic visits, ε 0 → 2.5", "+25.00", "25.00"],
    ]
    expect(page.locator("#payouts tbody tr")).to_have_count(1)
    fits(page)
    shot(page, f"owner-earnings-{size[0]}")
    owner = Payout.objects.get().user
    assert earnings_balance(user=owner) == Decimal("15.00")
