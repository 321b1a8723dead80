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


SORTS = {
    "newest": ("-created_at", "-id"),
    "price": ("price_per_epsilon", "-id"),
    "-price": ("-price_per_epsilon", "-id"),
    "ceiling": ("-ceiling", "-id"),
    "title": ("title", "id"),
}
KINDS = ("count", "sum", "mean", "histogram")


def listing_search(*, user, text: str = "", kind: str = "", max_price=None, min_ceiling=None, sort: str = "newest") -> QuerySet:
    """The catalogue: open listings by text, statistic kind, price per eps and ceiling, sorted."""
    qs = listing_list(user=user, search=text.replace("\x00", "").strip()).filter(is_open=True)
    if kind in KINDS:
        qs = qs.filter(kinds__contains=f",{kind},")
    if max_price is not None:
        qs = qs.filter(price_per_epsilon__lte=max_price)
    if min_ceiling is not None:
        qs = qs.filter(ceiling__gte=min_ceiling)
    return qs.order_by(*SORTS.get(sort, SORTS["newest"]))


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


def holdings_list(*, user) -> QuerySet:
    """The listings the user holds a level on, highest first."""
    return visibility.holdings(user).filter(purchased__gt=0).select_related("listing").order_by("-updated_at")


def listing_plan(listing):
    """The listing's statistics laid out for its dataset's relation (``Plan``), as
    sold: existing listings are read back even if their kind is no longer offered."""
    from .statistics import build_plan

    dataset = listing.dataset
    return build_plan(listing.statistics, dataset.columns, neighbours=dataset.neighbours(), offer=False)


def listing_profile(*, listing, epsilon) -> dict:
    """The privacy-loss profile of ``listing`` at level ``epsilon`` (at most its ceiling)."""
    from market.core.errors import InvalidInput
    from market.core.levels import parse_level

    from .privacy import release_profile

    level = parse_level(epsilon)
    if level > listing.ceiling:
        raise InvalidInput(
            f"epsilon: {level} is above this listing's ceiling of {listing.ceiling}",
            fields={"epsilon": [f"At most {listing.ceiling} (the ceiling)."]},
        )
    return release_profile(listing, level)
