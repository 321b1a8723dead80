"""Owners' changes to their listings: title, description and price; closing and reopening; and every
listing's sealed answer re-keyed (``manage.py rotate_encryption_keys``)."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from market.core import crypto, visibility
from market.core.errors import Conflict, NotFound
from market.core.levels import level_text
from market.core.locks import retrying

from .. import composition, microdata
from ..locks import dataset_lock, listing_answer_lock, listing_lock
from ..models import Listing
from ..selectors import ceilings_needed, counted_listings
from ..spec import SpecError, build_plan
from ..spec.columns import columns_from
from .common import _require_owner, _require_owner_still, _text
from .listings import _linear_curve, _price_curve, _Problems


def _owned_listing_locked(owner, listing_id) -> Listing:
    listing = listing_lock(owner=owner, listing_id=_listing_pk(listing_id))
    if listing is None:
        raise NotFound("no such listing among yours", fields={"listing": ["Choose one of your listings."]})
    return listing


def _listing_pk(listing_id) -> int:
    try:
        return int(listing_id)
    except (TypeError, ValueError):
        raise NotFound("no such listing among yours", fields={"listing": ["Choose one of your listings."]}) from None


def listing_update(
    *, owner, listing_id, title=None, description=None, price_curve: dict | None = None, price_per_epsilon=None,
) -> Listing:
    """Change one of the owner's listings: its title, its description, its price (each left None
    stays as it is). A new price is ``price_curve`` (linear, power or compensation-derived, with the
    listing's own compensation model) or the linear ``price_per_epsilon * eps``, checked as at
    creation; it applies to purchases made from now on. What was sold keeps the price recorded
    on its purchase (``Purchase.price``) and on the ledger; a buyer who holds level ``a`` pays
    ``P_new(b) - P_new(a)`` to go on to ``b``, so a cheaper curve makes their next step cheaper
    and a dearer one dearer, and nobody is charged or refunded for what they hold. Every input
    at fault is named in one 400; another owner's listing is a 404. The row lock waits for the
    purchases in progress on the listing, which priced their step with the old curve."""
    _require_owner(owner)
    problems = _Problems()
    changes: dict = {}
    if title is not None:
        changes["title"] = problems.collect(lambda: _text(title, "title", max_length=200))
    if description is not None:
        changes["description"] = problems.collect(
            lambda: _text(description, "description", max_length=5000, required=False)
        )
    linear = price_curve is None and price_per_epsilon is not None
    if linear:
        price_curve = _linear_curve(price_per_epsilon, problems)
    with transaction.atomic():
        listing = _owned_listing_locked(owner, listing_id)
        if price_curve is not None:
            own = {k: v for k, v in (listing.compensation or {}).items() if k != "people"}  # people: the dataset's
            found = problems.collect(
                lambda: _price_curve(price_curve, own or None, listing.ceiling, listing.dataset, linear=linear)
            )
            if found is not None:
                curve = found[0]
                changes["price_curve"] = curve.as_dict()
                changes["price_per_epsilon"] = (curve.price(listing.ceiling) / listing.ceiling).quantize(Decimal("0.01"))
        if problems.messages:
            raise problems.error()
        changes = {name: value for name, value in changes.items() if getattr(listing, name) != value}
        for name, value in changes.items():
            setattr(listing, name, value)
        if changes:
            listing.save(update_fields=list(changes))
    return listing


#: what buyers read on a listing its owner closed without saying why
CLOSED_BY_OWNER = "Closed by its owner: nothing more is sold. Releases already bought stay readable."


def listing_close(*, owner, listing_id, reason: str = "") -> Listing:
    """Close one of the owner's listings: nothing more is sold on it (a purchase finds no open
    listing: 404), while every release already bought stays readable to its buyer, who sees the
    listing with ``reason`` (or a plain default). Purchases in progress finish first (the row lock
    waits for them). Its ceiling stays counted in its dataset's budget, so reopening it never
    needs more budget than there is. Closing a closed listing keeps its reason."""
    _require_owner(owner)
    reason = _text(reason, "reason", max_length=500, required=False)
    with transaction.atomic():
        listing = _owned_listing_locked(owner, listing_id)
        if listing.is_open or (listing.status == Listing.Status.PREPARING and not listing.closed_reason):
            # a listing still preparing stays closed once it is ready
            listing.is_open, listing.closed_reason = False, reason or CLOSED_BY_OWNER
            listing.save(update_fields=["is_open", "closed_reason"])
    return listing


def listing_reopen(*, owner, listing_id) -> Listing:
    """Open a closed listing of the owner's again, for sale as it was (same statistics, ceiling,
    price and noise path: a buyer goes on from the level they hold).

    Refused (409, with the reason) when the listing could not be created today: its statistics
    are no longer offered for its dataset (a point, or a centroid: the listings the platform
    itself closed, and the vector statistics of the retired float path), or its dataset's budget does not cover
    the ceilings of its listings (a closed listing keeps its ceiling counted, so this holds unless
    the budget was changed outside the services). Reopening an open listing changes nothing."""
    _require_owner(owner)
    found = visibility.owned_listings(owner).filter(pk=_listing_pk(listing_id)).values_list("dataset__public_id", flat=True)
    dataset_id = next(iter(found), None)
    if dataset_id is None:
        raise NotFound("no such listing among yours", fields={"listing": ["Choose one of your listings."]})
    with transaction.atomic():
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id)  # before the listing: the lock order
        listing = _owned_listing_locked(owner, listing_id)
        if listing.is_open:
            return listing
        if listing.status == Listing.Status.FAILED:
            raise Conflict(f"this listing was never made: {listing.failure}", code="cannot_reopen",
                           fields={"listing": ["It failed while it was prepared: create it again."]})
        if listing.status == Listing.Status.PREPARING:  # opens once it is ready
            listing.closed_reason = ""
            listing.save(update_fields=["closed_reason"])
            return listing
        if dataset is None:  # removed by its owner (market.catalog.services.dataset_remove)
            raise Conflict("this listing cannot be reopened: its dataset was removed", code="cannot_reopen",
                           fields={"listing": ["Its dataset was removed."]})
        _require_owner_still(owner)
        try:
            if listing.release_mechanism.sells_records:
                microdata.build({"columns": [f.as_dict() for f in listing.microdata().fields],
                                 "levels": listing.statistics[0]["levels"]},
                                dataset.columns, records=dataset.public_size, public=dataset.size_is_public)
            else:
                build_plan(listing.statistics, columns_from(dataset.columns), neighbours=dataset.neighbours(),
                           mechanism=listing.release_mechanism)
        except SpecError as exc:
            raise Conflict(
                f"this listing cannot be reopened: {exc}", code="cannot_reopen",
                fields={"listing": ["Its statistics are no longer offered on this dataset."]},
            ) from None
        if listing.counted_in_budget and dataset.delta_budget is not None:  # composed (closed listings stay counted)
            together = composition.composed(composition.dataset_plds(counted_listings(dataset_pk=dataset.pk)),
                                            eps=dataset.total_budget, delta=dataset.delta_budget)
            if not together.fits:
                raise Conflict(
                    f"this listing cannot be reopened: its dataset's listings, composed, spend δ {together.delta_text} at "
                    f"ε {level_text(dataset.total_budget)}, above its δ {composition.delta_text(dataset.delta_budget)}; "
                    "raise the budget first", code="cannot_reopen",
                    fields={"listing": ["The dataset's budget is too small for its listings."]},
                )
        elif listing.counted_in_budget:
            need = ceilings_needed(dataset_pk=dataset.pk)
            if need > dataset.total_budget:
                raise Conflict(
                    f"this listing cannot be reopened: its dataset's listings have ceilings adding up to {level_text(need)}, "
                    f"above its budget {level_text(dataset.total_budget)}; raise the budget first",
                    code="cannot_reopen", fields={"listing": [f"The dataset's budget is below {level_text(need)}."]},
                )
        listing.is_open, listing.closed_reason = True, ""
        listing.save(update_fields=["is_open", "closed_reason"])
    return listing


@crypto.register_rotator("listing answers")
def listing_answers_rotate() -> crypto.Rotated:
    """Re-encrypt every listing's true answer under the current key (``manage.py rotate_encryption_keys``).

    One listing at a time, under its row lock (its purchases wait a moment); an answer
    already under the current key is only checked to open, so a second run changes nothing.
    An answer that does not open is counted as damaged and left as it is.
    """
    done = crypto.Rotated()
    stored = Listing.objects.filter(status=Listing.Status.READY)  # one prepared meanwhile is sealed under the new key
    for pk, blob in stored.order_by("pk").values_list("pk", "answer").iterator():
        try:
            stale = crypto.reseal(blob, context=crypto.answer_context(pk)) is not None
        except crypto.CryptoError:
            done.damaged += 1
            continue
        if not stale:
            done.unchanged += 1
            continue
        outcome = retrying(lambda pk=pk: _listing_answer_reseal(listing_id=pk), what="key rotation")
        setattr(done, outcome, getattr(done, outcome) + 1)
    return done


def _listing_answer_reseal(*, listing_id: int) -> str:
    with transaction.atomic():
        listing = listing_answer_lock(listing_id=listing_id)
        if listing is None:
            return "unchanged"  # deleted meanwhile
        try:
            new = crypto.reseal(listing.answer, context=listing.answer_context())
        except crypto.CryptoError:
            return "damaged"
        if new is None:
            return "unchanged"  # another run got here first
        listing.answer = new
        listing.save(update_fields=["answer"])
        return "resealed"
