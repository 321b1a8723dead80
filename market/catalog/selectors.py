from decimal import Decimal

from django.db.models import QuerySet

from market.core import visibility
from market.core.errors import NotFound


def listing_list(*, user, search: str = "") -> QuerySet:
    qs = visibility.listings(user).order_by("-created_at", "-id")
    if search:
        from django.db.models import Q

        qs = qs.filter(Q(title__icontains=search) | Q(description__icontains=search))
    return qs


def listing_get(*, user, listing_id) -> "Listing":  # noqa: F821
    listing = visibility.listings(user).filter(pk=listing_id).first()
    if listing is None:
        raise NotFound("no such listing")
    return listing


def levels_held(*, user, listing_ids) -> dict[int, Decimal]:
    """The level the user holds on each of these listings (absent: 0)."""
    return dict(
        visibility.holdings(user).filter(listing_id__in=list(listing_ids)).values_list("listing_id", "purchased")
    )


def dataset_list(*, user) -> QuerySet:
    return visibility.owned_datasets(user).order_by("-created_at", "-id")
