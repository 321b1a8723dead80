"""Buying: one atomic step per purchase, and its refund if no release can be made.

Trading owns purchases and holdings and every change of their status: a
purchase is created and paid here, released here (the release side,
``releases.services``, only makes noise points and releases on the path it is
handed, locked), and failed and refunded here.

Locks follow the product's one order (``market.core.locks``): a purchase
on a trust-capped listing first locks its dataset's row (every trust tier's
cap is shared by the tier's buyers across the dataset's capped listings, so
such purchases take turns per dataset), any purchase share-locks its
listing, then locks the holding, then the accounts; a refund locks the
holding, the purchase, then the accounts; a release locks the path, the
holdings, then the purchases.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from market.accounts.roles import require_role
from market.catalog import accuracy, sizes
from market.catalog.locks import dataset_sales_lock, listing_share_lock
from market.catalog.models import Listing
from market.catalog.pricing import curve_of, price_increment
from market.catalog.risk import level_at_risk, stored_figures
from market.catalog.selectors import listing_plan
from market.core import visibility
from market.core.errors import Busy, Conflict, DomainError, InvalidInput, NotFound, PriceChanged, ServiceUnavailable
from market.core.locks import released, retrying
from market.core.outages import database_gone, unavailable
from market.core.writes import RowInsert, prep
from market.core.fields import LEVEL_QUANTUM, MONEY_QUANTUM
from market.core.levels import level_text, parse_level
from market.ledger.models import Account, Leg, Transfer
from market.ledger.services import accounts_for_payment, transfer_create
from market.trust.selectors import Cap, buyer_cap
from market.webhooks.events import emit as webhook_emit
from releases.locks import path_lock
from releases.models import Release
from releases.selectors import level_refusal
from releases.services import Order, ReleaseImpossible, releases_make

from .locks import holding_lock, holdings_lock, purchase_lock, purchases_lock
from .models import Holding, Purchase
from .release_queue import _release_flag_lower, purchase_queue, purchases_sweep  # noqa: F401 (re-exported)
from .waits import releases_announce

log = logging.getLogger(__name__)

QUEUE_DOWN_NOTE = (
    "Paid and recorded. The release queue cannot be reached right now: your release will be made as soon as "
    "it is back (a purchase that could not be sent is sent within seconds of its return). Nothing more will be charged."
)


@dataclass(frozen=True)
class Quote:
    listing_id: int
    epsilon: Decimal
    current_level: Decimal
    ceiling: Decimal
    cap: Decimal  # the most this buyer may buy here: the ceiling unless capped by trust
    cap_reason: str
    cap_bound: str  # on a trust-capped listing, what is bounded for the buyer's whole tier; else ""
    price: Decimal
    accuracy: list[dict]
    # per statistic the buyer gets: {"name", "kind", "error_bound", "assumes_records", ...}
    # (``market.catalog.accuracy.bounds_at``)
    statistics: list[dict] = field(default_factory=list)
    # the accuracy targets this level was chosen for (None: the buyer named the level)
    target: list[dict] | None = None
    # a plain sentence when this level's figures say next to nothing (``market.catalog.accuracy.warning``)
    warning: str | None = None


def _refuse_owner(listing: Listing, buyer) -> None:
    owner_id = getattr(listing, "dataset_owner_id", None) or listing.dataset.owner_id  # read with the lock, or loaded
    if owner_id == buyer.pk:
        raise InvalidInput("you own this listing: owners do not buy their own data")


def _refused(listing: Listing, buyer, current: Decimal, eps: Decimal) -> bool:
    """Whether :func:`_check_step` refuses the step (it is asked again to say why)."""
    try:
        _check_step(listing, buyer, current, eps)
    except DomainError:
        return True
    return False


def _check_step(listing: Listing, buyer, current: Decimal, eps: Decimal) -> Cap:
    """Refuse a step from ``current`` to ``eps`` that ``buyer`` may not take;
    return the buyer's cap on the listing (``market.trust.selectors.buyer_cap``)."""
    _refuse_owner(listing, buyer)
    if eps > listing.ceiling:
        if listing.size_level:
            raise InvalidInput(
                f"epsilon: {level_text(eps)} is above the highest level sold on this listing, {level_text(listing.ceiling)} (its ceiling "
                f"{level_text(listing.total_level)} less the {level_text(listing.size_level)} its size release took)",
                fields={"epsilon": [f"At most {level_text(listing.ceiling)} (the ceiling less the size release)."]},
            )
        raise InvalidInput(
            f"epsilon: {level_text(eps)} is above this listing's ceiling of {level_text(listing.ceiling)}",
            fields={"epsilon": [f"At most {level_text(listing.ceiling)} (the ceiling)."]},
        )
    cap = buyer_cap(listing=listing, buyer=buyer)
    if eps > cap.level:
        raise InvalidInput(
            f"epsilon: {level_text(eps)} is above your cap of {level_text(cap.level)} on this listing ({cap.reason})",
            fields={"epsilon": [f"At most {level_text(cap.level)} (your cap: {cap.reason})."]},
        )
    if eps <= current:
        raise InvalidInput(
            f"epsilon: you already hold level {level_text(current)}; buy a level above it",
            fields={"epsilon": [f"Must be above your current level {level_text(current)}."]},
        )
    # the mechanism's levels: a microdata listing's ladder; on the retired float path, no new noise is drawn
    refusal = level_refusal(listing=listing, level=eps)
    if refusal is not None:
        raise InvalidInput(f"epsilon: {refusal.message}", fields={"epsilon": [refusal.hint]})
    return cap


