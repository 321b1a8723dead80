"""Buying: one atomic step per purchase, and its refund if no release can be made.

Locks follow the product's one order (``market.core.locks``): a purchase
on a trust-capped listing first locks the buyer's user row (their levels on
a dataset's capped listings share one cap), any purchase share-locks its listing, then locks the holding, then the accounts; a refund
locks the holding, the purchase, then the accounts; the release task locks
the path, the holding, then the purchase.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction

from market.accounts.locks import user_lock
from market.accounts.roles import require_role
from market.catalog.locks import listing_share_lock
from market.catalog.models import Listing
from market.catalog.pricing import curve_of, price_increment
from market.core.errors import Busy, Conflict, InvalidInput, NotFound
from market.core.locks import retrying
from market.core.fields import LEVEL_QUANTUM, MONEY_QUANTUM
from market.core.levels import parse_level
from market.ledger.models import Account, Transfer
from market.ledger.services import account_get, transfer_create
from market.trust.selectors import Cap, buyer_cap

from .locks import holding_lock, purchase_lock
from .models import Holding, Purchase

log = logging.getLogger(__name__)

QUEUE_DOWN_NOTE = (
    "Paid and recorded. The release queue cannot be reached right now: your release will be made as soon as "
    "it is back (pending purchases are sent again every minute). Nothing more will be charged."
)


@dataclass(frozen=True)
class Quote:
    listing_id: int
    epsilon: Decimal
    current_level: Decimal
    ceiling: Decimal
    cap: Decimal  # the most this buyer may buy here: the ceiling unless capped by trust
    cap_reason: str
    price: Decimal
    accuracy: list[dict]


def _check_step(listing: Listing, buyer, current: Decimal, eps: Decimal) -> Cap:
    """Refuse a step from ``current`` to ``eps`` that ``buyer`` may not take;
    return the buyer's cap on the listing (``market.trust.selectors.buyer_cap``)."""
    if listing.dataset.owner_id == buyer.pk:
        raise InvalidInput("you own this listing: owners do not buy their own data")
    if eps > listing.ceiling:
        raise InvalidInput(
            f"epsilon: {eps} is above this listing's ceiling of {listing.ceiling}",
            fields={"epsilon": [f"At most {listing.ceiling} (the ceiling)."]},
        )
    cap = buyer_cap(listing=listing, buyer=buyer)
    if eps > cap.level:
        raise InvalidInput(
            f"epsilon: {eps} is above your cap of {cap.level} on this listing ({cap.reason})",
            fields={"epsilon": [f"At most {cap.level} (your cap: {cap.reason})."]},
        )
    if eps <= current:
        raise InvalidInput(
            f"epsilon: you already hold level {current}; buy a level above it",
            fields={"epsilon": [f"Must be above your current level {current}."]},
        )
    return cap


def purchase_quote(*, buyer, listing: Listing, epsilon) -> Quote:
    """What going up to ``epsilon`` would cost this buyer now. Writes nothing."""
    eps = parse_level(epsilon)
    holding = Holding.objects.filter(buyer=buyer, listing=listing).first() if buyer.is_authenticated else None
    current = holding.purchased if holding else Decimal(0)
    # a visitor who is not signed in holds nothing and owns nothing: only the ceiling and the cap apply
    cap = _check_step(listing, buyer, current, eps)
    return Quote(
        listing_id=listing.pk,
        epsilon=eps,
        current_level=current,
        ceiling=listing.ceiling,
        cap=cap.level,
        cap_reason=cap.reason,
        price=_step_price(listing, current, eps),
        accuracy=listing_accuracy(listing, eps),
    )


