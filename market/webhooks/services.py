"""Webhook writes: endpoints (made, changed, deleted, their secret rolled), events recorded, and
deliveries claimed, sent, retried and replayed.

A delivery is sent outside any transaction: it is *claimed* under its row lock
(one attempt counted, its next attempt pushed past the time a send can take, so
a sweeper or a second task leaves it alone), sent, then its outcome recorded under
the lock again. A 2xx answer succeeds; anything else is tried again after
:data:`RETRY_DELAYS` (with jitter), about a day in all, then the delivery fails.
A delivery that succeeded is never sent again unless its user replays it.
"""

from __future__ import annotations

import json
import logging
import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from market.core import crypto, queueing, visibility
from market.core.errors import InvalidInput, NotFound

from . import events as event_types
from .ids import new_event_id
from .ids import new_secret
from .locks import delivery_lock, endpoint_lock, endpoint_lock_any
from .models import Attempt, Delivery, Endpoint, Event, Outbox, secret_context
from .signing import HEADER, header
from .transport import Outcome
from .transport import RefusedAddress, check_url, post, resolve

log = logging.getLogger(__name__)

#: seconds to wait after the 1st, 2nd, ... failed attempt (1 m, 5 m, 30 m, 1 h, 2 h, 4 h, 8 h, 8 h:
#: about a day in all, 9 attempts), then the delivery has failed
RETRY_DELAYS = (60, 5 * 60, 30 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 8 * 3600)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
#: a claimed delivery is left alone this long (more than a send can take)
CLAIM_LEASE = timedelta(seconds=60)
MAX_ENDPOINTS = 20
URL_MAX = 2000
DESCRIPTION_MAX = 200
#: the most deliveries (or outbox notes) a sweep takes
SWEEP_BATCH = 500
#: an outbox note this old has lost its task (which runs within moments of its commit)
OUTBOX_GRACE = timedelta(minutes=2)


def _now():
    """The time (one place, so tests can move it)."""
    return timezone.now()


def retry_delay(attempts: int) -> timedelta:
    """The wait after ``attempts`` failed attempts, with ±10% jitter (so receivers back from an
    outage are not hit by every delivery at once)."""
    base = RETRY_DELAYS[min(attempts, len(RETRY_DELAYS)) - 1]
    return timedelta(seconds=base * (0.9 + secrets.randbelow(2001) / 10000))  # 0.9 to 1.1


# --- endpoints


def _clean_url(url) -> str:
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("url: give the address to send events to", fields={"url": ["An http:// or https:// address is required."]})
    url = url.strip()
    if len(url) > URL_MAX:
        raise InvalidInput("url: too long", fields={"url": [f"At most {URL_MAX} characters."]})
    try:
        check_url(url)
        resolve(url)
    except RefusedAddress as exc:
        raise InvalidInput(f"url: {exc}", fields={"url": [f"{str(exc)[0].upper()}{str(exc)[1:]}."]}) from None
    return url


def _clean_events(user, events) -> list[str]:
    allowed = event_types.allowed_events(user)
    if not isinstance(events, (list, tuple)) or not events or not all(isinstance(e, str) for e in events):
        raise InvalidInput("events: choose at least one event", fields={"events": [f"Choose one or more of: {', '.join(allowed) or 'none (add a role first)'}."]})
    unknown = [e for e in events if e not in allowed]
    if unknown:
        raise InvalidInput(
            f"events: {', '.join(unknown)} cannot be chosen",
            fields={"events": [f"Not an event your roles receive: {', '.join(unknown)}. Choose from: {', '.join(allowed) or 'none'}."]},
        )
    return list(dict.fromkeys(events))


def _clean_description(description) -> str:
    if description is None:
        return ""
    if not isinstance(description, str) or len(description) > DESCRIPTION_MAX:
        raise InvalidInput("description: too long", fields={"description": [f"Text of at most {DESCRIPTION_MAX} characters."]})
    return description.strip()


