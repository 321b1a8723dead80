"""What an owner's dashboard shows: their datasets, listings, sales and privacy spent.

Read-only. Every query starts from ``visibility.owned_datasets`` or
``visibility.owned_listings``, so another owner's rows do not exist here
(``NotFound``). The results are plain dicts and lists; levels are Decimals
without trailing zeros (``2``, ``0.5``), money Decimals in credits.

Only released purchases count as sales: a failed purchase was refunded, and
one still in flight is reported apart. The privacy spent on a listing is its
noise path's largest released level, never a sum over buyers. Stored noise is
never read: noise points are fetched as ``values()`` without their noise, and
the datasets' data is never read here (column summaries were stored at processing).
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from market.catalog.pricing import curve_of
from market.catalog.privacy import release_profile
from market.catalog.risk import DEFINITION as RISK_DEFINITION
from market.catalog.risk import level_at_risk
from market.catalog.selectors import listing_plan, with_budget_figures
from market.catalog.spec import describe
from market.core import visibility
from market.core.errors import NotFound
from .models import Purchase

_ZERO_CREDITS = Decimal("0.00")
_RELEASED = Q(purchases__status=Purchase.Status.RELEASED)


def _plain(value: Decimal) -> Decimal:
    """``value`` without trailing zeros or exponent, for display: 2.0000 -> 2, 0.5000 -> 0.5."""
    return value.quantize(Decimal(1)) if value == value.to_integral_value() else value.normalize()


def _eps(value) -> Decimal:
    """A level for display (see ``_plain``); None counts as 0."""
    return _plain(Decimal(value or 0))


#: A listing page charts the profiles of at most this many released levels (a busy path has thousands).
PROFILED_LEVELS = 6


def _profiled(points) -> list[Decimal]:
    """The released levels whose profiles the owner's page shows: all of them when few, else
    ``PROFILED_LEVELS`` spread evenly from the lowest to the largest (which is what was spent)."""
    levels = [point["level"] for point in points]
    if len(levels) <= PROFILED_LEVELS:
        return levels
    last = len(levels) - 1
    return [levels[round(i * last / (PROFILED_LEVELS - 1))] for i in range(PROFILED_LEVELS)]


def _budget(dataset) -> dict:
    """A dataset's budget (annotated by ``selectors.with_budget_figures``): its listings' ceilings add
    up to ``used`` (the most they can ever spend together), at most ``total``; ``left`` is what a new
    listing's ceiling may take; ``spent`` is the privacy spent so far, the sum over its listings of
    each one's largest released level. Point listings are not eps-DP and are not counted."""
    used = _eps(dataset.ceilings_total)
    return {
        "used": used,
        "total": _eps(dataset.total_budget),
        "left": _eps(dataset.total_budget - used),
        "spent": _eps(dataset.spent),
    }


def _ladder(listing, points) -> list[dict] | None:
    """A microdata listing's ladder as its owner sees it (None for other listings): per level, the
    price from nothing, the bits' rates ``p`` and ``q``, the 95% bound of each decoded count and how
    many releases read it (``sold``: at least one)."""
    if not listing.release_mechanism.sells_records:
        return None
    md = listing.microdata()
    reads = {point["level"]: point["reads"] for point in points}
    curve = curve_of(listing)
    out = []
    for eps in md.levels:
        p, q = md.rates(eps)
        out.append({"level": _eps(eps), "price": curve.price(eps), "p": p, "q": q, "bound": md.bound(eps),
                    "releases": reads.get(eps, 0), "sold": reads.get(eps, 0) > 0})
    return out


