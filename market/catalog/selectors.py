from decimal import Decimal

from django.db.models import DecimalField, F, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from market.core import visibility
from market.core.errors import InvalidInput
from market.core.errors import NotFound
from market.core.levels import level_text, parse_level

from .budget import counted
from .spec.columns import columns_from
from .models import Listing
from .privacy import release_profile
from .spec import KINDS as STATISTIC_KINDS
from .spec import OFFERED_KINDS
from .spec import build_plan, plan_restore

_LEVEL = DecimalField(max_digits=12, decimal_places=4)


def ceilings_needed(*, dataset_pk: int) -> Decimal:
    """What a dataset's budget must cover: the sum of its counted listings' totals, each its ceiling
    plus its size release's level (``Listing.total_level``; 0 if none)."""
    # the services' budget check, under the dataset's lock: every listing of the dataset, whoever asks
    total = visibility.dangerously_unscoped(Listing).filter(counted(), dataset_id=dataset_pk).aggregate(
        total=Sum(F("ceiling") + F("size_level")))["total"]
    return Decimal(total or 0).quantize(Decimal("0.0001"))


def counted_listings(*, dataset_pk: int) -> QuerySet:
    """A dataset's counted listings, open or closed, with what their privacy-loss distributions read
    (``market.catalog.composition``): the services' composition check, under the dataset's lock,
    over every listing of the dataset, whoever asks."""
    return (visibility.dangerously_unscoped(Listing).filter(counted(), dataset_id=dataset_pk)
            .only("mechanism", "plan", "ceiling", "size_level").order_by("pk"))


def dataset_composed(dataset):
    """What a dataset with a delta spends, its counted listings composed at their ceilings
    (``market.catalog.composition.Composed``); None without a delta."""
    if dataset.delta_budget is None:
        return None
    from . import composition

    plds = composition.dataset_plds(counted_listings(dataset_pk=dataset.pk))
    return composition.composed(plds, eps=dataset.total_budget, delta=dataset.delta_budget)


def with_budget_figures(datasets: QuerySet) -> QuerySet:
    """``datasets`` annotated in the same query with ``ceilings_total`` (the counted listings'
    totals: ceiling plus size release level) and ``spent`` (the sum over counted listings of each
    one's largest released level plus its size release's level: independent releases compose by
    addition, and a size release is made once, at creation), both exact decimals, 0 without listings."""
    zero = Value(Decimal(0), output_field=_LEVEL)
    counted_listings = counted("listings__")
    return datasets.annotate(
        ceilings_total=Coalesce(Sum(F("listings__ceiling") + F("listings__size_level"), filter=counted_listings),
                                zero, output_field=_LEVEL),
        spent=Coalesce(Sum(F("listings__noise_path__released_max") + F("listings__size_level"), filter=counted_listings),
                       zero, output_field=_LEVEL),
    )


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
    "ceiling": ("-level_total", "-id"),  # the listing's total: its ceiling and its size release
    "title": ("title", "id"),
}
#: The kinds the catalogue can be searched by: every offered l1 kind (``market.catalog.spec``).
KINDS = tuple(name for name in OFFERED_KINDS if not STATISTIC_KINDS[name].vector) + ("microdata",)


def listing_search(*, user, text: str = "", kind: str = "", max_price=None, min_ceiling=None, sort: str = "newest") -> QuerySet:
    """The catalogue: open listings by text, statistic kind, price per eps and ceiling (each listing's total,
    as its page shows it: the highest level sold plus its size release), sorted."""
    qs = listing_list(user=user, search=text.replace("\x00", "").strip()).filter(is_open=True)
    qs = qs.alias(level_total=F("ceiling") + F("size_level"))
    if kind in KINDS:
        qs = qs.filter(kind_rows__kind=kind)  # at most one row per kind and listing: no duplicates
    if max_price is not None:
        qs = qs.filter(price_per_epsilon__lte=max_price)
    if min_ceiling is not None:
        qs = qs.filter(level_total__gte=min_ceiling)
    return qs.order_by(*SORTS.get(sort, SORTS["newest"]))


def listing_get(*, user, listing_id, with_owner: bool = True) -> Listing:
    """A listing ``user`` may see; ``with_owner=False`` leaves its owner's row and its dataset's
    columns and texts out of the query (a quote needs the listing and its dataset's relation only).
    An open listing (most) is found without the test of who the user is; a closed one, only if the
    user owns or holds it (``visibility.listings``)."""
    if with_owner:
        listing = visibility.one(visibility.open_listings().filter(pk=listing_id))
    else:
        listing = visibility.open_listing(listing_id)
    if listing is None and getattr(user, "is_authenticated", False):
        listings = visibility.listings(user)
        if not with_owner:
            texts = (f"dataset__{name}" for name in visibility.DATASET_TEXTS)
            listings = listings.select_related(None).select_related("dataset").defer(*texts)
        listing = visibility.one(listings.filter(pk=listing_id))
    if listing is None:
        raise NotFound("no such listing")
    return listing


