"""Owners' earnings, their statement with a running balance, and payouts (issue 15)."""

import os
from decimal import Decimal

import pytest
from django.db import IntegrityError, InternalError, connection, transaction

from market.core.errors import Forbidden, InsufficientFunds, InvalidInput
from market.core.invariants import violations
from market.ledger import selectors as ledger
from market.ledger.models import Account, Leg, Payout, Transfer
from market.ledger.payments import ManualPayout
from market.ledger.services import payout_create, payout_settle
from market.trading.services import purchase_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def sales(owner, buyer, make_listing, fund):
    """Two listings of one owner, sold for 20.00 and 5.00: the owner's earnings are 25.00 in two accounts."""
    first = make_listing(price="10.00")
    second = make_listing(price="5.00")
    fund(buyer, 100)
    purchase_create(buyer=buyer, listing_id=first.pk, epsilon="2")
    purchase_create(buyer=buyer, listing_id=second.pk, epsilon="1")
    return first, second


def test_earnings_are_the_sum_of_the_owners_accounts(owner, sales):
    assert ledger.earnings_balance(user=owner) == Decimal("25.00")
    assert Account.objects.filter(user=owner, kind="earnings").count() == 2


def test_a_payout_takes_from_the_earnings_into_the_payouts_account(owner, sales, settings):
    settings.DEMO_MODE = True
    payout, created = ManualPayout().pay_out(user=owner, amount=Decimal("22.50"))
    assert created and payout.status == Payout.Status.PAID and payout.paid_at is not None
    assert ledger.earnings_balance(user=owner) == Decimal("2.50")
    assert Account.objects.get(user=None, kind="payouts").balance == Decimal("22.50")
    legs = Leg.objects.filter(transfer=payout.transfer)
    assert sorted(leg.amount for leg in legs) == [Decimal("-20.00"), Decimal("-2.50"), Decimal("22.50")]
    assert payout.transfer.kind == Transfer.Kind.PAYOUT
    assert ledger.ledger_is_balanced()


def test_outside_demo_mode_a_payout_waits_for_staff(owner, sales, settings):
    settings.DEMO_MODE = False
    payout, _ = ManualPayout().pay_out(user=owner, amount=Decimal("10"))
    assert payout.status == Payout.Status.REQUESTED and payout.paid_at is None
    assert ledger.earnings_balance(user=owner) == Decimal("15.00")  # reserved: it cannot be asked for twice
    settled = payout_settle(payout_id=payout.pk)
    assert settled.status == Payout.Status.PAID and settled.paid_at is not None
    assert payout_settle(payout_id=payout.pk).paid_at == settled.paid_at  # idempotent
    assert ledger.earnings_balance(user=owner) == Decimal("15.00")


def test_no_payout_above_the_balance(owner, sales):
    with pytest.raises(InsufficientFunds, match="hold 25.00"):
        payout_create(user=owner, amount=Decimal("25.01"))
    assert ledger.earnings_balance(user=owner) == Decimal("25.00")
    assert not Payout.objects.exists() and not Transfer.objects.filter(kind="payout").exists()
    payout, _ = payout_create(user=owner, amount=Decimal("25.00"))  # all of it: fine
    assert ledger.earnings_balance(user=owner) == Decimal("0.00")
    with pytest.raises(InsufficientFunds):
        payout_create(user=owner, amount=Decimal("0.01"))


@pytest.mark.parametrize("amount", ["0", "-5", "1.001", "abc", "NaN"])
def test_bad_amounts_are_refused_and_change_nothing(owner, sales, amount):
    with pytest.raises(InvalidInput):
        payout_create(user=owner, amount=amount)
    assert ledger.earnings_balance(user=owner) == Decimal("25.00") and not Payout.objects.exists()


def test_a_payout_is_idempotent(owner, sales):
    first, created = payout_create(user=owner, amount=Decimal("5"), idempotency_key="k1")
    again, created_again = payout_create(user=owner, amount=Decimal("5"), idempotency_key="k1")
    assert created and not created_again and again.pk == first.pk
    assert ledger.earnings_balance(user=owner) == Decimal("20.00")
    other, _ = payout_create(user=owner, amount=Decimal("5"), idempotency_key="k2")
    assert other.pk != first.pk and ledger.earnings_balance(user=owner) == Decimal("15.00")


def test_only_owners_are_paid(buyer, owner, sales):
    with pytest.raises(Forbidden):
        ManualPayout().pay_out(user=buyer, amount=Decimal("1"))


def test_the_earnings_statement_has_sales_payouts_and_a_running_balance(owner, sales):
    payout_create(user=owner, amount=Decimal("7.50"))
    rows = list(ledger.earnings_statement(user=owner))
    assert [ledger.leg_description(leg).split(":")[0].split(" (")[0] for leg in rows] == ["Payout", "Sale", "Sale"]
    # newest first; each balance is what the earnings held after that line
    assert [leg.balance_after for leg in rows] == [Decimal("17.50"), Decimal("25.00"), Decimal("20.00")]
    assert rows[0].balance_after == ledger.earnings_balance(user=owner)
    assert ledger.leg_description(rows[1]) == "Sale: Clinic visits, ε 0 → 1"


