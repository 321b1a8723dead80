"""A purchase's writes made as one statement each pair (``market.core.writes.RowInsert``: the purchase
with its holding raised, the transfer with its legs) store what the ORM's saves store, row for row.

Two buyers take the same steps on one listing, one with the single statements and one through the ORM
(``RowInsert.enabled = False``); their purchases, holdings, transfers, legs and balances must match
in everything but ids and times. The objects the service hands back must equal their rows read
again (what a caller goes on with after the statement). PostgreSQL only: elsewhere the ORM is the
only way."""

from decimal import Decimal

import pytest
from django.db import connection

from market.core.writes import RowInsert
from market.ledger.models import Account, Leg, Transfer
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the single statements are PostgreSQL's")

STEPS = ["0.5", "1.25", "2"]


def _buy(buyer, listing, *, one_statement: bool, capture) -> list[Purchase]:
    RowInsert.enabled = one_statement
    try:
        made = []
        for i, level in enumerate(STEPS):
            with capture(execute=False):  # no release: the purchases stay queued, each its own step
                result = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level, idempotency_key=f"k{i}")
            made.append(result.purchase)
            Purchase.objects.filter(pk=result.purchase.pk).update(status=Purchase.Status.RELEASED)
            Holding.objects.filter(buyer=buyer, listing=listing).update(released=Decimal(level))
        return made
    finally:
        RowInsert.enabled = True


def _stored(buyer, listing) -> dict:
    purchases = list(Purchase.objects.filter(buyer=buyer).order_by("created_at").values(
        "listing_id", "level_from", "level_to", "price", "failure_reason", "idempotency_key", "attempts", "unsent"))
    holding = Holding.objects.filter(buyer=buyer, listing=listing).values("purchased").get()
    transfers = [
        {"kind": t.kind, "memo": t.memo, "reference": t.reference, "purchase": (t.purchase.level_from, t.purchase.level_to),
         "public_id": t.public_id[:3], "legs": [(leg.account.kind, leg.account.user_id == buyer.pk, leg.amount)
                                                for leg in Leg.objects.filter(transfer=t).order_by("pk").select_related("account")]}
        for t in Transfer.objects.filter(purchase__buyer=buyer).order_by("pk").select_related("purchase")
    ]
    wallet = Account.objects.get(user=buyer, kind=Account.Kind.WALLET).balance
    return {"purchases": purchases, "holding": holding, "transfers": transfers, "wallet": wallet}


def test_single_statements_store_what_the_orm_stores(make_listing, users, fund, django_capture_on_commit_callbacks):
    listing = make_listing(ceiling="5")
    one, orm = users("una"), users("otto")
    fund(one, 1000)
    fund(orm, 1000)
    made_one = _buy(one, listing, one_statement=True, capture=django_capture_on_commit_callbacks)
    made_orm = _buy(orm, listing, one_statement=False, capture=django_capture_on_commit_callbacks)
    a, b = _stored(one, listing), _stored(orm, listing)
    assert a == b
    assert len(a["transfers"]) == 3 and a["wallet"] < 1000  # the steps were charged
    for purchase in made_one + made_orm:  # what the service returned is what was stored
        stored = Purchase.objects.get(pk=purchase.pk)
        fields = [f.attname for f in Purchase._meta.concrete_fields if f.attname not in ("status", "updated_at")]
        assert [getattr(purchase, f) for f in fields] == [getattr(stored, f) for f in fields]
        assert not purchase._state.adding
    # each transfer's legs sum to zero and the buyer's earnings account on the listing took them
    earnings = Account.objects.get(kind=Account.Kind.EARNINGS, listing=listing).balance
    assert earnings == 2 * (1000 - a["wallet"])