def purchase_quote(*, buyer, listing: Listing, epsilon=None, target=None, records: int | None = None) -> Quote:
    """What going up to a level would cost this buyer now. Writes nothing.

    The level is ``epsilon``, or, given ``target`` instead (a list of ``(name, bound)``: a statistic's
    name as the quote lists it, or None for every statistic, and the 95% error bound wanted), the
    cheapest level above the buyer's that meets every target (:func:`quote_level_for`). ``records``:
    the number of records assumed in a mean's cell where its bound depends on a private count
    (default ``market.catalog.accuracy.DEFAULT_RECORDS``); the quote says where it is assumed."""

    if (epsilon is None) == (target is None):
        raise InvalidInput("give either epsilon or target, not both",
                           fields={"target": ["Give either epsilon or target, not both."]})
    holding = visibility.holding(buyer, listing.pk)
    current = holding.purchased if holding else Decimal(0)
    if listing.release_mechanism.sells_records:
        curves = accuracy.microdata_curves(listing.microdata())
    else:
        plan = listing_plan(listing)
        size = sizes.release_of(listing)  # with a size release, a mean's bound is per cell and assumes nothing
        records = _records(plan, records)
        curves = accuracy.statistic_curves(plan, records=records, size=size)
    if target is not None:
        _refuse_owner(listing, buyer)
        target = _targets_named(curves, target)
        eps = quote_level_for(listing=listing, buyer=buyer, curves=curves, target=target, current=current)
    else:
        eps = parse_level(epsilon)
    # a visitor who is not signed in holds nothing and owns nothing: only the ceiling and the cap apply
    cap = _check_step(listing, buyer, current, eps)
    statistics = accuracy.bounds_at(curves, eps)
    return Quote(
        listing_id=listing.pk,
        epsilon=eps,
        current_level=current,
        ceiling=listing.total_level,  # the listing's total, its size release counted; cap: what may be bought
        cap=cap.level,
        cap_reason=cap.reason,
        cap_bound=cap.together,
        price=_step_price(listing, current, eps),
        accuracy=listing_accuracy(listing, eps),
        statistics=statistics,
        target=None if target is None else [{"name": name, "error_bound": bound} for name, bound in target],
        warning=accuracy.warning(statistics, eps),
    )


def _records(plan, records) -> int:
    """The buyer's assumed number of records per mean cell, checked, or the default."""
    if records is None:
        return accuracy.default_records(plan)
    most = min(accuracy.MAX_RECORDS, plan.neighbours.rows)
    if isinstance(records, bool) or not isinstance(records, int) or not 1 <= records <= most:
        why = "the dataset's public number of records" if plan.neighbours.public else "the most records it may hold"
        raise InvalidInput(f"records: give a whole number from 1 to {most:,} ({why})",
                           fields={"records": [f"A whole number from 1 to {most:,}."]})
    return records


def _targets_named(curves: list[dict], target) -> list:
    """The buyer's targets with each statistic named as its curve is (a release's label, or a name in
    another case, read as the statistic it names); an unknown name is refused with a few that are known."""
    out = []
    for name, bound in target or ():
        if name is None:
            out.append((None, bound))
            continue
        found = accuracy.target_name(curves, name)
        if found is None:
            known = "; ".join(accuracy.target_examples(curves)) or "none"
            raise InvalidInput(f"target: this listing has no statistic named {name!r} (names such as: {known})",
                               fields={"target": [f"No statistic named {name!r}. Names such as: {known}."]})
        out.append((found, bound))
    return out


