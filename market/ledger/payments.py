"""How money enters a wallet, and leaves as an owner's payout: small interfaces a processor can replace.

There is no card processor yet. :class:`ManualFunding` moves credits from the
marketplace's funding account; staff use it from the admin, and in demo mode
buyers use it through the "top up" button. A real processor implements
:class:`PaymentProvider` (charging the card, then calling the ledger with the
processor's reference, which is unique so a retried webhook funds once) and is
named in the ``PAYMENT_PROVIDER`` setting. Only a buyer's wallet is funded:
a provider refuses any other account first (``require_role(user, "buyer")``).

Money leaves the same way: :class:`ManualPayout` takes an owner's earnings into
the marketplace's payouts account (``ledger.services.payout_create``): in demo
mode the payout is recorded as paid at once; otherwise it waits, requested, for
staff to pay it and mark it paid in the admin. A real processor implements
:class:`PayoutProvider` and is named in ``PAYOUT_PROVIDER``. Only an owner is paid.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from market.accounts.roles import require_role
from market.core.errors import InvalidInput
from market.core.locks import retrying

from .models import Account, Payout, Transfer
from .services import account_get, money, payout_create, transfer_create


class PaymentProvider(Protocol):
    def fund(self, *, user, amount: Decimal, reference: str | None = None, memo: str = "") -> Transfer: ...


class PayoutProvider(Protocol):
    def pay_out(self, *, user, amount: Decimal, idempotency_key: str | None = None) -> tuple[Payout, bool]: ...


class ManualFunding:
    """Credits granted by the marketplace itself (staff top-ups, demo mode)."""

    max_amount = Decimal("100000.00")

    def fund(self, *, user, amount: Decimal, reference: str | None = None, memo: str = "") -> Transfer:
        from django.db import IntegrityError, transaction

        require_role(user, "buyer")
        amount = money(amount)
        if amount <= 0 or amount > self.max_amount:
            raise InvalidInput(
                f"a top-up must be between 0.01 and {self.max_amount} credits",
                fields={"amount": [f"Enter an amount between 0.01 and {self.max_amount}."]},
            )
        wallet = account_get(user=user, kind=Account.Kind.WALLET)
        source = account_get(user=None, kind=Account.Kind.FUNDING)

        def take() -> Transfer:
            with transaction.atomic():
                return transfer_create(
                    kind=Transfer.Kind.TOP_UP,
                    legs=[(source, -amount), (wallet, amount)],
                    memo=memo or "top-up",
                    reference=reference,
                )

        try:
            # every top-up moves money out of the one funding account: a hot row, so a wait past
            # the lock timeout is run again (then 409 busy), never a 500
            return retrying(take, what="top-up")
        except IntegrityError:
            if reference is None:
                raise
            return Transfer.objects.get(reference=reference)  # the same payment, seen again


class ManualPayout:
    """Payouts paid by hand: recorded as paid at once in demo mode, else requested for staff."""

    def pay_out(self, *, user, amount: Decimal, idempotency_key: str | None = None) -> tuple[Payout, bool]:
        require_role(user, "owner")
        return payout_create(user=user, amount=amount, idempotency_key=idempotency_key, paid=settings.DEMO_MODE)


def provider() -> PaymentProvider:
    return import_string(settings.PAYMENT_PROVIDER)()


def payout_provider() -> PayoutProvider:
    return import_string(settings.PAYOUT_PROVIDER)()