def levels_held(*, user, listing_ids) -> dict[int, Decimal]:
    """The level the user holds on each of these listings (absent: 0)."""
    return dict(
        visibility.holdings(user).filter(listing_id__in=list(listing_ids)).values_list("listing_id", "purchased")
    )


def dataset_list(*, user) -> QuerySet:
    """The owner's datasets with their budget figures (``with_budget_figures``), newest first."""
    return with_budget_figures(visibility.owned_datasets(user)).order_by("-created_at", "-id")


def dataset_get(*, user, dataset_id: str):
    """One of the owner's datasets by its public id, with its budget figures; NotFound otherwise."""
    dataset = visibility.one(dataset_list(user=user).filter(public_id=str(dataset_id)))
    if dataset is None:
        raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
    return dataset


def dataset_same_content(*, user, dataset) -> list:
    """The owner's datasets made before ``dataset`` with the same content hash (none while a resumable
    upload's parts are still being joined: its hash is not known yet)."""
    if not dataset.content_hash:
        return []
    return list(
        visibility.owned_datasets(user).filter(content_hash=dataset.content_hash, pk__lt=dataset.pk)
        .order_by("created_at", "id").only("public_id", "name")
    )


def dataset_budget_history(*, user, dataset) -> QuerySet:
    """The recorded changes of one of the owner's datasets' budget, newest first."""

    return visibility.dataset_budget_changes(user).filter(dataset=dataset).select_related("actor")


def holdings_list(*, user) -> QuerySet:
    """The listings the user holds a level on, highest first."""
    return visibility.holdings(user).filter(purchased__gt=0).select_related("listing").order_by("-updated_at")


def listing_delivered_quality(*, user, listing_id) -> list[dict] | None:
    """The owner's own synthetic-data listing's delivered quality per level released
    (``market.catalog.synthetic.delivered_quality``); None for any other listing. Owners only: it reads
    the listing's true answer."""
    from . import synthetic

    listing = visibility.owned_listings(user).filter(pk=listing_id).first()
    if listing is None:
        raise NotFound("no such listing among yours")
    return synthetic.delivered_quality(listing, listing_plan(listing)) if synthetic.sells_rows(listing) else None


def listing_plan(listing):
    """The listing's statistics laid out for its dataset's relation (``Plan``), as sold: read back
    from what the listing stored when it was made (``Listing.plan``), without reading its dataset
    or laying the statistics out again. A listing with no stored plan (one the migration could not
    lay out) is laid out from its dataset, as every read did before, even if its kind is no longer
    offered."""

    # a microdata listing's layout is implied by its records: its bits as the coordinates of its one
    # "statistic" (statistics.Microdata), under the public number of records (its mechanism's layout)
    implied = listing.release_mechanism.layout(labels=listing.labels, upper=listing.upper)
    if implied is not None or listing.layout is not None:
        return plan_restore(
            layout=implied or listing.layout, statistics=listing.statistics, labels=listing.labels,
            sensitivity=listing.sensitivity, weights=listing.weights, lower=listing.lower, upper=listing.upper,
            grids=None if implied else listing.grids, mechanism=listing.release_mechanism,
        )
    dataset = listing.dataset
    return build_plan(listing.statistics, columns_from(dataset.columns), neighbours=dataset.neighbours(), offer=False,
                      mechanism=listing.release_mechanism)


def listing_profile(*, listing, epsilon) -> dict:
    """The privacy-loss profile of ``listing`` at level ``epsilon`` (at most its ceiling)."""

    level = parse_level(epsilon)
    if level > listing.ceiling:
        raise InvalidInput(
            f"epsilon: {level_text(level)} is above this listing's ceiling of {level_text(listing.ceiling)}",
            fields={"epsilon": [f"At most {level_text(listing.ceiling)} (the ceiling)."]},
        )
    ladder = listing.release_mechanism.ladder()  # a listing sold on calibrated levels has profiles at those only
    if ladder is not None and level not in ladder:
        shown = ", ".join(level_text(at) for at in ladder)
        raise InvalidInput(f"epsilon: this listing sells the levels {shown}; {level_text(level)} is not one of them",
                           fields={"epsilon": [f"One of {shown}."]})
    return release_profile(listing, level, plan=listing_plan(listing))
def listing_spent(*, user, listing_ids) -> dict[int, Decimal]:
    """The privacy spent on each of these listings that ``user`` owns: its largest released level
    plus its size release's level; others' listings are absent. One query."""
    return dict(
        visibility.owned_listings(user)
        .filter(pk__in=list(listing_ids))
        .annotate(spent_total=F("noise_path__released_max") + F("size_level"))
        .values_list("pk", "spent_total")
    )