def owner_overview(*, user) -> dict:
    """The owner's datasets and listings with their figures, newest first.

    ``{"datasets": [{"id", "name", "records", "columns", "listings", "budget": {"used", "total", "left", "spent"},
    "relation", "protects", "created_at"}], "listings": [{"id", "title", "dataset_id", "dataset", "is_open", "status",
    "ceiling", "spent", "price_per_epsilon", "sales", "revenue", "created_at"}], "totals": {"sales",
    "revenue"}}``. Three queries, whatever the number of rows.
    """
    datasets = (
        with_budget_figures(visibility.owned_datasets(user))
        .annotate(listing_count=Count("listings"))
        .order_by("-created_at", "-id")
    )
    listings = (
        visibility.owned_listings(user)
        .select_related("noise_path")
        .defer("answer")
        .annotate(sales=Count("purchases", filter=_RELEASED), revenue=Sum("purchases__price", filter=_RELEASED))
        .order_by("-created_at", "-id")
    )
    listing_rows = [
        {
            "id": listing.pk,
            "title": listing.title,
            "dataset_id": listing.dataset.public_id,
            "dataset": listing.dataset.name,
            "is_open": listing.is_open,
            "status": listing.status,  # preparing and failed listings are the owner's alone
            "ceiling": _eps(listing.total_level),  # its ceiling plus its size release: all it can cost
            # a size release is spent once it is drawn, with the answer (preparing: reserved, not spent)
            "spent": _eps(listing.noise_path.released_max + (listing.size_level if listing.is_ready else 0)),
            "price_per_epsilon": listing.price_per_epsilon,
            "sales": listing.sales,
            "revenue": listing.revenue or _ZERO_CREDITS,
            "created_at": listing.created_at,
        }
        for listing in listings
    ]
    return {
        "datasets": [
            {
                "id": dataset.public_id,
                "name": dataset.name,
                "records": dataset.row_count,
                "columns": dataset.kept_column_names,
                "status": dataset.status,
                "listings": dataset.listing_count,
                "budget": _budget(dataset),
                "relation": "public size" if dataset.size_is_public else "private size",
                "protects": dataset.protects,
                "created_at": dataset.created_at,
            }
            for dataset in datasets
        ],
        "listings": listing_rows,
        "totals": {
            "sales": sum(row["sales"] for row in listing_rows),
            "revenue": sum((row["revenue"] for row in listing_rows), _ZERO_CREDITS),
        },
    }


def dataset_options(*, user) -> list[dict]:
    """The owner's datasets to choose from, newest first: ``[{"id", "name"}]``."""
    return [
        {"id": public_id, "name": name}
        for public_id, name in visibility.owned_datasets(user).order_by("-created_at", "-id").values_list("public_id", "name")
    ]


