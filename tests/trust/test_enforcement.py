"""Caps are enforced where every level is checked (trading.services._check_step):
in the purchase service, the API and the listing page."""

import html
import re
from decimal import Decimal

import pytest

from market.core.errors import InvalidInput
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create, purchase_quote
from market.trust.services import trust_listings_set, trust_tier_members_set, trust_tiers_set

pytestmark = pytest.mark.django_db

# bob is a partner at distance 1: cap 5·e^(−0.5·1) = 3.0326; anyone else is at distance 3: 1.1156
PARTNER_CAP = "3.0326"
UNKNOWN_CAP = "1.1156"
PARTNER_REASON = "tier 'partner' at distance 1: cap = 5 × e^(−0.5·1) = 3.0326"


@pytest.fixture
def capped(listing, owner, buyer):
    trust_tiers_set(owner=owner, tiers=[("partner", "1")])
    trust_tier_members_set(owner=owner, text=f"{buyer.username},partner")
    trust_listings_set(owner=owner, listing_ids=[listing.pk])
    listing.refresh_from_db()
    return listing


def buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    purchase.refresh_from_db()
    return purchase


def page(response) -> str:
    return html.unescape(response.content.decode())


def assert_nothing_above(buyer, cap, balance):
    """No purchase above ``cap``, the wallet at ``balance``, the ledger balanced."""
    assert not Purchase.objects.filter(buyer=buyer, level_to__gt=Decimal(cap)).exists()
    assert wallet_balance(user=buyer) == Decimal(balance)
    assert ledger_is_balanced()


# --- the service


def test_a_purchase_above_the_cap_is_refused_and_charges_nothing(
    capped, buyer, users, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    with pytest.raises(InvalidInput) as caught:
        purchase_create(buyer=buyer, listing_id=capped.pk, epsilon="3.0327")
    assert caught.value.fields == {"epsilon": [f"At most {PARTNER_CAP} (your cap: {PARTNER_REASON})."]}
    assert caught.value.message == f"epsilon: 3.0327 is above your cap of {PARTNER_CAP} on this listing ({PARTNER_REASON})"
    assert not Purchase.objects.exists() and wallet_balance(user=buyer) == Decimal(100)
    assert not Holding.objects.filter(buyer=buyer, purchased__gt=0).exists()

    # exactly the cap is allowed, and released
    purchase = buy(buyer, capped, PARTNER_CAP, django_capture_on_commit_callbacks)
    assert purchase.status == "released" and purchase.price == Decimal("30.33")  # 10 × 3.0326, to the cent

    # someone not in the network: the unknown cap
    stranger = users("sam")
    fund(stranger, 100)
    with pytest.raises(InvalidInput, match=f"above your cap of {UNKNOWN_CAP}"):
        purchase_create(buyer=stranger, listing_id=capped.pk, epsilon="2")
    assert buy(stranger, capped, "1", django_capture_on_commit_callbacks).status == "released"
    assert_nothing_above(stranger, UNKNOWN_CAP, "90.00")


def test_a_buyer_moved_further_keeps_their_level_but_cannot_buy_more(
    capped, owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    buy(buyer, capped, "3", django_capture_on_commit_callbacks)
    trust_tier_members_set(owner=owner, text="")  # bob is unknown now: cap 1.1156 < 3 held
    with pytest.raises(InvalidInput, match=f"above your cap of {UNKNOWN_CAP}"):
        purchase_create(buyer=buyer, listing_id=capped.pk, epsilon="3.5")
    assert Holding.objects.get(buyer=buyer, listing=capped).purchased == Decimal(3)


def test_the_quote_carries_the_cap_and_refuses_above_it(capped, buyer, listing):
    quote = purchase_quote(buyer=buyer, listing=capped, epsilon="1")
    assert quote.cap == Decimal(PARTNER_CAP) and quote.cap_reason == PARTNER_REASON
    with pytest.raises(InvalidInput, match="above your cap"):
        purchase_quote(buyer=buyer, listing=capped, epsilon="3.1")


# --- the API


def test_the_api_refuses_a_purchase_above_the_cap_with_400_on_epsilon(capped, buyer, api, fund):
    fund(buyer, 100)
    answer = api(buyer).post("/api/v1/purchases/", {"listing": capped.pk, "epsilon": "4"}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid" and error["fields"] == {"epsilon": [f"At most {PARTNER_CAP} (your cap: {PARTNER_REASON})."]}
    assert not Purchase.objects.exists()
    assert_nothing_above(buyer, PARTNER_CAP, "100.00")


def test_the_api_shows_the_cap_in_quotes_and_listings(capped, buyer, users, api):
    quote = api(buyer).get(f"/api/v1/listings/{capped.pk}/quote/?epsilon=2").json()
    assert quote["cap"] == PARTNER_CAP and quote["cap_reason"] == PARTNER_REASON
    assert quote["ceiling"] == "5.0000" and quote["price"] == "20.00"
    refused = api(buyer).get(f"/api/v1/listings/{capped.pk}/quote/?epsilon=4").json()["error"]
    assert "epsilon" in refused["fields"]

    assert api(buyer).get(f"/api/v1/listings/{capped.pk}/").json()["your_cap"] == PARTNER_CAP
    assert api(users("sam")).get("/api/v1/listings/").json()["results"][0]["your_cap"] == UNKNOWN_CAP
    assert api().get(f"/api/v1/listings/{capped.pk}/").json()["your_cap"] is None
    # anonymous quotes count as unknown buyers
    assert api().get(f"/api/v1/listings/{capped.pk}/quote/?epsilon=1").json()["cap"] == UNKNOWN_CAP


# --- the pages


def test_the_listing_page_shows_the_cap(capped, buyer, client):
    client.force_login(buyer)
    text = page(client.get(f"/listings/{capped.pk}/"))
    assert f"Your cap on this listing: ε {PARTNER_CAP} — {PARTNER_REASON}" in text
    assert f"Above 0, at most {PARTNER_CAP}." in text
    refused = client.get(f"/listings/{capped.pk}/?epsilon=4")
    assert refused.status_code == 400 and f"At most {PARTNER_CAP} (your cap: {PARTNER_REASON})." in page(refused)


def test_an_uncapped_listing_shows_no_cap_paragraph(listing, buyer, client):
    client.force_login(buyer)
    text = page(client.get(f"/listings/{listing.pk}/"))
    assert "Your cap on this listing" not in text and "Above 0, at most 5." in text


def test_posting_the_buy_form_above_the_cap_shows_the_error(
    capped, buyer, client, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        refused = client.post(f"/listings/{capped.pk}/buy/", {"epsilon": "3.5", "idempotency_key": "form-1"})
    assert refused.status_code == 400
    error = re.search(r'<div class="message error" id="buy-error"[^>]*>(.*?)</div>', page(refused), re.S).group(1)
    assert f"At most {PARTNER_CAP} (your cap: {PARTNER_REASON})." in error
    assert not Purchase.objects.exists() and wallet_balance(user=buyer) == Decimal(100)

    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(f"/listings/{capped.pk}/buy/", {"epsilon": "2", "idempotency_key": "form-2"})
    assert bought.status_code == 302
    # the next step stops at the cap, not at twice the level held (4 > 3.0326)
    text = page(client.get(f"/listings/{capped.pk}/"))
    assert f"Next step: going to ε = {PARTNER_CAP} costs" in text

    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/listings/{capped.pk}/buy/", {"epsilon": PARTNER_CAP, "idempotency_key": "form-3"})
    assert "You hold your cap: the most accurate answer this listing sells to you." in page(client.get(f"/listings/{capped.pk}/"))