def endpoint_create(*, user, url, events, description: str = "") -> tuple[Endpoint, str]:
    """A new endpoint of ``user``'s and its signing secret (shown once: only its sealed form is kept)."""
    url = _clean_url(url)
    events = _clean_events(user, events)
    description = _clean_description(description)
    with transaction.atomic():
        if visibility.webhook_endpoints(user).count() >= MAX_ENDPOINTS:
            raise InvalidInput(f"at most {MAX_ENDPOINTS} webhook endpoints per account: delete one first")
        endpoint = Endpoint(owner=user, url=url, events=events, description=description)
        secret = new_secret()
        endpoint.set_secret(secret)
        endpoint.save()
    return endpoint, secret


def _owned(user, endpoint_id) -> Endpoint:
    endpoint = endpoint_lock(owner_id=user.pk, endpoint_id=str(endpoint_id)) if user.is_authenticated else None
    if endpoint is None:
        raise NotFound("no such webhook endpoint")
    return endpoint


def endpoint_update(*, user, endpoint_id, url=None, events=None, description=None, is_active=None) -> Endpoint:
    """Change an endpoint's address, events, description or whether it is on (what is given)."""
    changes = {}
    if url is not None:
        changes["url"] = _clean_url(url)
    if events is not None:
        changes["events"] = _clean_events(user, events)
    if description is not None:
        changes["description"] = _clean_description(description)
    if is_active is not None:
        if not isinstance(is_active, bool):
            raise InvalidInput("is_active: true or false", fields={"is_active": ["true or false."]})
        changes["is_active"] = is_active
    with transaction.atomic():
        endpoint = _owned(user, endpoint_id)
        for name, value in changes.items():
            setattr(endpoint, name, value)
        endpoint.save()
    return endpoint


def endpoint_delete(*, user, endpoint_id) -> None:
    """Delete an endpoint with its deliveries (nothing more is sent to it)."""
    with transaction.atomic():
        _owned(user, endpoint_id).delete()


def endpoint_roll_secret(*, user, endpoint_id) -> tuple[Endpoint, str]:
    """A new signing secret (shown once); the old one stops signing at once."""
    with transaction.atomic():
        endpoint = _owned(user, endpoint_id)
        secret = new_secret()
        endpoint.set_secret(secret)
        endpoint.save(update_fields=["secret", "updated_at"])
    return endpoint, secret


def endpoint_ping(*, user, endpoint_id) -> Delivery:
    """Send a ``ping`` event to one endpoint (to check it receives and verifies)."""

    with transaction.atomic():
        endpoint = _owned(user, endpoint_id)
        event_id = new_event_id()
        event = Event.objects.create(
            id=event_id, type=event_types.PING, object_id=event_id, user=user,
            payload=_envelope(event_id, event_types.PING, {"object": "ping", "endpoint": endpoint.pk}),
        )
        delivery = Delivery.objects.create(event=event, endpoint=endpoint, next_attempt_at=_now())
        _queue_on_commit([delivery.pk])
    return delivery


# --- events


def _envelope(event_id: str, kind: str, data: dict) -> dict:
    return {"id": event_id, "type": kind, "created": _now().isoformat(), "data": data}


def _subscribed(user_id: int, kind: str) -> list[Endpoint]:
    return [e for e in Endpoint.objects.filter(owner_id=user_id, is_active=True) if kind in e.events]


def events_record(*, items) -> list[str]:
    """Record ``[(type, object_id, user_id), ...]`` (the task's body; a re-run makes nothing twice):
    each event, rendered by its registered builder as the API would show it to its user, and one
    delivery per endpoint of that user subscribed to it, queued; then the events' notes in the
    outbox are cleared. An event nobody listens to is not recorded. Returns the new deliveries' ids."""
    from django.contrib.auth import get_user_model

    made: list[str] = []
    items = [(kind, str(object_id), int(user_id)) for kind, object_id, user_id in items]
    listened = set(event_types.listened(items))  # one read of the users' endpoints, as emit does
    for kind, object_id, user_id in items:
        if (kind, object_id, user_id) not in listened:
            continue
        builder = event_types.payload_builder(kind)
        user = get_user_model().objects.filter(pk=user_id).first()
        if builder is None or user is None:
            log.warning("webhook event %s of user %s: no payload builder or no user; not sent", kind, user_id)
            continue
        event = Event.objects.filter(type=kind, object_id=str(object_id), user_id=user_id).first()
        if event is None:
            data = builder(object_id=str(object_id), user=user)
            if data is None:  # not something this user can see
                continue

            event_id = new_event_id()
            try:
                with transaction.atomic():
                    event = Event.objects.create(
                        id=event_id, type=kind, object_id=str(object_id), user=user,
                        payload=_envelope(event_id, kind, data),
                    )
            except IntegrityError:  # recorded by a concurrent run
                event = Event.objects.get(type=kind, object_id=str(object_id), user_id=user_id)
        made += _fan_out(event)
    _outbox_clear(items)
    return made