def _step_price(listing: Listing, current: Decimal, eps: Decimal) -> Decimal:
    """P(eps) - P(current). A step that rounds to 0.00 credits is refused: every release is paid
    for and leaves a ledger record; the message names the smallest step that costs something."""
    price = price_increment(listing, current, eps)
    if price > 0:
        return price
    curve = curve_of(listing)
    paid_from = curve.price(current) + MONEY_QUANTUM
    lo, hi = eps, listing.ceiling  # the smallest level in (lo, hi] priced at least paid_from
    if curve.price(hi) < paid_from:
        raise InvalidInput(
            f"epsilon: every step above {current} up to the ceiling costs 0.00 credits on this listing, "
            "and releases are never given away",
            fields={"epsilon": ["This listing sells nothing above your level."]},
        )
    while hi - lo > LEVEL_QUANTUM:
        mid = (lo + (hi - lo) / 2).quantize(LEVEL_QUANTUM)
        if curve.price(mid) >= paid_from:
            hi = mid
        else:
            lo = mid
    raise InvalidInput(
        f"epsilon: the step from {current} to {eps} costs 0.00 credits; the smallest paid step goes up to {hi}",
        fields={"epsilon": [f"At least {hi}: smaller steps round to 0.00 credits."]},
    )


def listing_accuracy(listing: Listing, eps: Decimal) -> list[dict]:
    """Per released value at level ``eps``: its noise scale and 95% error bound
    (for a vector listing, the radius that holds the whole point's error)."""
    from market.catalog.selectors import listing_plan
    from market.catalog.statistics import l2_error_radius

    scales = listing.noise_scales(eps)
    plan = listing_plan(listing)
    return [
        {
            "label": label,
            "noise_scale": float(b),
            "error_bound": l2_error_radius(len(scales), float(b)) if plan.norm == "l2" else plan.bound(i, eps),
        }
        for i, (label, b) in enumerate(zip(listing.labels, scales))
    ]


def _existing_for_key(buyer, key: str, listing_id, eps: Decimal) -> Purchase | None:
    found = Purchase.objects.filter(buyer=buyer, idempotency_key=key).first()
    if found and (found.listing_id != int(listing_id) or found.level_to != eps):
        raise Conflict(
            "this Idempotency-Key was already used for a different purchase",
            fields={"idempotency_key": ["Use a new key for a new purchase."]},
        )
    return found


IN_FLIGHT_MESSAGE = "your previous purchase on this listing is still being released; try again in a moment"


def purchase_create(*, buyer, listing_id, epsilon, idempotency_key: str | None = None) -> tuple[Purchase, bool]:
    """Buy ``listing`` up to level ``epsilon``: returns ``(purchase, created)``.

    In one transaction: share-lock the listing and lock the buyer's holding
    (``market.core.locks``), check the level and the wallet, move
    P(eps) - P(held) from the buyer's wallet to the owner's earnings, raise
    the holding, record the purchase, and queue its release when the
    transaction commits. With an idempotency key, a repeat returns the first
    purchase and charges nothing. A lost lock race is run again; a step that
    cannot be taken now is :class:`~market.core.errors.Busy` (409).
    """
    require_role(buyer, "buyer")
    eps = parse_level(epsilon)
    try:
        listing_id = int(listing_id)
    except (TypeError, ValueError):
        raise InvalidInput("listing: give the listing's id", fields={"listing": ["A listing id is required."]}) from None
    if idempotency_key is not None:
        idempotency_key = idempotency_key.strip()
        if not idempotency_key or len(idempotency_key) > 255:
            raise InvalidInput("Idempotency-Key must be 1 to 255 characters", fields={"idempotency_key": ["1 to 255 characters."]})
        found = _existing_for_key(buyer, idempotency_key, listing_id, eps)
        if found:
            return found, False
    try:
        return retrying(
            lambda: _purchase_take(buyer=buyer, listing_id=listing_id, eps=eps, idempotency_key=idempotency_key),
            what="purchase",
        )
    except IntegrityError as exc:
        # a concurrent request with the same key won the race: answer with its purchase
        if idempotency_key is not None:
            found = _existing_for_key(buyer, idempotency_key, listing_id, eps)
            if found:
                return found, False
        if "one_purchase_in_flight_per_buyer_and_listing" in str(exc):
            raise Busy(IN_FLIGHT_MESSAGE) from exc
        raise


