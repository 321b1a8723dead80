"""The events users may subscribe to, how the apps that make them say so, and how each is rendered.

The apps where things happen (trading, catalog) call :func:`emit` inside their
transaction, which notes the events in the outbox with their change; when it
commits, one task on the ``webhooks`` queue records the events
(``services.events_record``) and clears their notes, and a note whose task was
lost is recorded by the sweeper. An event's body is what the API would show
its user of the object: this app cannot import the API (it sits above), so the
API registers one *payload builder* per event type when its app is ready
(:func:`register_payload`), and the task calls it with the object's id and the
user. A builder returns None when the user cannot see the object (no event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from market.accounts.roles import has_role
from market.core import queueing

from .models import Endpoint, Outbox

log = logging.getLogger(__name__)

#: event type -> (the role that may subscribe to it, what it means, in plain words)
EVENT_TYPES: dict[str, tuple[str, str]] = {
    "purchase.released": ("buyer", "a purchase of yours was released: its values are ready"),
    "purchase.failed": ("buyer", "a purchase of yours could not be released and was refunded"),
    "listing.sold": ("owner", "a step on one of your listings was sold and released"),
    "dataset.ready": ("owner", "an uploaded dataset of yours was read and is ready to list"),
    "listing.ready": ("owner", "a listing of yours that was being prepared is computed and open to buyers"),
    "listing.failed": ("owner", "a listing of yours that was being prepared could not be computed (it holds no budget)"),
}
#: sent by "send a test event"; anyone may receive it, nobody subscribes to it
PING = "ping"

Builder = Callable[..., "dict | None"]
_builders: dict[str, Builder] = {}


def register_payload(event_type: str):
    """Register ``builder(*, object_id, user) -> dict | None`` for ``event_type`` (a decorator):
    what the API shows ``user`` of the object, or None if they cannot see it."""
    if event_type not in EVENT_TYPES and event_type != PING:
        raise ValueError(f"unknown webhook event type {event_type!r}")

    def add(builder: Builder) -> Builder:
        _builders[event_type] = builder
        return builder

    return add


def payload_builder(event_type: str) -> Builder | None:
    return _builders.get(event_type)


def allowed_events(user) -> list[str]:
    """The event types ``user``'s roles let them subscribe to."""

    return [kind for kind, (role, _) in EVENT_TYPES.items() if has_role(user, role)]


def emit(*events: tuple[str, str, int]) -> None:
    """Note ``(type, object_id, user_id)`` events in the current transaction (one INSERT in the
    outbox, committed or rolled back with the caller's change) and, once it commits, queue one task
    on the webhooks queue to record them. A broker that cannot be reached never fails or slows the
    caller: the notes wait for the sweeper (``services.outbox_sweep``).

    Only events that an active endpoint of their user subscribes to are noted (one read of the
    users' endpoints): an event nobody listens to is never recorded (``services.events_record``
    checks again), so most changes (users without webhooks) write no note and send no task."""

    items = [(kind, str(obj), int(user)) for kind, obj, user in events]
    for kind, _, _ in items:
        if kind not in EVENT_TYPES:
            raise ValueError(f"unknown webhook event type {kind!r}")
    items = listened(items)
    if not items:
        return
    Outbox.objects.bulk_create([Outbox(type=kind, object_id=obj, user_id=user) for kind, obj, user in items])
    transaction.on_commit(lambda: _send(items))


def listened(items: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """The ``items`` whose user has an active endpoint subscribed to their type (one query): what
    :func:`emit` notes and ``services.events_record`` records."""
    if not items:
        return items
    wanted: set[tuple[int, str]] = set()
    endpoints = Endpoint.objects.filter(owner_id__in={user for _, _, user in items}, is_active=True)
    for owner_id, kinds in endpoints.values_list("owner_id", "events"):
        wanted.update((owner_id, kind) for kind in kinds)
    return [item for item in items if (item[2], item[0]) in wanted]


def _send(items: list[tuple[str, str, int]]) -> None:
    try:
        queueing.task("webhooks.events_record").delay([list(item) for item in items])
    except Exception:
        log.exception("could not queue %d webhook event(s); the sweeper will record them", len(items))
