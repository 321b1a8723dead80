"""Row locks on ledger accounts, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import LockedRows, Rank, taken

from .models import Account, Payout


def accounts_lock(*, ids) -> dict[int, Account]:
    """The accounts ``ids``, locked for update in id order (the same order in every transaction)."""
    ids = sorted(set(ids))
    taken(Rank.ACCOUNT, f"accounts {ids}")
    return {a.pk: a for a in Account.objects.select_for_update().filter(pk__in=ids).order_by("pk")}


def _account_with_peer(credit_user_id, credit_kind, credit_listing_id, user_id, kind, listing_id):
    """:data:`_WITH_PEER`'s query through Django (databases other than PostgreSQL)."""
    from django.db.models import Subquery

    peer = Account.objects.filter(user_id=credit_user_id, kind=credit_kind, listing_id=credit_listing_id).values("pk")[:1]
    return (
        Account.objects.select_for_update(of=("self",)).filter(user_id=user_id, kind=kind, listing_id=listing_id)
        .annotate(credit_id=Subquery(peer)).first()
    )


#: an account (user, kind, listing: unique, a listing of None matching NULL) locked, with the id of
#: another read beside it, unlocked; its SQL written once. Parameters in the order of the SQL: the
#: other account's (the selected subquery), then the locked one's
_WITH_PEER = LockedRows(
    Account,
    where='t."user_id" IS NOT DISTINCT FROM %s AND t."kind" = %s AND t."listing_id" IS NOT DISTINCT FROM %s',
    extra=(('(SELECT p."id" FROM "ledger_account" p WHERE p."user_id" IS NOT DISTINCT FROM %s AND p."kind" = %s '
            'AND p."listing_id" IS NOT DISTINCT FROM %s LIMIT 1)', "credit_id"),),
    fallback=_account_with_peer,
)


def account_lock_with_peer(*, debit: tuple, credit: tuple) -> Account | None:
    """The account ``debit`` (user id, kind, listing id) locked for update, with the id of the
    account ``credit`` read beside it, unlocked, as ``credit_id``: one statement. A credit needs
    no check, so its row is locked only by the balance update, the transaction's last write (a
    sale's earnings row is held for as short a time as possible). None if ``debit`` is not made yet."""
    taken(Rank.ACCOUNT, f"account {debit} (crediting {credit})")
    return _WITH_PEER.one((*credit, *debit))


def payout_lock(*, payout_id) -> Payout:
    """The payout ``payout_id``, locked for update (staff marking it paid take turns on it)."""
    taken(Rank.PAYOUT, f"payout {payout_id}")
    return Payout.objects.select_for_update().get(pk=payout_id)
