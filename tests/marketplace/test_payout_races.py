"""Payouts racing on the real database: never more than the earnings, one payout per key."""

from decimal import Decimal

import pytest

from market.core.errors import DomainError
from market.ledger.models import Payout
from market.ledger.selectors import earnings_balance, ledger_is_balanced
from market.ledger.services import payout_create
from market.trading.services import purchase_create

from tests.fixtures.market import needs_postgres
from .test_concurrency import race

pytestmark = [pytest.mark.django_db(transaction=True), needs_postgres]


@pytest.fixture
def earned(owner, buyer, make_listing, fund):
    """25.00 of earnings over two listings."""
    fund(buyer, 100)
    for price, eps in (("10.00", "2"), ("5.00", "1")):
        purchase_create(buyer=buyer, listing_id=make_listing(price=price).pk, epsilon=eps)
    return owner


def test_payouts_racing_for_the_same_earnings_never_overdraw(earned):
    results = race([lambda: payout_create(user=earned, amount=Decimal("10.00")) for _ in range(6)])
    paid = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, DomainError)]
    assert len(paid) == 2 and len(refused) == 4, results
    assert all(r.code == "insufficient_funds" for r in refused)
    assert earnings_balance(user=earned) == Decimal("5.00") and ledger_is_balanced()


def test_repeats_of_one_key_racing_pay_once(earned):
    results = race([lambda: payout_create(user=earned, amount=Decimal("4.00"), idempotency_key="same") for _ in range(6)])
    assert all(isinstance(r, tuple) for r in results), results
    assert len({r[0].pk for r in results}) == 1 and sum(r[1] for r in results) == 1
    assert Payout.objects.count() == 1 and earnings_balance(user=earned) == Decimal("21.00")


def test_staff_mark_a_requested_payout_paid_in_the_admin(earned, client):
    from market.accounts.models import User

    payout, _ = payout_create(user=earned, amount=Decimal("2.00"))
    staff = User.objects.create_superuser("sam", "sam@example.com", "a-long-password-1")
    client.force_login(staff)
    assert "requested" in client.get("/admin/ledger/payout/").content.decode()
    response = client.post("/admin/ledger/payout/", {"action": "mark_paid", "_selected_action": [payout.pk]})
    assert response.status_code == 302
    payout.refresh_from_db()
    assert payout.status == "paid" and payout.paid_at is not None
