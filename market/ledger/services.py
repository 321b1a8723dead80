"""Writing to the money ledger. Balances change only through transfers."""

from __future__ import annotations

from decimal import Decimal

from django.db import IntegrityError, connection, transaction

from market.core.errors import InsufficientFunds, InvalidInput
from market.core.fields import MONEY_QUANTUM
from market.core.locks import retrying
from market.core.writes import RowInsert

#: what the NUMERIC(18, 2) money columns hold
MAX_MONEY = Decimal(10) ** 16

from .locks import account_lock_with_peer, accounts_lock, payout_lock
from .models import Account, Leg, Payout, Transfer


def account_get(*, user=None, user_id=None, kind: str, listing_id=None) -> Account:
    """The account of ``kind`` of ``user`` (or of the user whose id is ``user_id``; the
    marketplace's when neither is given; an owner's earnings on one listing with ``listing_id``),
    created on first use."""
    if user is not None:
        user_id = user.pk
    try:
        with transaction.atomic():
            account, _ = Account.objects.get_or_create(user_id=user_id, kind=kind, listing_id=listing_id)
            return account
    except IntegrityError:  # created concurrently: it exists now
        return Account.objects.get(user_id=user_id, kind=kind, listing_id=listing_id)


def accounts_for_payment(*, debit: tuple, credit: tuple) -> tuple[Account, Account]:
    """The accounts of a payment, ``debit`` locked (its balance is checked), ``credit`` unlocked
    (see :func:`market.ledger.locks.account_lock_with_peer`), both made on first use: one
    statement when they exist. For :func:`transfer_create` with ``locked=True``."""
    found = account_lock_with_peer(debit=debit, credit=credit)
    if found is None or found.credit_id is None:
        for user_id, kind, listing_id in (debit, credit):
            account_get(user_id=user_id, kind=kind, listing_id=listing_id)
        found = account_lock_with_peer(debit=debit, credit=credit)
    user_id, kind, listing_id = credit
    return found, Account(pk=found.credit_id, user_id=user_id, kind=kind, listing_id=listing_id)


def money(value) -> Decimal:
    """An exact amount of credits with at most two decimal places."""
    try:
        amount = Decimal(str(value))
    except Exception:
        raise InvalidInput(f"not an amount: {value!r}", fields={"amount": ["Enter a number."]}) from None
    if not amount.is_finite():
        raise InvalidInput("amounts must be finite", fields={"amount": ["Enter a finite number."]})
    if abs(amount) >= MAX_MONEY:
        raise InvalidInput(f"amounts must be below {MAX_MONEY:,}", fields={"amount": [f"Below {MAX_MONEY:,}."]})
    if amount != amount.quantize(MONEY_QUANTUM):
        raise InvalidInput("amounts have at most two decimal places", fields={"amount": ["At most 2 decimal places."]})
    return amount.quantize(MONEY_QUANTUM)


def transfer_create(
    *, kind: str, legs: list[tuple[Account, Decimal]], memo: str = "", purchase=None, reference: str | None = None,
    locked: bool = False,
) -> Transfer:
    """Move money between accounts in one balanced, append-only transfer.

    Locks the accounts in id order (``locked``: the caller already locked every
    account the transfer takes from, in its transaction, with
    :func:`accounts_for_payment`; an account only
    credited is then locked by the balance update itself), refuses a transfer
    that would take a user's account below zero, and writes
    the legs; the database adds each leg to its account's balance and checks
    the transfer balances at commit.
    """
    if len(legs) < 2:
        raise ValueError("a transfer needs at least two legs")
    if any(amount == 0 for _, amount in legs) or sum(amount for _, amount in legs) != 0:
        raise ValueError(f"transfer legs must be non-zero and sum to zero: {legs}")
    # no savepoint of its own: a refused transfer fails the caller's whole transaction
    with transaction.atomic(savepoint=False):
        if locked:
            locked = {account.pk: account for account, _ in legs}
        else:
            locked = accounts_lock(ids=[account.pk for account, _ in legs])
        change: dict[int, Decimal] = {}
        for account, amount in legs:
            change[account.pk] = change.get(account.pk, Decimal(0)) + amount
        for pk, delta in change.items():
            account = locked[pk]
            if account.user_id is not None and delta < 0 and account.balance + delta < 0:
                raise InsufficientFunds(
                    f"not enough credits: this needs {-delta} and the balance is {account.balance}"
                )
        transfer = Transfer(kind=kind, memo=memo, purchase=purchase, reference=reference)
        _legs_insert(transfer, legs)
    return transfer


