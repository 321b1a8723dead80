"""Row locks on holdings and purchases, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import LockedRows, Rank, taken

from .models import Holding, Purchase

#: a buyer's holding on a listing (at most one: a unique constraint), locked; its SQL written once
_HOLDING = LockedRows(
    Holding, where='t."buyer_id" = %s AND t."listing_id" = %s',
    fallback=lambda buyer_id, listing_id: Holding.objects.select_for_update().filter(
        buyer_id=buyer_id, listing_id=listing_id).first(),
)


def holding_lock(*, buyer_id, listing_id, create: bool = False) -> Holding:
    """The buyer's holding on the listing, locked for update (created at level 0 first if ``create``
    and there is none: one statement when it exists)."""
    taken(Rank.HOLDING, f"holding of buyer {buyer_id} on listing {listing_id}")
    holding = _HOLDING.one((buyer_id, listing_id))
    if holding is None and create:
        # ON CONFLICT DO NOTHING: a concurrent first purchase may create it too
        Holding.objects.bulk_create([Holding(buyer_id=buyer_id, listing_id=listing_id)], ignore_conflicts=True)
        holding = _HOLDING.one((buyer_id, listing_id))
    if holding is None:
        raise Holding.DoesNotExist(f"no holding of buyer {buyer_id} on listing {listing_id}")
    return holding


def purchase_lock(*, purchase_id) -> Purchase:
    """The purchase, locked for update."""
    taken(Rank.PURCHASE, f"purchase {purchase_id}")
    return Purchase.objects.select_for_update().get(pk=purchase_id)


def holdings_lock(*, listing_id, buyer_ids) -> dict[int, Holding]:
    """The holdings of ``buyer_ids`` (ids, or a subquery of them) on the listing, locked for update
    in id order: ``{buyer_id: holding}``."""
    taken(Rank.HOLDING, f"holdings of buyers on listing {listing_id}")
    rows = Holding.objects.select_for_update().filter(listing_id=listing_id, buyer_id__in=buyer_ids).order_by("pk")
    return {holding.buyer_id: holding for holding in rows}


def purchases_lock(*, pending) -> list[Purchase]:
    """The purchases of the queryset ``pending``, locked for update in id order (only their own rows)."""
    taken(Rank.PURCHASE, "purchases")
    return list(pending.select_for_update(of=("self",)).order_by("pk"))
