"""Row locks on ledger accounts, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import Account, Payout


def accounts_lock(*, ids) -> dict[int, Account]:
    """The accounts ``ids``, locked for update in id order (the same order in every transaction)."""
    ids = sorted(set(ids))
    taken(Rank.ACCOUNT, f"accounts {ids}")
    return {a.pk: a for a in Account.objects.select_for_update().filter(pk__in=ids).order_by("pk")}


def account_lock_with_peer(*, debit: tuple, credit: tuple) -> Account | None:
    """The account ``debit`` (user id, kind, listing id) locked for update, with the id of the
    account ``credit`` read beside it, unlocked, as ``credit_id``: one statement. A credit needs
    no check, so its row is locked only by the balance update, the transaction's last write (a
    sale's earnings row is held for as short a time as possible). None if ``debit`` is not made yet."""
    from django.db.models import Subquery

    taken(Rank.ACCOUNT, f"account {debit} (crediting {credit})")
    user_id, kind, listing_id = credit
    peer = Account.objects.filter(user_id=user_id, kind=kind, listing_id=listing_id).values("pk")[:1]
    user_id, kind, listing_id = debit
    return (
        Account.objects.select_for_update(of=("self",)).filter(user_id=user_id, kind=kind, listing_id=listing_id)
        .annotate(credit_id=Subquery(peer)).first()
    )


def payout_lock(*, payout_id) -> Payout:
    """The payout ``payout_id``, locked for update (staff marking it paid take turns on it)."""
    taken(Rank.PAYOUT, f"payout {payout_id}")
    return Payout.objects.select_for_update().get(pk=payout_id)