def quote_level_for(*, listing: Listing, buyer, curves: list[dict], target, current: Decimal) -> Decimal:
    """The cheapest level in ``(current, cap]`` meeting every ``(name, bound)`` target (``name`` None:
    every statistic), rounded up to the level grid and, if that step would cost 0.00 credits, raised to
    the smallest paid step (bounds only fall as eps grows). A target that is unknown, repeated or not a
    positive bound, or that no level up to the cap meets, is refused naming the best bound at the cap."""
    names = {c["name"]: c for c in curves}
    if not target:
        raise InvalidInput("target: name at least one error bound", fields={"target": ["Name at least one error bound."]})
    seen = set()
    for name, bound in target:
        if name is not None and name not in names:
            known = "; ".join(names) or "none"
            raise InvalidInput(f"target: this listing has no statistic named {name!r} (it has: {known})",
                               fields={"target": [f"No statistic named {name!r}. Names: {known}."]})
        if name in seen:
            which = "every statistic" if name is None else repr(name)
            raise InvalidInput(f"target: {which} is given two targets", fields={"target": [f"One target for {which}."]})
        seen.add(name)
        if name is not None and names[name].get("too_few"):
            raise InvalidInput(
                f"target: {name}: {names[name]['note']}, so no level meets a target on it",
                fields={"target": [f"{name}: {names[name]['note']}; no level meets a target on it."]},
            )
        if not isinstance(bound, Decimal) or not bound.is_finite() or bound <= 0:
            raise InvalidInput(f"target: {bound} is not a positive error bound",
                               fields={"target": ["An error bound is a positive number, such as 0.5."]})
    found = buyer_cap(listing=listing, buyer=buyer)
    cap = min(found.level, listing.ceiling)
    if current >= cap and current == 0:  # a tier's room taken by others: nothing at all to search
        raise InvalidInput(f"target: nothing is sold to you on this listing: your cap is ε {level_text(cap)} "
                           f"({found.reason})",
                           fields={"target": [f"Nothing is sold to you here (your cap: {found.reason})."]})
    if current >= cap:
        raise InvalidInput(f"target: you already hold level {level_text(current)}, your highest on this listing",
                           fields={"target": [f"You hold your highest level, {level_text(current)}."]})
    if current > 0 and not accuracy.misses(curves, target, current):
        raise InvalidInput(f"target: the level you hold, {level_text(current)}, already meets every target",
                           fields={"target": [f"Your level {level_text(current)} already meets it."]})
    level = accuracy.cheapest_level(curves, target, above=current, cap=cap)
    if level is None:
        short = [f"{c['shown']}: ±{bound:,.4g} at best (target ±{level_text(t)})"
                 for c, t, bound in accuracy.misses(curves, target, cap)]
        raise InvalidInput(
            f"target: not reachable up to your cap of ε {level_text(cap)}: " + "; ".join(short),
            fields={"target": [f"Not reachable up to ε {level_text(cap)}: " + "; ".join(short) + "."]},
        )
    level = _smallest_paid(listing, current, level) or level
    # what the mechanism sells at or above it (a microdata listing: the lowest ladder level at or above it)
    return listing.release_mechanism.level_sold(level, ladder=lambda: listing.microdata().levels,
                                                ceiling=listing.ceiling)


def _step_price(listing: Listing, current: Decimal, eps: Decimal) -> Decimal:
    """P(eps) - P(current). A step that rounds to 0.00 credits is refused: every release is paid
    for and leaves a ledger record; the message names the smallest step that costs something."""
    price = price_increment(listing, current, eps)
    if price > 0:
        return price
    paid = _smallest_paid(listing, current, eps)
    if paid is None:
        raise InvalidInput(
            f"epsilon: every step above {level_text(current)} up to the ceiling costs 0.00 credits on this listing, "
            "and releases are never given away",
            fields={"epsilon": ["This listing sells nothing above your level."]},
        )
    raise InvalidInput(
        f"epsilon: the step from {level_text(current)} to {level_text(eps)} costs 0.00 credits; the smallest paid step goes up to {level_text(paid)}",
        fields={"epsilon": [f"At least {level_text(paid)}: smaller steps round to 0.00 credits."]},
    )


