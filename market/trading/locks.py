"""Row locks on holdings and purchases, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import Holding, Purchase


def holding_lock(*, buyer_id, listing_id, create: bool = False) -> Holding:
    """The buyer's holding on the listing, locked for update (created at level 0 first if ``create``)."""
    if create:
        Holding.objects.get_or_create(buyer_id=buyer_id, listing_id=listing_id)
    taken(Rank.HOLDING, f"holding of buyer {buyer_id} on listing {listing_id}")
    return Holding.objects.select_for_update().get(buyer_id=buyer_id, listing_id=listing_id)


def purchase_lock(*, purchase_id, with_listing: bool = False) -> Purchase:
    """The purchase, locked for update (only its own row, even when its listing is loaded with it)."""
    taken(Rank.PURCHASE, f"purchase {purchase_id}")
    queryset = Purchase.objects.select_for_update(of=("self",))
    if with_listing:
        queryset = queryset.select_related("listing__dataset")
    return queryset.get(pk=purchase_id)


def holdings_lock(*, listing_id, buyer_ids) -> dict[int, Holding]:
    """The holdings of ``buyer_ids`` on the listing, locked for update in id order: ``{buyer_id: holding}``."""
    taken(Rank.HOLDING, f"holdings of {len(buyer_ids)} buyers on listing {listing_id}")
    rows = Holding.objects.select_for_update().filter(listing_id=listing_id, buyer_id__in=buyer_ids).order_by("pk")
    return {holding.buyer_id: holding for holding in rows}


def purchases_lock(*, purchase_ids) -> list[Purchase]:
    """The purchases, locked for update in id order (only their own rows)."""
    taken(Rank.PURCHASE, f"{len(purchase_ids)} purchases")
    return list(Purchase.objects.select_for_update().filter(pk__in=purchase_ids).order_by("pk"))