def _purchase_take(*, buyer, listing_id: int, eps: Decimal, idempotency_key: str | None) -> tuple[Purchase, bool]:
    """One attempt at :func:`purchase_create`'s transaction."""
    from releases.services import release_queue

    with transaction.atomic():
        # On a trust-capped listing the buyer's levels on the dataset's capped listings add up to at most
        # their cap on the dataset: the buyer's row lock (first in the lock order) makes their purchases
        # on one dataset take turns, so two on sibling listings cannot both pass on the same room.
        capped = Listing.objects.filter(pk=listing_id).values_list("trust_capped", flat=True).first()
        if capped:
            user_lock(user=buyer)
        listing = listing_share_lock(listing_id=listing_id)
        if listing is None:
            raise NotFound("no such listing", fields={"listing": ["No open listing has this id."]})
        if listing.trust_capped and not capped:
            # capped by its owner since the first read: not under the buyer's lock, so run again
            raise Busy("this listing's trust cap changed while you bought; nothing was changed, try again")
        holding = holding_lock(buyer_id=buyer.pk, listing_id=listing.pk, create=True)
        if idempotency_key is not None:
            # a request with this key may have committed while we waited for the holding
            found = _existing_for_key(buyer, idempotency_key, listing_id, eps)
            if found:
                return found, False
        _check_step(listing, buyer, holding.purchased, eps)
        if Purchase.objects.filter(buyer=buyer, listing=listing, status__in=Purchase.IN_FLIGHT).exists():
            raise Busy(IN_FLIGHT_MESSAGE)
        price = _step_price(listing, holding.purchased, eps)
        purchase = Purchase.objects.create(
            buyer=buyer,
            listing=listing,
            level_from=holding.purchased,
            level_to=eps,
            price=price,
            idempotency_key=idempotency_key,
        )
        wallet = account_get(user=buyer, kind=Account.Kind.WALLET)
        earnings = account_get(user_id=listing.dataset.owner_id, kind=Account.Kind.EARNINGS)
        transfer_create(
            kind=Transfer.Kind.PURCHASE,
            legs=[(wallet, -price), (earnings, price)],
            memo=f"{listing.title}: eps {holding.purchased} -> {eps}",
            purchase=purchase,
        )
        holding.purchased = eps
        holding.save(update_fields=["purchased", "updated_at"])
        # queued once committed; `purchase.queued` says whether the broker took it
        # (if not, the purchase stays queued and the sweeper sends it later)
        transaction.on_commit(lambda: setattr(purchase, "queued", release_queue(purchase_id=purchase.pk)))
    return purchase, True


def purchase_fail(*, purchase_id, reason: str) -> Purchase | None:
    """Mark an in-flight purchase failed and give everything back.

    The price returns by a compensating transfer (the ledger is append-only)
    and the holding drops back to the level held before. Idempotent: a
    purchase that is no longer in flight is left as it is.
    """
    with transaction.atomic():
        found = Purchase.objects.filter(pk=purchase_id).values("buyer_id", "listing_id").first()
        if found is None:
            return None
        holding = holding_lock(buyer_id=found["buyer_id"], listing_id=found["listing_id"])
        purchase = purchase_lock(purchase_id=purchase_id, with_listing=True)
        if not purchase.in_flight:
            return purchase
        if purchase.price > 0:
            wallet = account_get(user_id=purchase.buyer_id, kind=Account.Kind.WALLET)
            earnings = account_get(user_id=purchase.listing.dataset.owner_id, kind=Account.Kind.EARNINGS)
            transfer_create(
                kind=Transfer.Kind.REFUND,
                legs=[(earnings, -purchase.price), (wallet, purchase.price)],
                memo=f"refund: {reason}"[:200],
                purchase=purchase,
            )
        # one purchase in flight per (buyer, listing): the holding still ends at this level
        if holding.purchased == purchase.level_to:
            holding.purchased = purchase.level_from
            holding.save(update_fields=["purchased", "updated_at"])
        purchase.status = Purchase.Status.FAILED
        purchase.failure_reason = reason[:500]
        purchase.save(update_fields=["status", "failure_reason", "updated_at"])
        log.warning("purchase %s failed and was refunded: %s", purchase.pk, reason)
        return purchase
