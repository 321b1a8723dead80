"""Money on the pages (issue 15): a refused purchase says why and keeps its quote, a short wallet
is warned about on the quote, statements carry a running balance in people's notation, and an
owner sees their earnings and asks for a payout."""

import re
from decimal import Decimal

import pytest

from market.ledger.models import Payout
from market.ledger.selectors import earnings_balance, wallet_balance
from market.trading.models import Purchase

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_a_purchase_refused_for_credits_says_why_and_keeps_the_quote(client, listing, buyer):
    client.force_login(buyer)
    response = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "2", "idempotency_key": "k"})
    assert response.status_code == 402
    page = text(response)
    assert 'id="buy-error"' in page and "Not enough credits: nothing was bought. Your wallet holds 0.00 credits." in page
    assert "Quote: ε 0 → 2" in page  # the quote is still there, without a Confirm that must fail again
    assert "Confirm: pay" not in page and "Your wallet cannot pay this: it is 20.00 credits short." in page
    # the reason is where the buyer looks: beside the quote, and focused (the browser scrolls to it)
    card = page[page.index("Quote: ε 0 → 2"):]
    assert card.index('id="buy-error"') < card.index('id="wallet-short"')
    assert re.search(r'id="buy-error"[^>]*autofocus', page)
    assert not Purchase.objects.exists() and wallet_balance(user=buyer) == Decimal("0.00")


def test_the_quote_warns_of_a_short_wallet_with_a_demo_top_up_back_to_the_quote(client, listing, buyer, fund, settings):
    settings.DEMO_MODE = True
    fund(buyer, 5)
    client.force_login(buyer)
    page = text(client.get(f"/listings/{listing.pk}/?epsilon=2"))
    assert "Your wallet cannot pay this: it is 15.00 credits short.</strong> It holds 5.00 credits; this level costs 20.00 credits." in page
    assert 'name="next" value="/listings/%d/?epsilon=2#buy"' % listing.pk in page and "Add 15.00 credits (demo)" in page
    assert "Confirm: pay" not in page  # no Confirm that must fail
    response = client.post("/wallet/top-up/", {"amount": "15.00", "next": f"/listings/{listing.pk}/?epsilon=2#buy"})
    assert response.status_code == 302 and response["Location"] == f"/listings/{listing.pk}/?epsilon=2#buy"
    page = text(client.get(f"/listings/{listing.pk}/?epsilon=2"))
    assert "credits short" not in page and "Wallet: 20.00 credits" in page and "Confirm: pay 20.00 credits" in page


def test_a_top_up_never_sends_anyone_elsewhere(client, buyer, settings):
    settings.DEMO_MODE = True
    client.force_login(buyer)
    for elsewhere in ("https://evil.example/", "//evil.example/x"):
        response = client.post("/wallet/top-up/", {"amount": "1", "next": elsewhere})
        assert response["Location"] == "/library/"


def test_outside_demo_mode_the_quote_says_how_the_wallet_is_funded(client, listing, buyer, settings):
    settings.DEMO_MODE = False
    client.force_login(buyer)
    page = text(client.get(f"/listings/{listing.pk}/?epsilon=1"))
    assert "it is 10.00 credits short" in page and "ask them to fund the wallet of <strong>bob</strong>" in page
    assert "(demo)" not in page and "Confirm: pay" not in page and 'href="/library/#wallet" id="add-credits"' in page


def test_no_warning_when_the_wallet_holds_enough(client, listing, buyer, fund):
    fund(buyer, 20)
    client.force_login(buyer)
    page = text(client.get(f"/listings/{listing.pk}/?epsilon=2"))
    assert "credits short" not in page and "Wallet: 20.00 credits" in page