def _outbox_clear(items) -> None:
    """Delete the outbox notes of ``items`` (recorded now, or not wanted by anyone)."""
    notes = Q()
    for kind, object_id, user_id in items:
        notes |= Q(type=kind, object_id=str(object_id), user_id=int(user_id))
    if notes:
        Outbox.objects.filter(notes).delete()


def outbox_sweep(*, now=None) -> int:
    """Record the events noted in the outbox more than :data:`OUTBOX_GRACE` ago: their task was
    lost (the broker was down when their change committed, or a worker died). Returns how many."""
    now = now or _now()
    notes = Outbox.objects.filter(created_at__lte=now - OUTBOX_GRACE).order_by("created_at")[:SWEEP_BATCH]
    items = list(dict.fromkeys(notes.values_list("type", "object_id", "user_id")))
    for item in items:  # one at a time: a note that cannot be recorded never holds up the others
        try:
            events_record(items=[item])
        except Exception:
            log.exception("the webhook event %s could not be recorded; tried again at the next sweep", item)
    return len(items)


def _fan_out(event: Event) -> list[str]:
    """One delivery of ``event`` per subscribed endpoint of its user (those already made are kept)."""
    with transaction.atomic():
        endpoints = _subscribed(event.user_id, event.type)
        have = set(Delivery.objects.filter(event=event).values_list("endpoint_id", flat=True))
        now = _now()
        new = [Delivery(event=event, endpoint=e, next_attempt_at=now) for e in endpoints if e.pk not in have]
        Delivery.objects.bulk_create(new, ignore_conflicts=True)
        ids = [d.pk for d in new]
        _queue_on_commit(ids)
    return ids


# --- deliveries


def _queue_on_commit(delivery_ids: list[str]) -> None:
    if delivery_ids:
        transaction.on_commit(lambda: deliveries_queue(delivery_ids=delivery_ids))


def deliveries_queue(*, delivery_ids) -> int:
    """Queue one task per delivery on the webhooks queue; one that cannot be queued now is sent
    by the sweeper later."""
    queued = 0
    for delivery_id in delivery_ids:
        try:
            queueing.task("webhooks.delivery_attempt").delay(str(delivery_id))
            queued += 1
        except Exception:
            log.exception("could not queue webhook delivery %s; the sweeper will", delivery_id)
    return queued