def _smallest_paid(listing: Listing, current: Decimal, eps: Decimal) -> Decimal | None:
    """None when the step from ``current`` to ``eps`` costs something; else the smallest level in
    (eps, ceiling] whose step does (None too when there is none: the caller's price check says so)."""
    curve = curve_of(listing)
    paid_from = curve.price(current) + MONEY_QUANTUM
    if curve.price(eps) >= paid_from:
        return None
    lo, hi = eps, listing.ceiling  # the smallest level in (lo, hi] priced at least paid_from
    if curve.price(hi) < paid_from:
        return None
    while hi - lo > LEVEL_QUANTUM:
        mid = (lo + (hi - lo) / 2).quantize(LEVEL_QUANTUM)
        if curve.price(mid) >= paid_from:
            hi = mid
        else:
            lo = mid
    return hi


def listing_accuracy(listing: Listing, eps: Decimal) -> list[dict]:
    """Per released value at level ``eps``: its noise scale and 95% error bound
    (for a vector listing, the radius that holds the whole point's error)."""

    return listing.release_mechanism.accuracy(eps, labels=listing.labels, scales=listing.noise_scales(eps),
                                              plan=lambda: listing_plan(listing), records=listing.microdata)


def _existing_for_key(buyer, key: str, listing_id, eps: Decimal) -> Purchase | None:
    return _same_purchase(Purchase.objects.filter(buyer=buyer, idempotency_key=key)[:1], listing_id, eps)


def _same_purchase(found: list, listing_id, eps: Decimal) -> Purchase | None:
    """The purchase made with an Idempotency-Key (a list of at most one), None if there is none;
    a key used for another purchase is a conflict."""
    found = next(iter(found), None)
    if found and (found.listing_id != int(listing_id) or found.level_to != eps):
        raise Conflict(
            "this Idempotency-Key was already used for a different purchase",
            fields={"idempotency_key": ["Use a new key for a new purchase."]},
        )
    return found


class PurchaseResult(NamedTuple):
    """What :func:`purchase_create` did: the purchase; whether this call created it (False: an
    idempotent repeat); whether its release task reached the broker (None: not known yet, the
    caller's own transaction has not committed; False: the sweeper will send it)."""

    purchase: Purchase
    created: bool
    queued: bool | None


IN_FLIGHT_MESSAGE = "your previous purchase on this listing is still being released; try again in a moment"


def purchase_create(
    *, buyer, listing_id, epsilon, idempotency_key: str | None = None, max_price=None
) -> PurchaseResult:
    """Buy ``listing`` up to level ``epsilon``: returns a :class:`PurchaseResult`.

    In one transaction: share-lock the listing (on a trust-capped listing, after
    locking its dataset's row: purchases on a dataset's capped listings take turns)
    and lock the buyer's holding (``market.core.locks``), check the level and the wallet, move
    P(eps) - P(held) from the buyer's wallet to the owner's earnings, raise
    the holding, record the purchase, and queue its release when the
    transaction commits. With an idempotency key, a repeat returns the first
    purchase and charges nothing. A lost lock race is run again; a step that
    cannot be taken now is :class:`~market.core.errors.Busy` (409).

    ``max_price`` (credits) is the most the buyer agreed to pay, usually the price they were
    quoted: the price computed under the locks is checked against it, and a higher one is
    :class:`~market.core.errors.PriceChanged` (409, with the new quote), nothing charged. A
    lower price is charged as it is (``max_price`` is a ceiling, not the price).
    """
    require_role(buyer, "buyer")
    eps = parse_level(epsilon)
    max_price = _parse_max_price(max_price)
    try:
        listing_id = int(listing_id)
    except (TypeError, ValueError):
        raise InvalidInput("listing: give the listing's id", fields={"listing": ["A listing id is required."]}) from None
    if idempotency_key is not None:
        idempotency_key = idempotency_key.strip()
        if not idempotency_key or len(idempotency_key) > 255:
            raise InvalidInput("Idempotency-Key must be 1 to 255 characters", fields={"idempotency_key": ["1 to 255 characters."]})
    # known before the INSERT: a commit whose answer was lost with the connection is looked up by it
    purchase_id = uuid.uuid4()
    try:
        purchase, created = _purchase_committed(
            lambda again: _purchase_take(buyer=buyer, listing_id=listing_id, eps=eps, idempotency_key=idempotency_key,
                                         max_price=max_price, purchase_id=purchase_id, again=again),
            purchase_id=purchase_id,
        )
    except _PriceRose as rose:
        # (a repeat whose step could be taken again is not read for its key before the price check)
        found = idempotency_key is not None and _existing_for_key(buyer, idempotency_key, listing_id, eps)
        if found:
            return PurchaseResult(found, False, None)
        raise _price_changed(buyer=buyer, listing_id=listing_id, eps=eps, max_price=max_price, price=rose.price) from None
    except IntegrityError as exc:
        found = Purchase.objects.filter(pk=purchase_id).first()
        if found is not None:  # a retry's INSERT met the first attempt's, committed after all
            return _created(found)
        # a concurrent request with the same key won the race: answer with its purchase
        if idempotency_key is not None:
            found = _existing_for_key(buyer, idempotency_key, listing_id, eps)
            if found:
                return PurchaseResult(found, False, None)
        if "one_purchase_in_flight_per_buyer_and_listing" in str(exc):
            raise Busy(IN_FLIGHT_MESSAGE) from exc
        raise
    if not created:
        return PurchaseResult(purchase, False, None)
    return _created(purchase)


