"""Reading the money ledger: balances, statements with a running balance, payouts.

Statements are legs, newest first, each annotated with ``balance_after`` (the
balance of the accounts read once that leg was applied: a window sum over the
accounts' legs, oldest first) and described for people by :func:`leg_description`
from the rows' structured data (the purchase's listing and levels), never by
rewriting stored memos: the ledger is append-only.
"""

from decimal import Decimal

from django.db.models import F, Sum, Window

from market.core import visibility
from market.core.fields import MONEY_QUANTUM, MoneyField
from market.core.levels import level_text

from .models import Account, Payout, Transfer
from .models import Leg

_ZERO = Decimal("0.00")


def wallet_balance(*, user) -> Decimal:
    account = visibility.ledger_accounts(user).filter(kind=Account.Kind.WALLET).only("balance").first()
    return account.balance if account else _ZERO


def earnings_balance(*, user) -> Decimal:
    """What an owner has earned and not yet been paid: the sum of their earnings accounts."""
    if not getattr(user, "is_authenticated", False):
        return _ZERO
    total = visibility.ledger_accounts(user).filter(kind=Account.Kind.EARNINGS).aggregate(total=Sum("balance"))["total"]
    return total.quantize(MONEY_QUANTUM) if total is not None else _ZERO


def _with_running_balance(legs):
    """``legs`` newest first, each with ``balance_after``: the sum of the legs up to and including it."""
    return (
        legs.select_related("transfer__purchase__listing", "transfer__payout", "account__listing")
        .annotate(balance_after=Window(
            Sum("amount"), order_by=[F("transfer__created_at").asc(), F("id").asc()], output_field=MoneyField()
        ))
        .order_by("-transfer__created_at", "-id")
    )


def wallet_statement(*, user):
    """The legs of the user's wallet, newest first, each with ``balance_after``."""
    return _with_running_balance(visibility.wallet_legs(user))


def earnings_statement(*, user):
    """The legs of the owner's earnings accounts (sales, refunds, payouts), newest first, each with
    ``balance_after``: what all their earnings accounts together held after it."""
    return _with_running_balance(visibility.earnings_legs(user))


def payout_list(*, user):
    """The owner's payouts, newest first."""
    return visibility.payouts(user).order_by("-created_at", "-id")


def _step(purchase) -> str:
    return f"{purchase.listing.title}, ε {level_text(purchase.level_from)} → {level_text(purchase.level_to)}"


def leg_description(leg) -> str:
    """One statement line for people, e.g. "Purchase: Clinic visits, ε 0.5 → 2" (from the purchase's
    listing and levels, whatever the memo stored then said), "Sale: ...", "Refund: ...",
    "Payout (paid)", "Top-up: demo credits"."""
    transfer = leg.transfer
    purchase = transfer.purchase
    if transfer.kind == Transfer.Kind.PURCHASE and purchase is not None:
        return f"{'Sale' if leg.amount > 0 else 'Purchase'}: {_step(purchase)}"
    if transfer.kind == Transfer.Kind.REFUND and purchase is not None:
        reason = purchase.failure_reason
        return f"Refund: {_step(purchase)}" + (f" ({reason[:120]})" if reason else "")
    if transfer.kind == Transfer.Kind.PAYOUT:
        payout = getattr(transfer, "payout", None)
        status = "paid" if payout is not None and payout.status == Payout.Status.PAID else "requested"
        listing = leg.account.listing if leg.account.listing_id else None
        return f"Payout ({status})" + (f" from {listing.title}" if listing is not None else "")
    memo = transfer.memo
    return transfer.get_kind_display().capitalize() + (f": {memo}" if memo and memo != transfer.get_kind_display() else "")


def ledger_is_balanced() -> bool:
    """Every transfer sums to zero and every balance equals the sum of its legs."""

    unbalanced = visibility.dangerously_unscoped(Transfer).annotate(total=Sum("legs__amount")).exclude(total=0).exists()
    if unbalanced:
        return False
    for account in visibility.dangerously_unscoped(Account).annotate(total=Sum("legs__amount")):
        if account.balance != (account.total or Decimal("0")):
            return False
    return visibility.dangerously_unscoped(Leg).aggregate(total=Sum("amount"))["total"] in (None, Decimal("0"), 0)


def payout_totals(*, user) -> dict:
    """``{"requested", "paid"}``: the owner's payouts waiting for staff, and those paid, in credits."""
    totals = {status: _ZERO for status in Payout.Status.values}
    for status, total in visibility.payouts(user).order_by().values_list("status").annotate(total=Sum("amount")):
        totals[status] = total.quantize(MONEY_QUANTUM)
    return totals
