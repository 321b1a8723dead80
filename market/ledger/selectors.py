from decimal import Decimal

from market.core import visibility

from .models import Account


def wallet_balance(*, user) -> Decimal:
    account = Account.objects.filter(user=user, kind=Account.Kind.WALLET).only("balance").first()
    return account.balance if account else Decimal("0.00")


def wallet_statement(*, user):
    """The legs of the user's wallet, newest first."""
    return visibility.wallet_legs(user).order_by("-transfer__created_at", "-id")


def ledger_is_balanced() -> bool:
    """Every transfer sums to zero and every balance equals the sum of its legs."""
    from django.db.models import Sum

    from .models import Leg, Transfer

    unbalanced = Transfer.objects.annotate(total=Sum("legs__amount")).exclude(total=0).exists()
    if unbalanced:
        return False
    for account in Account.objects.annotate(total=Sum("legs__amount")):
        if account.balance != (account.total or Decimal("0")):
            return False
    return Leg.objects.aggregate(total=Sum("amount"))["total"] in (None, Decimal("0"), 0)