def _created(purchase: Purchase) -> PurchaseResult:
    if transaction.get_connection().in_atomic_block:
        # inside the caller's transaction: the task goes when that commits (tasks are queued on commit)
        transaction.on_commit(lambda: purchase_queue(purchase_id=purchase.pk, listing_id=purchase.listing_id))
        return PurchaseResult(purchase, True, None)
    return PurchaseResult(purchase, True, purchase_queue(purchase_id=purchase.pk, listing_id=purchase.listing_id))


#: runs of a purchase's transaction when the database connection breaks (the first, and one more)
CONNECTION_ATTEMPTS = 2


def _purchase_committed(take, *, purchase_id) -> tuple[Purchase, bool]:
    """``take(again)`` (one purchase transaction; a lost lock race run again by ``retrying``),
    surviving a database connection that breaks under it.

    A broken connection leaves one question: did the COMMIT land? The purchase's id was chosen
    before its INSERT, so a fresh connection answers it: found, the purchase was made (and paid)
    and is answered as made; not found, nothing was charged and the transaction runs once more
    on the fresh connection, with the same id (a first attempt's commit that lands late makes the
    second's INSERT collide: never two charges). If it still cannot be made, or the database
    cannot say, the answer is 503 with ``Retry-After``."""
    for attempt in range(1, CONNECTION_ATTEMPTS + 1):
        try:
            return retrying(lambda: take(attempt > 1), what="purchase")
        except (OperationalError, InterfaceError) as exc:
            if not database_gone(exc) or connection.in_atomic_block:  # in a caller's transaction: theirs to handle
                raise
            log.warning("purchase %s: the database connection broke (attempt %d): %s", purchase_id, attempt, exc)
            found = _purchase_after_disconnect(purchase_id)
            if found is not None:
                log.warning("purchase %s had committed before its connection broke", purchase_id)
                return found, True
            cause = exc
    raise unavailable(cause)


#: seconds between look-ups of a purchase whose connection broke (a database restarting)
RECONNECT_DELAYS = (0, 0.2, 0.5)


def _purchase_after_disconnect(purchase_id) -> Purchase | None:
    """The purchase ``purchase_id`` read on a fresh connection, None if it was not committed;
    503 if the database cannot be reached to say."""
    for delay in RECONNECT_DELAYS:
        time.sleep(delay)
        connection.close()  # the broken one: the next query connects again
        try:
            return Purchase.objects.filter(pk=purchase_id).first()
        except (OperationalError, InterfaceError) as exc:
            failed = exc
    connection.close()
    log.error("purchase %s: the database could not be reached to tell whether it committed", purchase_id)
    raise ServiceUnavailable(
        "the connection to the database broke while your purchase was being recorded, and the database could "
        "not be reached to tell whether it was; repeat it with the same Idempotency-Key (never charged twice), "
        "or look at your purchases first",
        retry_after=5,
    ) from failed


