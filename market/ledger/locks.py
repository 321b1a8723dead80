"""Row locks on ledger accounts, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import Account


def accounts_lock(*, ids) -> dict[int, Account]:
    """The accounts ``ids``, locked for update in id order (the same order in every transaction)."""
    ids = sorted(set(ids))
    taken(Rank.ACCOUNT, f"accounts {ids}")
    return {a.pk: a for a in Account.objects.select_for_update().filter(pk__in=ids).order_by("pk")}


def accounts_lock_of(*, owners) -> dict[tuple, Account]:
    """The accounts of ``owners`` (triples of user id, or None for the marketplace, kind, and
    listing id or None), locked for update in id order in one statement: ``{(user_id, kind,
    listing_id): account}``. Accounts not made yet are missing from the answer (the caller
    creates them and locks again)."""
    from django.db.models import Q

    taken(Rank.ACCOUNT, f"accounts of {sorted(owners, key=str)}")
    match = Q(pk__in=[])
    for user_id, kind, listing_id in owners:
        match |= Q(user_id=user_id, kind=kind, listing_id=listing_id)
    rows = Account.objects.select_for_update().filter(match).order_by("pk")
    return {(a.user_id, a.kind, a.listing_id): a for a in rows}