def body_of(event: Event) -> bytes:
    return json.dumps(event.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _claim(delivery_id) -> Delivery | None:
    with transaction.atomic():
        delivery = delivery_lock(delivery_id=delivery_id)
        now = _now()
        if delivery is None or delivery.status != Delivery.Status.PENDING:
            return None  # gone, already delivered, or given up
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return None  # not due, or being sent by another run right now (leased)
        if not delivery.endpoint.is_active:
            delivery.status, delivery.last_error, delivery.next_attempt_at = (
                Delivery.Status.FAILED, "the endpoint was turned off", None)
            delivery.save(update_fields=["status", "last_error", "next_attempt_at", "updated_at"])
            return None
        delivery.attempts += 1
        delivery.next_attempt_at = now + CLAIM_LEASE
        delivery.save(update_fields=["attempts", "next_attempt_at", "updated_at"])
    return delivery


def delivery_attempt(*, delivery_id) -> Delivery | None:
    """Send a due pending delivery once and record how it went (the task's body). Idempotent: a
    delivery that is not pending or not due is left alone. Returns it, or None if not sent."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    event, endpoint = delivery.event, delivery.endpoint
    body = body_of(event)
    try:
        secret = endpoint.signing_secret()
    except Exception:
        log.exception("webhook endpoint %s: its secret cannot be opened", endpoint.pk)
        outcome = None
    else:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Gradual-Webhooks/1",
            "Gradual-Event-Id": event.pk,
            "Gradual-Event-Type": event.type,
            "Gradual-Delivery-Id": delivery.pk,
            "Gradual-Attempt": str(delivery.attempts),
            HEADER: header(secret, body),
        }
        outcome = post(endpoint.url, body, headers)
    return _record(delivery_id=delivery.pk, number=delivery.attempts, outcome=outcome)


def _record(*, delivery_id, number: int, outcome) -> Delivery | None:
    if outcome is None:
        outcome = Outcome(None, "", 0, "the endpoint's secret cannot be opened (roll it)")
    now = _now()
    with transaction.atomic():
        delivery = delivery_lock(delivery_id=delivery_id)
        if delivery is None:  # its endpoint was deleted meanwhile
            return None
        Attempt.objects.create(
            delivery=delivery, number=number, at=now, succeeded=outcome.succeeded, status_code=outcome.status_code,
            response=outcome.response, duration_ms=outcome.duration_ms, error=outcome.error[:500],
        )
        delivery.last_status_code = outcome.status_code
        delivery.last_response = outcome.response
        delivery.last_duration_ms = outcome.duration_ms
        error = outcome.error or ("" if outcome.succeeded else f"answered {outcome.status_code}")
        delivery.last_error = error[:500]
        if outcome.succeeded:
            delivery.status, delivery.next_attempt_at = Delivery.Status.SUCCEEDED, None
        elif delivery.attempts >= MAX_ATTEMPTS:
            delivery.status, delivery.next_attempt_at = Delivery.Status.FAILED, None
        else:
            delivery.status = Delivery.Status.PENDING
            delivery.next_attempt_at = now + retry_delay(delivery.attempts)
        delivery.save()
    if not outcome.succeeded:
        log.info("webhook delivery %s attempt %d: %s", delivery_id, number, delivery.last_error)
    return delivery


def delivery_replay(*, user, delivery_id) -> Delivery:
    """Send one of ``user``'s deliveries again now, whatever its status: it is pending again and
    due at once (a failure from here follows the retry schedule from its attempts so far, with at
    least one more try)."""
    with transaction.atomic():
        if not visibility.webhook_deliveries(user).filter(pk=str(delivery_id)).exists():
            raise NotFound("no such webhook delivery")
        delivery = delivery_lock(delivery_id=str(delivery_id))
        if delivery is None:
            raise NotFound("no such webhook delivery")
        delivery.status = Delivery.Status.PENDING
        delivery.next_attempt_at = _now()
        delivery.attempts = min(delivery.attempts, MAX_ATTEMPTS - 1)
        delivery.save(update_fields=["status", "next_attempt_at", "attempts", "updated_at"])
        _queue_on_commit([delivery.pk])
    return delivery


def deliveries_sweep(*, now=None) -> int:
    """Queue every pending delivery that is due (a retry's time has come, or a task was lost)."""
    now = now or _now()
    due = Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now).order_by("next_attempt_at")
    return deliveries_queue(delivery_ids=list(due.values_list("pk", flat=True)[:SWEEP_BATCH]))


@crypto.register_rotator("webhook secrets")
def secrets_rotate() -> crypto.Rotated:
    """Re-encrypt every endpoint's signing secret under the current key, one endpoint at a time
    under its row lock (``manage.py rotate_encryption_keys``); idempotent."""
    done = crypto.Rotated()
    for endpoint_id in Endpoint.objects.order_by("pk").values_list("pk", flat=True).iterator():
        with transaction.atomic():
            endpoint = endpoint_lock_any(endpoint_id=endpoint_id)
            if endpoint is None:
                continue
            try:
                new = crypto.reseal(endpoint.secret, context=secret_context(endpoint.pk))
            except crypto.CryptoError:
                done.damaged += 1
                continue
            if new is None:
                done.unchanged += 1
            else:
                Endpoint.objects.filter(pk=endpoint.pk).update(secret=new)
                done.resealed += 1
    return done
