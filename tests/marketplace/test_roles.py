"""The buyer role means something: an account that is not a buyer cannot buy or top up,
through the services, the API and the pages (403, with how to add the role)."""

from decimal import Decimal

import pytest

from market.core.errors import Forbidden
from market.ledger.models import Transfer
from market.ledger.payments import ManualFunding
from market.ledger.selectors import wallet_balance
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create


@pytest.fixture
def seller(users):
    """An owner who never asked to buy."""
    user = users("sam", owner=True)
    user.is_buyer = False
    user.save(update_fields=["is_buyer"])
    return user


def _assert_role_error(answer):
    assert answer.status_code == 403, answer.content
    error = answer.json()["error"]
    assert error["status"] == 403 and error["code"] == "role_required"
    assert "buyer role" in error["message"] and "/account/" in error["message"]


def test_services_refuse_a_non_buyer_and_change_nothing(seller, listing):
    with pytest.raises(Forbidden) as refused:
        purchase_create(buyer=seller, listing_id=listing.pk, epsilon="1")
    assert refused.value.code == "role_required"
    with pytest.raises(Forbidden):
        ManualFunding().fund(user=seller, amount=Decimal("10"))
    assert not Purchase.objects.exists() and not Holding.objects.exists() and not Transfer.objects.exists()


def test_api_a_non_buyer_cannot_buy_or_top_up(api, seller, listing, settings):
    settings.DEMO_MODE = True
    client = api(seller)
    _assert_role_error(client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json"))
    _assert_role_error(client.post("/api/v1/wallet/top-up/", {"amount": "10.00"}, format="json"))
    assert wallet_balance(user=seller) == Decimal("0.00") and not Purchase.objects.exists()
    # a quote writes nothing: it stays open to anyone who may see the listing (as to visitors)
    assert client.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=1").status_code == 200


def test_api_a_buyer_still_buys_and_tops_up(api, buyer, listing, settings):
    settings.DEMO_MODE = True
    client = api(buyer)
    assert client.post("/api/v1/wallet/top-up/", {"amount": "10.00"}, format="json").status_code == 201
    assert client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json").status_code == 202


def test_pages_hide_buying_and_top_up_from_a_non_buyer(client, seller, listing, settings):
    settings.DEMO_MODE = True
    client.force_login(seller)
    page = client.get(f"/listings/{listing.pk}/?epsilon=1").content.decode()
    assert 'id="not-buyer"' in page and 'href="/account/"' in page
    assert "Confirm: pay" not in page and f"/listings/{listing.pk}/buy/" not in page
    library = client.get("/library/").content.decode()
    assert 'id="not-buyer"' in library and "Top up (demo)" not in library
    # posting anyway is refused and changes nothing
    bought = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1", "idempotency_key": "k"})
    assert bought.status_code == 403 and 'id="not-buyer"' in bought.content.decode()
    topped = client.post("/wallet/top-up/", {"amount": "10"}, follow=True)
    assert "add the buyer role" in topped.content.decode()
    assert wallet_balance(user=seller) == Decimal("0.00") and not Purchase.objects.exists()


def test_pages_still_offer_buying_and_top_up_to_a_buyer(client, buyer, listing, settings, fund):
    settings.DEMO_MODE = True
    client.force_login(buyer)
    page = client.get(f"/listings/{listing.pk}/?epsilon=1").content.decode()
    assert "Add 10.00 credits (demo)" in page and 'id="not-buyer"' not in page  # an empty wallet: add credits first
    fund(buyer, 10)
    page = client.get(f"/listings/{listing.pk}/?epsilon=1").content.decode()
    assert "Confirm: pay 10.00 credits" in page and 'id="not-buyer"' not in page
    assert "Top up (demo)" in client.get("/library/").content.decode()


def test_admin_top_up_offers_only_buyers(admin_client, seller, buyer):
    page = admin_client.get("/admin/ledger/transfer/add/").content.decode()
    assert f'value="{buyer.pk}"' in page and f'value="{seller.pk}"' not in page
