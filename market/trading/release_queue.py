"""Getting a paid purchase to a release task: one waiting task per listing (its flag in Redis), a
purchase the broker did not take noted for the sweeper, and the sweeper that sends what was lost.

``market.trading.services`` re-exports these: a purchase's commit calls :func:`purchase_queue`.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from market.core import queueing
from market.core.cache import Unavailable, shared

from .models import Purchase

log = logging.getLogger("market.trading.services")


def purchase_queue(*, purchase_id, listing_id=None) -> bool:
    """Make sure a release task will serve the purchase (called once its transaction has committed).

    With ``listing_id`` and a shared cache (Redis), a task is sent only if
    none is waiting for that listing yet: a task releases every purchase of
    its listing in flight when it starts (group commit), so one waiting task
    serves them all. The task lowers its listing's flag before it reads the
    purchases in flight, so a purchase that finds the flag raised is seen by
    that task; the flag lapses after :data:`RELEASE_FLAG_TTL` seconds in case
    a task is lost (and the sweeper sends any purchase left in flight).
    Without the shared flag (no Redis, or Redis unavailable) each purchase
    sends its own task.

    If the broker cannot be reached the purchase stays queued, charged, and
    the sweeper sends it again later: it is never lost. Never raises: the
    purchase has committed, and its answer must not be an error. While the
    broker's Redis is unavailable (``market.core.cache``: the flag could not be
    raised) the task is not tried either.
    """
    if listing_id is not None:
        try:
            if not shared(lambda client: client.set(_release_flag(listing_id), 1, ex=RELEASE_FLAG_TTL, nx=True)):
                return True  # a task for this listing has not started yet: it will serve this purchase
        except Unavailable:
            if _broker_is_the_cache():  # that Redis is the broker: it cannot take the task either now
                log.warning("Redis is unavailable: the release of purchase %s is left to the sweeper", purchase_id)
                return _unsent(purchase_id)
            # no shared flag: this purchase sends its own task
    try:
        queueing.task("trading.release_purchase").delay(str(purchase_id), listing_id)
        return True
    except Exception as exc:
        _release_flag_lower(listing_id)
        log.warning("could not queue the release of purchase %s (%s); the sweeper will retry", purchase_id, exc)
        return _unsent(purchase_id)


def _unsent(purchase_id) -> bool:
    """Note on the purchase that its task did not reach the broker, so that the next sweep sends it
    at once (not after ``RELEASE_SWEEP_AFTER``). False (not queued); never raises: without the
    database too, the purchase is found by the sweeper's older path."""
    try:
        with transaction.atomic():  # a savepoint inside a caller's transaction: a failure here is not theirs
            Purchase.objects.filter(pk=purchase_id, status__in=Purchase.IN_FLIGHT, unsent=False).update(unsent=True)
    except DatabaseError as exc:
        log.warning("could not note purchase %s as unsent (%s); the sweeper finds it later", purchase_id, exc)
    return False


def _broker_is_the_cache() -> bool:
    return bool(settings.REDIS_URL) and settings.CELERY_BROKER_URL == settings.REDIS_URL


#: seconds a listing's "a release task is waiting" flag lasts at most
RELEASE_FLAG_TTL = 10


def _release_flag(listing_id) -> str:
    return f"gradual:release-queued:{listing_id}"


def _release_flag_lower(listing_id) -> None:
    if listing_id is not None:
        try:
            shared(lambda client: client.delete(_release_flag(listing_id)))
        except Unavailable:  # the flag lapses by itself
            log.info("could not lower the release flag of listing %s (it lapses by itself)", listing_id)


def purchases_sweep(*, older_than=None) -> int:
    """Send the release of every purchase in flight whose task did not reach the broker (``unsent``,
    at once) or was lost (in flight, untouched for ``older_than``: ``RELEASE_SWEEP_AFTER``
    seconds), oldest first, at most ``RELEASE_SWEEP_BATCH`` (the next sweep takes the rest). One
    task per listing (``purchase_queue``'s flag: a task releases all of its listing's purchases in
    flight), so a broker coming back after an outage is not met by one task per purchase. The
    purchases sent are marked so (not unsent, touched): a task lost again is sent again after
    ``RELEASE_SWEEP_AFTER``, not by every sweep. Returns how many were sent."""
    from datetime import timedelta

    age = older_than if older_than is not None else timedelta(seconds=settings.RELEASE_SWEEP_AFTER)
    due = (
        Purchase.objects.filter(status__in=Purchase.IN_FLIGHT)
        .filter(Q(unsent=True) | Q(updated_at__lt=timezone.now() - age))
        .order_by("updated_at").values_list("pk", "listing_id")[: settings.RELEASE_SWEEP_BATCH]
    )
    sent = []
    for purchase_id, listing_id in due:
        if not purchase_queue(purchase_id=purchase_id, listing_id=listing_id):
            break  # the broker cannot be reached: the next sweep tries again
        sent.append(purchase_id)
    if sent:
        Purchase.objects.filter(pk__in=sent, status__in=Purchase.IN_FLIGHT).update(unsent=False, updated_at=timezone.now())
    return len(sent)