def _parse_max_price(value) -> Decimal | None:
    """``max_price`` read exactly: None, or credits from 0 with at most 2 decimal places."""
    if value is None:
        return None
    try:
        amount = Decimal(value) if isinstance(value, (str, int, Decimal)) and not isinstance(value, bool) else None
    except (ArithmeticError, ValueError):
        amount = None
    if amount is None or not amount.is_finite() or amount < 0 or amount != amount.quantize(MONEY_QUANTUM):
        raise InvalidInput("max_price: give the most you agree to pay, in credits, e.g. \"12.50\"",
                           fields={"max_price": ["An amount of credits from 0, with at most 2 decimal places."]})
    return amount


class _PriceRose(Exception):
    """Raised inside a purchase's transaction (rolled back: nothing charged): the step costs
    ``price``, above the buyer's ``max_price``."""

    def __init__(self, price: Decimal):
        super().__init__(price)
        self.price = price


def _price_changed(*, buyer, listing_id: int, eps: Decimal, max_price: Decimal, price: Decimal) -> PriceChanged:
    """The refusal of a purchase whose price rose above ``max_price``, with the quote as it stands now
    (read after the rolled-back transaction, without its locks: the buyer confirms it with a new
    ``max_price``, checked again under the locks)."""
    listing = (Listing.objects.defer("answer").annotate(dataset_owner_id=F("dataset__owner_id"))
               .filter(pk=listing_id, is_open=True).first())
    if listing is None:
        raise NotFound("no such listing", fields={"listing": ["No open listing has this id."]})
    quote = purchase_quote(buyer=buyer, listing=listing, epsilon=eps)
    return PriceChanged(
        f"the price of this step rose to {price} credits, above the {max_price} credits you agreed to pay; "
        "nothing was charged: confirm the new quote to buy",
        fields={"max_price": [f"The price is now {quote.price} credits."]},
        quote=quote,
    )


class _DatasetLockNeeded(Exception):
    """The listing turned out to be trust-capped: its purchase must lock its dataset's row first."""

    def __init__(self, dataset_id: int):
        super().__init__(dataset_id)
        self.dataset_id = dataset_id


def _purchase_take(*, buyer, listing_id: int, eps: Decimal, idempotency_key: str | None,
                   max_price: Decimal | None = None, purchase_id, again: bool = False) -> tuple[Purchase, bool]:
    """One attempt at :func:`purchase_create`'s transaction: five statements on an uncapped
    listing with the buyer's holding and accounts already made, when the buyer's last purchase there
    is released and the step is one they may take (the listing share-locked, the holding locked, the
    purchase with the holding raised, the wallet locked, the transfer with its legs); a sixth, the
    read of the key's purchase and the purchase in flight, otherwise."""
    step = {"buyer": buyer, "listing_id": listing_id, "eps": eps, "idempotency_key": idempotency_key,
            "max_price": max_price, "purchase_id": purchase_id, "again": again}
    try:
        return _purchase_step(**step)
    except _DatasetLockNeeded as needed:  # rolled back: its listing lock is gone
        released(f"purchase on listing {listing_id}: run again under its dataset's lock")
        return _purchase_step(**step, dataset_id=needed.dataset_id)


