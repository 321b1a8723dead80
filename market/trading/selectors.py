"""Reading purchases and their releases as buyers see them (values, labels, noise scales, error bounds)."""

import logging
import uuid

import numpy as np
from django.db import DatabaseError, InterfaceError
from django.db.models import QuerySet

from market.catalog.selectors import listing_plan
from market.catalog.spec import present
from market.core import visibility
from market.core.errors import NotFound
from market.core.levels import reading_figures

from .models import Purchase
from .waits import release_wait

log = logging.getLogger(__name__)


def purchase_list(*, user) -> QuerySet:
    """The user's purchases, newest first, each with its release and the release's listing in the same query."""
    return _with_release(visibility.purchases(user)).order_by("-created_at")


def _with_release(purchases: QuerySet) -> QuerySet:
    """Purchases with their release and the release's listing (its stored plan lays its readings
    out) in the same query, never the listing's sealed true answer."""
    return purchases.select_related("release__listing").defer("release__listing__answer")


def purchase_get(*, user, purchase_id) -> "Purchase":  # noqa: F821
    try:
        purchase_id = uuid.UUID(str(purchase_id))
    except ValueError:  # not a UUID: no such purchase (a database error is not hidden as a 404)
        raise NotFound("no such purchase") from None
    purchase = visibility.purchase_with_release(user, purchase_id)
    if purchase is None:
        raise NotFound("no such purchase")
    return purchase


def purchase_wait(*, user, purchase_id, seconds: float, purchase=None) -> "Purchase":
    """The user's purchase once it is released or failed, or as it is after ``seconds`` (``Prefer:
    wait``). ``purchase``: the caller's copy, just read or made (it is read again only if it waited;
    if the database cannot be read then, the copy is the answer: a purchase just paid for is never
    answered with an error)."""
    copy = purchase
    if purchase is None:
        purchase = purchase_get(user=user, purchase_id=purchase_id)  # 404 before any waiting
    if not purchase.in_flight:
        return purchase
    try:
        release_wait(
            purchase_id=purchase.pk,
            seconds=seconds,
            done=lambda: visibility.one(visibility.purchases(user).filter(pk=purchase.pk).values_list("status", flat=True))
            not in Purchase.IN_FLIGHT,
        )
        return purchase_get(user=user, purchase_id=purchase.pk)
    except (DatabaseError, InterfaceError) as exc:
        if copy is None:  # a GET: nothing was paid in this request, the error handler answers 503
            raise
        log.warning("purchase %s could not be read again after its wait (%s); answering what is known", purchase.pk, exc)
        return copy


def release_list(*, user, listing_id: int | None = None, since=None) -> QuerySet:
    """The user's releases, newest first; only one listing's (``listing_id``) or those made at or
    after ``since`` when given."""
    # never the listing's sealed true answer: a release is read from its own values
    releases = visibility.releases(user).select_related("listing__dataset").defer("listing__answer")
    if listing_id is not None:
        releases = releases.filter(listing_id=listing_id)
    if since is not None:
        releases = releases.filter(created_at__gte=since)
    return releases.order_by("-created_at", "-id")


def release_get(*, user, release_id: str) -> "Release":  # noqa: F821
    """One of the user's releases by its public id ("rel_..."); anything else is 404."""
    release = visibility.one(release_list(user=user).filter(public_id=str(release_id)))
    if release is None:
        raise NotFound("no such release")
    return release


def release_readings(release) -> list[dict]:
    """One reading per statistic (histograms: per bin), with its noise scale and 95% error bound
    (microdata: one per bit, the decoded number of records with it set). ``value`` and ``error_bound``
    are shown at their meaningful precision (``market.core.levels.reading_figures``: a lattice value's
    grid, else two significant digits of its bound; the bound rounded up), with their texts
    (``value_text``, ``bound_text``) for pages; ``value_exact`` and ``error_bound_exact`` are the
    figures as released and computed."""
    if release.listing.release_mechanism.sells_records:
        decoded = release.listing.microdata().decoded(release.values, release.level)
        readings = [{"label": d["label"], "kind": "microdata", "value": d["estimate"], "noise_scale": float(scale),
                     "error_bound": d["error_bound"]} for d, scale in zip(decoded, release.noise_scales)]
        return [_shown(r, None) for r in readings]
    plan = listing_plan(release.listing)
    readings = present(plan, np.asarray(release.values, dtype=np.float64), np.asarray(release.noise_scales),
                       level=release.level)
    # a reading that is one coordinate's released value (a count, a sum, a bin) is on that coordinate's grid
    grids = dict(zip(plan.labels, plan.lattice.grids)) if plan.lattice is not None else {}
    return [_shown(r, grids.get(r["label"])) for r in readings]


def _shown(reading: dict, grid) -> dict:
    figures = reading_figures(reading["value"], reading["error_bound"], grid=grid)
    return {**reading, "value_exact": reading["value"], "error_bound_exact": reading["error_bound"],
            **{key: figures[key] for key in ("value", "error_bound", "value_text", "bound_text")}}


def release_microdata(release) -> dict | None:
    """A microdata release as its buyer reads it (None for other listings): the number of records and
    bits, the report's rates ``p`` and ``q`` at its level, and per bit the number of reports saying 1
    and the decoded number of records with the bit set, with its 95% interval."""
    listing = release.listing
    if not listing.release_mechanism.sells_records:
        return None
    md = listing.microdata()
    p, q = md.rates(release.level)
    return {
        "records": md.records,
        "bits": md.bits,
        "weight": md.weight,
        "bit_level": str(md.bit_level(release.level)),  # exact: eps / weight
        "p": p,
        "q": q,
        "salt": md.salt,
        "columns": [f.stored() for f in md.fields],
        "decoded": md.decoded(release.values, release.level),
    }


def release_rows(release):
    """A synthetic-data release's rows (``market.catalog.synthetic.Rows``): the same for every buyer of its
    level and every download. The buyer's own release only (the caller read it through
    :func:`release_get`)."""
    from market.catalog import synthetic

    return synthetic.rows(listing_plan(release.listing), release.values, synthetic.key_of(release.point),
                          release.point.level)


def release_synthetic(release) -> dict | None:
    """A synthetic-data release's rows in brief (None for other listings): their columns, and their number
    when the number of records is public (else it is the release's estimate, known once they are drawn)."""
    from market.catalog import synthetic

    if not synthetic.sells_rows(release.listing):
        return None
    plan = listing_plan(release.listing)
    return {"columns": [entry["column"] for entry in plan.statistics[0]["columns"]],
            "rows": plan.neighbours.size if plan.neighbours.public else None}


def release_reports(release):
    """A microdata release's reports (bool, records x bits): the buyer's own release only (the caller
    read ``release`` through :func:`release_get`); never the noise or the true bits."""

    md = release.listing.microdata()
    report = visibility.bit_reports(release.buyer).get(point_id=release.point_id)
    return report.reports((md.records, md.bits))