_TRANSFER = RowInsert(Transfer)


def _legs_insert(transfer: Transfer, legs: list[tuple[Account, Decimal]]) -> None:
    """Insert ``transfer`` and its legs: on PostgreSQL one statement (the transfer in a ``WITH``, the
    legs in their order from arrays; each leg's trigger adds it to its account's balance)."""
    if not RowInsert.usable():
        transfer.save(force_insert=True)
        Leg.objects.bulk_create(Leg(transfer=transfer, account=account, amount=amount) for account, amount in legs)
        return
    sql = (f"WITH t AS ({_TRANSFER.sql}{_TRANSFER.returning}) "
           'INSERT INTO "ledger_leg" ("transfer_id", "account_id", "amount") '
           "SELECT t.id, l.account_id, l.amount FROM t, "
           "unnest(%s::bigint[], %s::numeric[]) WITH ORDINALITY AS l(account_id, amount, n) ORDER BY l.n "
           'RETURNING "transfer_id"')
    with connection.cursor() as cursor:
        cursor.execute(sql, [*_TRANSFER.params(transfer), [account.pk for account, _ in legs],
                             [amount for _, amount in legs]])
        _TRANSFER.saved(transfer, cursor.fetchone()[0])


def payout_create(*, user, amount, idempotency_key: str | None = None, paid: bool = False) -> tuple[Payout, bool]:
    """Take ``amount`` from the owner's earnings (their accounts, one per listing, largest first)
    into the marketplace's payouts account, recorded as one payout: ``(payout, created)``.

    ``paid``: the money has left the marketplace at once (demo mode); otherwise the payout waits
    for staff (:func:`payout_settle`). Refuses (402) more than the earnings hold: the service checks
    it under the accounts' locks, and the database refuses any user account below zero. A repeat
    with the same ``idempotency_key`` answers the first payout and moves nothing.
    """
    from django.utils import timezone

    amount = money(amount)
    if amount <= 0:
        raise InvalidInput("a payout must be at least 0.01 credits", fields={"amount": ["Enter at least 0.01."]})
    if idempotency_key is not None:
        idempotency_key = idempotency_key.strip()
        if not idempotency_key or len(idempotency_key) > 255:
            raise InvalidInput("Idempotency-Key must be 1 to 255 characters", fields={"idempotency_key": ["1 to 255 characters."]})

    def earlier() -> Payout | None:
        if idempotency_key is None:
            return None
        return Payout.objects.filter(user=user, idempotency_key=idempotency_key).first()

    def take() -> tuple[Payout, bool]:
        with transaction.atomic():
            ids = list(Account.objects.filter(user=user, kind=Account.Kind.EARNINGS).values_list("pk", flat=True))
            accounts = accounts_lock(ids=ids)  # every payout of this owner takes turns on these rows
            found = earlier()
            if found is not None:
                return found, False
            held = sum((a.balance for a in accounts.values()), Decimal(0))
            if amount > held:
                raise InsufficientFunds(
                    f"not enough earnings: the payout asks for {amount} and your earnings hold {held}",
                    fields={"amount": [f"Your earnings hold {held} credits: ask for at most that."]},
                )
            legs, left = [], amount
            for account in sorted(accounts.values(), key=lambda a: (-a.balance, a.pk)):
                part = min(left, account.balance)
                if part > 0:
                    legs.append((account, -part))
                    left -= part
            payouts = account_get(user=None, kind=Account.Kind.PAYOUTS)
            transfer = transfer_create(
                kind=Transfer.Kind.PAYOUT, legs=[*legs, (payouts, amount)], memo="payout", locked=True,
            )
            payout = Payout.objects.create(
                user=user, amount=amount, transfer=transfer, idempotency_key=idempotency_key,
                status=Payout.Status.PAID if paid else Payout.Status.REQUESTED, paid_at=timezone.now() if paid else None,
            )
            return payout, True

    try:
        return retrying(take, what="payout")
    except IntegrityError:
        found = earlier()  # the same key, committed by a concurrent request first
        if found is None:
            raise
        return found, False


def payout_settle(*, payout_id) -> Payout:
    """Staff: a requested payout has been paid out of the marketplace (idempotent)."""
    from django.utils import timezone

    with transaction.atomic():
        payout = payout_lock(payout_id=payout_id)
        if payout.status != Payout.Status.PAID:
            payout.status, payout.paid_at = Payout.Status.PAID, timezone.now()
            payout.save(update_fields=["status", "paid_at"])
    return payout
