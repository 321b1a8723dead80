"""Row locks on ledger accounts, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import Account


def accounts_lock(*, ids) -> dict[int, Account]:
    """The accounts ``ids``, locked for update in id order (the same order in every transaction)."""
    ids = sorted(set(ids))
    taken(Rank.ACCOUNT, f"accounts {ids}")
    return {a.pk: a for a in Account.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