def test_the_wallet_statement_reads_as_people_write(buyer, sales):
    rows = list(ledger.wallet_statement(user=buyer))
    assert [ledger.leg_description(leg) for leg in rows] == [
        "Purchase: Clinic visits, ε 0 → 1", "Purchase: Clinic visits, ε 0 → 2", "Top-up",
    ]
    assert [leg.balance_after for leg in rows] == [Decimal("75.00"), Decimal("80.00"), Decimal("100.00")]
    assert "eps" not in rows[0].transfer.memo and "ε 0 → 1" in rows[0].transfer.memo


def test_old_memos_are_described_from_the_purchase(buyer, sales):
    """Rows written before (memo "eps 0.0000 -> 2.0000") are not rewritten: they are described from their purchase."""
    leg = ledger.wallet_statement(user=buyer)[1]
    assert ledger.leg_description(leg) == "Purchase: Clinic visits, ε 0 → 2"


def test_a_refund_shows_on_both_statements(owner, buyer, sales):
    from market.trading.models import Purchase
    from market.trading.services import purchase_fail

    purchase = Purchase.objects.filter(buyer=buyer).order_by("created_at").first()
    purchase_fail(purchase_id=purchase.pk, reason="the worker crashed")
    assert ledger.leg_description(ledger.wallet_statement(user=buyer)[0]) == (
        "Refund: Clinic visits, ε 0 → 2 (the worker crashed)"
    )
    top = ledger.earnings_statement(user=owner)[0]
    assert top.amount == Decimal("-20.00") and top.balance_after == Decimal("5.00")


def test_the_statement_pages_keep_the_running_balance(buyer, fund):
    from django.core.paginator import Paginator

    for n in range(1, 8):
        fund(buyer, n)
    page = Paginator(ledger.wallet_statement(user=buyer), 3).get_page(2)
    assert page.paginator.count == 7
    assert [leg.balance_after for leg in page] == [Decimal("10.00"), Decimal("6.00"), Decimal("3.00")]


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="the invariants' SQL is PostgreSQL's (CI runs this on PostgreSQL)")
def test_the_invariants_hold_with_payouts(owner, sales):
    payout_create(user=owner, amount=Decimal("12.00"))
    payout_create(user=owner, amount=Decimal("1.00"), paid=True)
    with connection.cursor() as cursor:
        broken = {name: n for name, n in violations(cursor).items() if n}
    assert broken == {k: v for k, v in broken.items() if k == "no purchase left in flight"}


def test_the_database_refuses_a_payout_of_nothing_or_an_earnings_account_below_zero(owner, sales):
    payout, _ = payout_create(user=owner, amount=Decimal("1.00"))
    with pytest.raises((IntegrityError, InternalError)):
        with transaction.atomic():
            Payout.objects.filter(pk=payout.pk).update(amount=Decimal("0"))
    with pytest.raises((IntegrityError, InternalError)):
        with transaction.atomic():
            Payout.objects.filter(pk=payout.pk).update(status="paid")  # paid without a time
    earnings = Account.objects.filter(user=owner, kind="earnings").order_by("balance").first()
    payouts = Account.objects.get(user=None, kind="payouts")
    with pytest.raises((IntegrityError, InternalError)):
        with transaction.atomic():
            t = Transfer.objects.create(kind="payout")
            Leg.objects.bulk_create([
                Leg(transfer=t, account=earnings, amount=-(earnings.balance + 1)),
                Leg(transfer=t, account=payouts, amount=earnings.balance + 1),
            ])


def test_a_payout_only_goes_from_requested_to_paid(owner, sales):
    from django.utils import timezone

    payout, _ = payout_create(user=owner, amount=Decimal("3.00"))
    for change in ({"amount": Decimal("30.00")}, {"idempotency_key": "other"}, {"transfer": Transfer.objects.exclude(pk=payout.transfer_id).first()}):
        with pytest.raises((IntegrityError, InternalError), match="requested to paid"):
            with transaction.atomic():
                Payout.objects.filter(pk=payout.pk).update(**change)
    payout_settle(payout_id=payout.pk)
    with pytest.raises((IntegrityError, InternalError), match="requested to paid"):
        with transaction.atomic():
            Payout.objects.filter(pk=payout.pk).update(status="requested", paid_at=None)
    with pytest.raises((IntegrityError, InternalError), match="requested to paid"):
        with transaction.atomic():
            Payout.objects.filter(pk=payout.pk).update(paid_at=timezone.now())
    if connection.vendor == "postgresql":
        with pytest.raises((IntegrityError, InternalError), match="requested to paid"):
            with transaction.atomic():
                Payout.objects.filter(pk=payout.pk).delete()
    payout.refresh_from_db()
    assert payout.amount == Decimal("3.00") and payout.status == "paid"