def _purchase_step(*, buyer, listing_id, eps, idempotency_key, purchase_id, max_price=None, again: bool = False,
                   dataset_id: int | None = None) -> tuple[Purchase, bool]:
    """``again``: a run after a broken connection, which first looks for the purchase ``purchase_id``
    (an earlier run's commit that landed late). ``dataset_id``: the dataset to lock first (the
    listing's, when it is trust-capped)."""
    with transaction.atomic():
        # On a trust-capped listing everyone at a distance d or further shares one cap on the dataset
        # (market.trust.selectors._tier_room): its row lock (before the listing in the lock order) makes
        # every purchase on its capped listings take turns, whoever the buyers, so two cannot both pass
        # on the same room; each reads the levels the one before it committed.
        # Uncapped listings (most) skip it; a capped one found under its lock is run again with it.
        if dataset_id is not None:
            dataset_sales_lock(pk=dataset_id)
        listing = listing_share_lock(listing_id=listing_id)
        if listing is None:
            found = idempotency_key is not None and _existing_for_key(buyer, idempotency_key, listing_id, eps)
            if found:  # a repeat of a purchase on a listing closed since
                return found, False
            raise NotFound("no such listing", fields={"listing": ["No open listing has this id."]})
        if listing.trust_capped and listing.dataset_id != dataset_id:
            raise _DatasetLockNeeded(listing.dataset_id)
        holding = holding_lock(buyer_id=buyer.pk, listing_id=listing.pk, create=True)
        if again or holding.purchased != holding.released or _refused(listing, buyer, holding.purchased, eps):
            # one read for both: a purchase made with this key (committed while we waited for the
            # holding, or long ago: a repeat is answered with it, not refused), and a purchase of this
            # buyer still in flight on the listing. A step that is neither refused nor behind one in
            # flight (the holding released all it bought) skips it: a repeated key then meets the
            # unique constraint on the INSERT, and purchase_create answers with that key's purchase.
            clash = Q(listing_id=listing.pk, status__in=Purchase.IN_FLIGHT)
            if idempotency_key is not None:
                clash |= Q(idempotency_key=idempotency_key)
            if again:
                clash |= Q(pk=purchase_id)
            others = list(Purchase.objects.filter(clash, buyer=buyer))
            if again and (mine := next((p for p in others if p.pk == purchase_id), None)):
                return mine, True
            if idempotency_key is not None:
                found = _same_purchase([p for p in others if p.idempotency_key == idempotency_key], listing_id, eps)
                if found:
                    return found, False
            _check_step(listing, buyer, holding.purchased, eps)
            if any(p.in_flight and p.listing_id == listing.pk for p in others):
                raise Busy(IN_FLIGHT_MESSAGE)
        price = _step_price(listing, holding.purchased, eps)
        if max_price is not None and price > max_price:
            raise _PriceRose(price)  # the price under the locks is above what the buyer agreed to: roll back
        purchase = Purchase(
            id=purchase_id,
            buyer=buyer,
            listing=listing,
            level_from=holding.purchased,
            level_to=eps,
            price=price,
            idempotency_key=idempotency_key,
        )
        # what staff read in the admin; statements describe a purchase from its own fields
        memo = f"{listing.title[:160]}: ε {level_text(holding.purchased)} → {level_text(eps)}"
        _purchase_insert(purchase, holding)
        # the money last: the buyer's wallet locked (its balance is checked), the owner's earnings on
        # this listing (one account per listing: sales of other listings never wait for it) locked by
        # the balance update of the transfer's legs, the last write before the commit
        wallet, earnings = accounts_for_payment(
            debit=(buyer.pk, Account.Kind.WALLET, None), credit=(listing.dataset_owner_id, Account.Kind.EARNINGS, listing.pk)
        )
        transfer_create(
            kind=Transfer.Kind.PURCHASE, legs=[(wallet, -price), (earnings, price)], memo=memo, purchase=purchase,
            locked=True,
        )
    return purchase, True


#: the most purchases of one listing released in one transaction
RELEASE_BATCH = 200


def purchase_release(*, purchase_id, listing_id=None, rng=None) -> Release | None:
    """Release a paid purchase: the Celery task's work (idempotent). Returns its release, or None
    if it failed (refunded).

    The release is made in one transaction under the listing's path lock,
    together with every other purchase of that listing in flight at that
    moment, whatever their levels (group commit: one lock, one step per new
    level, one commit for the lot). Their own tasks then find them released
    and do nothing. A purchase whose release can never be made (damaged
    stored data) is refunded.
    """
    # first of all: purchases committed from now on send a task of their own (purchase_queue)
    _release_flag_lower(listing_id)
    # counted before the release transaction, so a crashed attempt still counts; one statement
    counted = _attempt_count(purchase_id=purchase_id)
    if counted is None and listing_id is None:  # released (by its own task or in a batch), failed, or unknown
        return Release.objects.filter(purchase_id=purchase_id).first()
    # a purchase already released still runs its listing's batch: purchases that found the flag
    # raised rely on this task
    listing_id = counted or listing_id
    try:
        made = retrying(lambda: _listing_release(listing_id=listing_id, rng=rng), what="release")
    except ReleaseImpossible:
        # the batch could not be made: this purchase alone, refunded if it cannot be made either
        try:
            made = retrying(lambda: _listing_release(listing_id=listing_id, rng=rng, only=purchase_id), what="release")
        except ReleaseImpossible as exc:
            purchase_fail(purchase_id=purchase_id, reason=f"{exc}; the price was refunded")
            return None
    return made.get(purchase_id) or Release.objects.filter(purchase_id=purchase_id).first()