def test_the_library_statement_has_a_running_balance_in_peoples_notation(client, listing, buyer, fund):
    from market.trading.services import purchase_create

    fund(buyer, 30)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="0.5")
    client.force_login(buyer)
    page = text(client.get("/library/"))
    assert "Purchase: Clinic visits, ε 0 → 0.5" in page and "eps" not in page.split("Statement")[1]
    rows = re.findall(r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td></tr>', page.split("Statement")[1])
    assert rows == [("-5.00", "25.00"), ("+30.00", "30.00")]


def test_an_owner_sees_earnings_and_is_paid_out_in_demo_mode(client, listing, owner, buyer, fund, settings):
    from market.trading.services import purchase_create

    settings.DEMO_MODE = True
    fund(buyer, 50)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2.5")
    client.force_login(owner)
    dashboard = text(client.get("/owner/"))
    assert 'id="earnings-card"' in dashboard and "25.00 <small>credits</small>" in dashboard
    assert 'href="/owner/earnings/"' in dashboard
    page = text(client.get("/owner/earnings/"))
    assert "Sale: Clinic visits, ε 0 → 2.5" in page and 'value="25.00"' in page and "Pay out (demo)" in page
    response = client.post("/owner/earnings/", {"amount": "10", "idempotency_key": "p1"})
    assert response.status_code == 302
    client.post("/owner/earnings/", {"amount": "10", "idempotency_key": "p1"})  # a repeat: nothing more
    assert earnings_balance(user=owner) == Decimal("15.00") and Payout.objects.get().status == "paid"
    page = text(client.get("/owner/earnings/"))
    assert "Payout of 10.00 credits paid out." in page and "Payout (paid)" in page
    rows = re.findall(r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td></tr>', page)
    assert rows[:2] == [("-10.00", "15.00"), ("+25.00", "25.00")]


def test_a_payout_above_the_earnings_is_refused_and_changes_nothing(client, listing, owner, buyer, fund, settings):
    from market.trading.services import purchase_create

    settings.DEMO_MODE = False
    fund(buyer, 50)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    client.force_login(owner)
    response = client.post("/owner/earnings/", {"amount": "10.01"})
    assert response.status_code == 402
    assert "Your earnings hold 10.00 credits: ask for at most that." in text(response)
    assert client.post("/owner/earnings/", {"amount": "abc"}).status_code == 400
    assert not Payout.objects.exists() and earnings_balance(user=owner) == Decimal("10.00")
    assert client.post("/owner/earnings/", {"amount": "4"}).status_code == 302
    page = text(client.get("/owner/earnings/"))
    assert "Payout of 4.00 credits requested: staff will pay it." in page and "Request a payout" in page
    assert 'id="payouts-requested">4.00' in page


def test_the_api_statements_and_payouts(api, listing, owner, buyer, fund, settings):
    from market.trading.services import purchase_create

    settings.DEMO_MODE = True
    fund(buyer, 50)
    purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    statement = api(buyer).get("/api/v1/wallet/statement/").json()["results"]
    assert [(r["description"], r["amount"], r["balance_after"]) for r in statement] == [
        ("Purchase: Clinic visits, ε 0 → 2", "-20.00", "30.00"), ("Top-up", "50.00", "50.00"),
    ]
    assert {"transfer", "kind", "memo", "amount", "at"} <= set(statement[0])  # the fields it had
    client = api(owner)
    assert client.get("/api/v1/earnings/").json() == {"balance": "20.00", "requested": "0.00", "paid": "0.00", "currency": "credits"}
    made = client.post("/api/v1/earnings/payouts/", {"amount": "7.5"}, format="json", HTTP_IDEMPOTENCY_KEY="x")
    assert made.status_code == 201 and made.json()["status"] == "paid" and made.json()["amount"] == "7.50"
    again = client.post("/api/v1/earnings/payouts/", {"amount": "7.5"}, format="json", HTTP_IDEMPOTENCY_KEY="x")
    assert again.status_code == 200 and again.json()["transfer"] == made.json()["transfer"]
    too_much = client.post("/api/v1/earnings/payouts/", {"amount": "12.51"}, format="json")
    assert too_much.status_code == 402 and too_much.json()["error"]["code"] == "insufficient_funds"
    assert client.post("/api/v1/earnings/payouts/", {"amount": "-1"}, format="json").status_code == 400
    earnings = client.get("/api/v1/earnings/statement/").json()["results"]
    assert [(r["description"], r["amount"], r["balance_after"]) for r in earnings] == [
        ("Payout (paid) from Clinic visits", "-7.50", "12.50"), ("Sale: Clinic visits, ε 0 → 2", "20.00", "20.00"),
    ]
    assert client.get("/api/v1/earnings/").json()["paid"] == "7.50"
    assert api(buyer).get("/api/v1/earnings/").status_code == 403