def _figure(value):
    """A stored number for display: the shortest decimal that reads back as the stored float
    (285.92, not 285.9200000001); a date stays its ISO text; None stays None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _plain(Decimal(repr(float(value)))) if isinstance(value, float) else Decimal(value)
    return value


def _category_text(value) -> str:
    """A value seen in the data as text: true/false for a boolean, else text (shown to the owner only)."""
    return "true" if value is True else "false" if value is False else str(value)


def _column_hint(column) -> dict | None:
    """One column's stored summary (the owner's own data, shown to them only); None for an ignored column."""
    if isinstance(column, str):
        return {"name": column, "type": "decimal", "min": None, "max": None}
    if column.get("type") == "ignored":
        return None
    return {
        "name": column["name"], "type": column.get("type"), "missing": column.get("missing"),
        "missing_count": column.get("missing_count"), "min": _figure(column.get("min")),
        "max": _figure(column.get("max")), "distinct": column.get("distinct"),
        "categories": [_category_text(c["value"] if isinstance(c, dict) else c) for c in column.get("categories") or []],
    }


def dataset_summary(*, user, dataset_id) -> dict:
    """One of the owner's datasets, to choose a listing's bounds and ceiling by:
    ``{"id", "name", "records", "status", "columns": [{"name", "type", "missing", "missing_count", "min", "max",
    "distinct", "categories"}], "budget": {"used", "total", "left", "spent"}}``.

    The summaries (stored at processing, never read from the data here) are the
    owner's own data, shown to them only. Raises NotFound for a dataset that is not theirs.
    """
    dataset = with_budget_figures(visibility.owned_datasets(user).filter(public_id=str(dataset_id))).first()
    if dataset is None:
        raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
    return {
        "id": dataset.public_id,
        "name": dataset.name,
        "records": dataset.row_count,
        "status": dataset.status,
        "columns": [_column_hint(column) for column in dataset.columns if _column_hint(column)],
        "budget": _budget(dataset),
    }


def listing_dashboard(*, user, listing_id) -> dict:
    """One of the owner's listings: sales, revenue, buyers, privacy spent.

    ``{"listing": {"id", "title", "description", "dataset_id", "dataset", "is_open", "closed_reason", "status", "failure", "ceiling",
    "price_per_epsilon", "price_curve", "statistics" (in words), "values" (per release), "engine" ("lattice" or "laplace"),
    "noise" (the engine in words), "guarantee" (what it guarantees), "created_at"},
    "spent", "ceiling", "spent_percent",
    "sales", "revenue", "in_flight": {"count", "amount"},
    "revenue_by_day": [{"day", "sales", "revenue"}],
    "buyers": [{"username", "purchased", "released", "paid"}], "buyer_count", "levels_sum", "worst_coalition",
    "points": [{"level", "method", "created_at", "reads"}], "ladder": None or, for microdata, per level
    {"level", "price", "p", "q", "bound", "releases", "sold"}}``.

    ``buyer_count`` and ``levels_sum`` are over the buyers who hold a released
    level: together they learn no more than ``spent``, the largest of those
    levels, however large ``levels_sum`` is. ``worst_coalition`` is that
    largest level held: what the worst coalition of buyers learns. ``points``
    are the levels released on the listing's noise path (without their
    noise), with how many releases read each. Raises NotFound for a listing
    that is not theirs.
    """
    listing = (
        visibility.owned_listings(user)
        .select_related("noise_path")
        .defer("answer")
        .filter(pk=listing_id)
        .first()
    )
    if listing is None:
        raise NotFound("no such listing among yours")
    released = listing.purchases.filter(status=Purchase.Status.RELEASED)
    totals = released.aggregate(sales=Count("pk"), revenue=Sum("price"))
    in_flight = listing.purchases.filter(status__in=Purchase.IN_FLIGHT).aggregate(
        count=Count("pk"), amount=Sum("price")
    )
    by_day = (
        released.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(sales=Count("pk"), revenue=Sum("price"))
        .order_by("day")
    )
    paid = dict(released.values("buyer_id").annotate(paid=Sum("price")).order_by().values_list("buyer_id", "paid"))
    holdings = (
        listing.holdings.filter(purchased__gt=0)
        .order_by("-released", "-purchased", "buyer__username")
        .values("buyer_id", "buyer__username", "purchased", "released")
    )
    buyers = [
        {
            "username": row["buyer__username"],
            "purchased": _eps(row["purchased"]),
            "released": _eps(row["released"]),
            "paid": paid.get(row["buyer_id"], _ZERO_CREDITS),
        }
        for row in holdings
    ]
    points = (
        listing.noise_path.points.annotate(reads=Count("releases"))
        .order_by("level")
        .values("level", "method", "created_at", "reads")
    )
    spent = _eps(listing.noise_path.released_max + listing.size_level)  # a size release is spent at creation
    ceiling = _eps(listing.total_level)
    plan = listing_plan(listing)
    ladder = _ladder(listing, points)
    # a microdata path is drawn from the ladder's top down: a level drawn but not sold is not released
    released_points = [point for point in points if point["reads"]] if ladder else list(points)
    return {
        "listing": {
            "id": listing.pk,
            "title": listing.title,
            "description": listing.description,
            "dataset_id": listing.dataset.public_id,
            "dataset": listing.dataset.name,
            "dataset_removed": listing.dataset.removed_at is not None,
            "is_open": listing.is_open,
            "closed_reason": listing.closed_reason,
            "status": listing.status,
            "failure": listing.failure,
            "ceiling": ceiling,
            "price_per_epsilon": listing.price_per_epsilon,
            "price_curve": listing.price_curve,
            "statistics": describe(plan),
            "values": len(listing.labels),
            "engine": listing.engine,
            "noise": listing.release_mechanism.words(),
            "guarantee": listing.release_mechanism.guarantee(len(listing.labels)),
            "created_at": listing.created_at,
        },
        "spent": spent,
        "released": _eps(listing.noise_path.released_max),  # the largest level sold and released
        "size_level": _eps(listing.size_level),  # the size release, spent once at creation (0: none)
        "ceiling": ceiling,
        "spent_percent": spent / ceiling * 100,  # exact (Decimal): shown rounded up
        "sales": totals["sales"],
        "revenue": totals["revenue"] or _ZERO_CREDITS,
        "in_flight": {"count": in_flight["count"], "amount": in_flight["amount"] or _ZERO_CREDITS},
        "revenue_by_day": list(by_day),
        "buyers": buyers,
        "buyer_count": sum(1 for row in buyers if row["released"] > 0),
        "levels_sum": _eps(sum((row["released"] for row in buyers), Decimal(0))),
        "worst_coalition": _eps(max((row["released"] for row in buyers), default=0)),
        "points": [{**point, "level": _eps(point["level"])} for point in points],
        # per released level: the finer eps it also meets, its risk, and (with a
        # compensation model) the budgets under plain DP and under privacy at risk
        "risk": [figures for point in released_points if (figures := level_at_risk(listing, point["level"]))],
        "risk_definition": RISK_DEFINITION,
        # per released level: the exact guarantee of the release (delta below the level)
        "profiles": [release_profile(listing, level, plan=plan) for level in _profiled(released_points)],
        "levels_released": len(released_points),
        "ladder": ladder,
        "protects": listing.dataset.protects,
        "compensation": listing.compensation,
        "price_formula": curve_of(listing).formula(),
    }
