"""The database enforces the ledger's invariants by itself (PostgreSQL triggers and checks)."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, InternalError, transaction

from market.ledger.models import Account, Leg, Transfer
from market.ledger.services import account_get
from market.trading.models import Holding

from tests.fixtures.market import needs_postgres

pytestmark = [pytest.mark.django_db(transaction=True), needs_postgres]
DB_ERRORS = (IntegrityError, InternalError)


@pytest.fixture
def wallet(buyer, fund):
    fund(buyer, 50)
    return Account.objects.get(user=buyer, kind="wallet")


def test_balances_follow_the_legs(wallet):
    assert wallet.balance == Decimal("50.00")
    funding = Account.objects.get(user=None, kind="funding")
    assert funding.balance == Decimal("-50.00")


def test_legs_and_transfers_cannot_be_changed_or_deleted(wallet):
    leg = Leg.objects.filter(account=wallet).first()
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            Leg.objects.filter(pk=leg.pk).update(amount=Decimal("1000.00"))
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            Leg.objects.filter(pk=leg.pk).delete()
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            Transfer.objects.filter(pk=leg.transfer_id).update(memo="edited")


def test_an_unbalanced_transfer_is_refused_at_commit(wallet):
    with pytest.raises(DB_ERRORS, match="does not balance"):
        with transaction.atomic():
            t = Transfer.objects.create(kind="top_up", memo="money from nowhere")
            Leg.objects.create(transfer=t, account=wallet, amount=Decimal("10.00"))
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("50.00")


def test_a_wallet_never_goes_negative(wallet, owner):
    earnings = account_get(user=owner, kind="earnings")
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            t = Transfer.objects.create(kind="purchase")
            Leg.objects.bulk_create(
                [Leg(transfer=t, account=wallet, amount=Decimal("-60.00")), Leg(transfer=t, account=earnings, amount=Decimal("60.00"))]
            )


def test_a_holding_never_exceeds_the_ceiling_and_released_never_exceeds_purchased(listing, buyer):
    with pytest.raises(DB_ERRORS, match="above the listing ceiling"):
        with transaction.atomic():
            Holding.objects.create(buyer=buyer, listing=listing, purchased=Decimal("5.0001"))
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            Holding.objects.create(buyer=buyer, listing=listing, purchased=Decimal("1"), released=Decimal("2"))
    h = Holding.objects.create(buyer=buyer, listing=listing, purchased=Decimal("2"))
    with pytest.raises(DB_ERRORS, match="below level"):
        with transaction.atomic():
            type(listing).objects.filter(pk=listing.pk).update(ceiling=Decimal("1"))
    with pytest.raises(DB_ERRORS, match="above the listing ceiling"):
        with transaction.atomic():
            type(listing.noise_path).objects.filter(pk=listing.noise_path.pk).update(released_max=Decimal("6"))
    assert h.purchased == Decimal("2")

