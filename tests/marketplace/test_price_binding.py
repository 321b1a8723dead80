"""The price the buyer saw is the price they pay (issue 27).

``POST purchases/`` takes ``max_price``: a step whose price rose above it (its owner changed the
price between the quote and the purchase) is refused with 409 ``price_changed`` carrying the new
quote, and nothing is charged; a lower price is charged as it is. The browser's Confirm sends the
price it showed, and asks again when it rose.
"""

from decimal import Decimal

import pytest

from market.catalog.services import listing_update
from market.core.errors import PriceChanged
from market.ledger.models import Leg
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create

pytestmark = pytest.mark.django_db

PURCHASES = "/api/v1/purchases/"


def quote_of(client, listing, eps="1") -> dict:
    answer = client.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon={eps}")
    assert answer.status_code == 200, answer.json()
    return answer.json()


def nothing_bought(buyer, listing, balance: str) -> None:
    assert wallet_balance(user=buyer) == Decimal(balance)
    assert not Purchase.objects.filter(buyer=buyer).exists()
    assert not Leg.objects.filter(transfer__kind="purchase").exists()
    assert Holding.objects.filter(buyer=buyer, listing=listing, purchased__gt=0).count() == 0


def test_a_price_raised_between_the_quote_and_the_purchase_is_refused_with_the_new_quote(
    api, listing, owner, buyer, fund
):
    fund(buyer, 100)
    client = api(buyer)
    seen = quote_of(client, listing)
    assert seen["price"] == "10.00"
    listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="40.00")  # the owner, meanwhile

    refused = client.post(PURCHASES, {"listing": listing.pk, "epsilon": "1", "max_price": seen["price"]},
                          format="json", HTTP_IDEMPOTENCY_KEY="k-raised")
    assert refused.status_code == 409, refused.json()
    error = refused.json()["error"]
    assert error["code"] == "price_changed" and error["status"] == 409
    assert "40.00" in error["message"] and "nothing was charged" in error["message"]
    assert set(error["fields"]) == {"max_price"}
    assert error["quote"] == quote_of(client, listing)  # the same fields and figures as GET .../quote/
    assert error["quote"]["price"] == "40.00"
    nothing_bought(buyer, listing, "100.00")

    # confirming the new price buys at it
    again = client.post(PURCHASES, {"listing": listing.pk, "epsilon": "1", "max_price": error["quote"]["price"]},
                        format="json", HTTP_IDEMPOTENCY_KEY="k-confirmed")
    assert again.status_code == 202, again.json()
    assert again.json()["price"] == "40.00"
    assert wallet_balance(user=buyer) == Decimal("60.00")
    assert ledger_is_balanced()


def test_max_price_is_a_ceiling_a_lower_price_is_charged_as_it_is(api, listing, owner, buyer, fund):
    fund(buyer, 100)
    client = api(buyer)
    seen = quote_of(client, listing)
    listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="4.00")
    bought = client.post(PURCHASES, {"listing": listing.pk, "epsilon": "1", "max_price": seen["price"]}, format="json")
    assert bought.status_code == 202, bought.json()
    assert bought.json()["price"] == "4.00"
    assert wallet_balance(user=buyer) == Decimal("96.00")
    # the exact quoted price passes too (a number as well as text)
    exact = client.post(PURCHASES, {"listing": listing.pk, "epsilon": "2", "max_price": 4}, format="json")
    assert exact.status_code in (202, 409), exact.json()  # 409 busy: the first is still being released
    assert exact.json().get("error", {}).get("code", "busy") == "busy"


def test_an_idempotent_repeat_keeps_answering_the_first_purchase_after_a_price_change(
    api, listing, owner, buyer, fund
):
    fund(buyer, 100)
    client = api(buyer)
    body = {"listing": listing.pk, "epsilon": "1", "max_price": "10.00"}
    first = client.post(PURCHASES, body, format="json", HTTP_IDEMPOTENCY_KEY="k-once")
    assert first.status_code == 202, first.json()
    listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="40.00")
    repeat = client.post(PURCHASES, body, format="json", HTTP_IDEMPOTENCY_KEY="k-once")
    assert repeat.status_code == 200, repeat.json()
    assert repeat.json()["id"] == first.json()["id"] and repeat.json()["price"] == "10.00"
    assert wallet_balance(user=buyer) == Decimal("90.00")


@pytest.mark.parametrize("max_price", ["-1", "abc", "1.234", "", " 10", True, [], {"c": 1}, -0.5, 1e20, "1e3"])
def test_a_bad_max_price_is_a_400_naming_it_and_changes_nothing(api, listing, buyer, fund, max_price):
    fund(buyer, 100)
    answer = api(buyer).post(PURCHASES, {"listing": listing.pk, "epsilon": "1", "max_price": max_price}, format="json")
    assert answer.status_code == 400, answer.json()
    assert "max_price" in answer.json()["error"]["fields"]
    nothing_bought(buyer, listing, "100.00")


def test_the_service_checks_the_price_read_under_its_locks(listing, owner, buyer, fund, monkeypatch):
    """The check is inside the purchase's transaction, on the listing as its share lock reads it (here
    the row read under the lock carries a price an owner committed just before), and the refusal
    rolls back everything the transaction did."""
    import market.trading.services as trading
    from market.catalog.pricing import curve_of

    fund(buyer, 100)
    real_lock = trading.listing_share_lock

    def read_after_the_owner_changed_it(*, listing_id):
        locked = real_lock(listing_id=listing_id)
        locked.price_curve = {**curve_of(locked).as_dict(), "c": "25.00"}
        return locked

    monkeypatch.setattr(trading, "listing_share_lock", read_after_the_owner_changed_it)
    with pytest.raises(PriceChanged) as refused:
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", max_price="10.00")
    assert refused.value.status == 409 and "rose to 25.00 credits" in refused.value.message
    assert refused.value.quote.epsilon == Decimal(1)
    nothing_bought(buyer, listing, "100.00")
    assert not Holding.objects.filter(buyer=buyer).exists()  # the holding made under the lock was rolled back too


def test_the_schema_documents_max_price_and_the_price_changed_answer(api):
    schema = api().get("/api/schema/?format=json").json()
    request = schema["components"]["schemas"]["PurchaseCreateRequest"]
    assert "max_price" in request["properties"] and "max_price" not in request.get("required", [])
    conflict = schema["paths"]["/api/v1/purchases/"]["post"]["responses"]["409"]
    assert "price_changed" in conflict["description"]
    assert conflict["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}  # the one shape
    detail = schema["components"]["schemas"]["ErrorDetail"]
    assert detail["properties"]["quote"]["allOf"] == [{"$ref": "#/components/schemas/Quote"}]
    assert "quote" not in detail["required"]  # only price_changed carries one