def _attempt_count(*, purchase_id) -> int | None:
    """Mark an in-flight purchase computing and count the attempt; its listing's id, or None if
    the purchase is not in flight (``UPDATE ... RETURNING``: one statement)."""
    table = Purchase._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE "{table}" SET "status" = %s, "attempts" = "attempts" + 1, "unsent" = false, "updated_at" = %s '
            f'WHERE "id" = %s AND "status" IN (%s, %s) RETURNING "listing_id"',
            [Purchase.Status.COMPUTING, timezone.now(), Purchase._meta.pk.get_db_prep_value(purchase_id, connection),
             *Purchase.IN_FLIGHT],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def _listing_release(*, listing_id, rng, only=None) -> dict:
    """One attempt at a release transaction: every purchase of the listing in flight (or only
    ``only``), its locks in the product's order (path, holdings, purchases). Returns
    ``{purchase_id: release}``. Ten statements for one new level, whatever the batch's size (the
    tenth reads which of the release's webhook events anyone listens to; an eleventh notes those in
    the outbox)."""
    with transaction.atomic():
        path = path_lock(listing_id=listing_id)
        pending = Purchase.objects.filter(listing_id=listing_id, status__in=Purchase.IN_FLIGHT)
        if only is not None:
            pending = pending.filter(pk=only)
        buyers = pending.order_by("pk").values("buyer_id")[:RELEASE_BATCH]
        holdings = holdings_lock(listing_id=listing_id, buyer_ids=buyers)
        purchases = purchases_lock(pending=pending.filter(buyer_id__in=list(holdings)))
        if not purchases:
            return {}
        levels = {p.level_to for p in purchases}
        made = releases_make(
            path=path, listing=path.listing, rng=rng,
            orders=[Order(purchase_id=p.pk, buyer_id=p.buyer_id, level=p.level_to) for p in purchases],
            # the privacy figures shown with a release, computed once here rather than on every read
            figures={level: stored_figures(level_at_risk(path.listing, level)) for level in levels},
        )
        now = timezone.now()
        raised = []
        for p in purchases:
            holding = holdings[p.buyer_id]
            if p.level_to > holding.released:
                holding.released, holding.updated_at = p.level_to, now
                raised.append(holding)
        if raised:
            Holding.objects.bulk_update(raised, ["released", "updated_at"])
        ids = [p.pk for p in purchases]
        Purchase.objects.filter(pk__in=ids).update(status=Purchase.Status.RELEASED, updated_at=now)
        transaction.on_commit(lambda: releases_announce(purchase_ids=ids))
        # noted with the release (one INSERT): ``purchase.released`` to each buyer, ``listing.sold`` to
        # the owner (a sale counts once released: a purchase that fails is refunded)
        owner_id = path.listing.dataset.owner_id  # read with the path's lock (releases.locks.path_lock)
        webhook_emit(*[("purchase.released", p.pk, p.buyer_id) for p in purchases],
                     *[("listing.sold", p.pk, owner_id) for p in purchases])
    return made


_PURCHASE = RowInsert(Purchase)


def _purchase_insert(purchase: Purchase, holding: Holding) -> None:
    """Insert ``purchase`` and raise the (locked) ``holding`` to its level: on PostgreSQL one statement."""
    holding.purchased = purchase.level_to
    if not RowInsert.usable():
        purchase.save(force_insert=True)
        holding.save(update_fields=["purchased", "updated_at"])
        return
    holding.updated_at = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            f'WITH p AS ({_PURCHASE.sql}) UPDATE "trading_holding" SET "purchased" = %s, "updated_at" = %s WHERE "id" = %s',
            [*_PURCHASE.params(purchase), prep(Holding, "purchased", holding.purchased),
             prep(Holding, "updated_at", holding.updated_at), holding.pk],
        )
    _PURCHASE.saved(purchase)


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
        purchase = purchase_lock(purchase_id=purchase_id)
        if not purchase.in_flight:
            return purchase
        if purchase.price > 0:
            # back the way the payment went: from the earnings account it credited (one per listing;
            # an older one per owner) to the wallet it debited
            paid = list(
                Leg.objects.filter(transfer__purchase=purchase, transfer__kind=Transfer.Kind.PURCHASE).select_related("account")
            )
            earnings = next(leg.account for leg in paid if leg.amount > 0)
            wallet = next(leg.account for leg in paid if leg.amount < 0)
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
        transaction.on_commit(lambda: releases_announce(purchase_ids=[purchase.pk]))
        webhook_emit(("purchase.failed", purchase.pk, purchase.buyer_id))
        log.warning("purchase %s failed and was refunded: %s", purchase.pk, reason)
        return purchase
