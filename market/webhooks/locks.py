"""Row locks on webhook deliveries and endpoints, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import Delivery, Endpoint


def endpoint_lock(*, owner_id, endpoint_id) -> Endpoint | None:
    """One of the owner's endpoints, locked for update; None if they have no such endpoint."""
    taken(Rank.WEBHOOK, f"webhook endpoint {endpoint_id}")
    return Endpoint.objects.select_for_update().filter(pk=endpoint_id, owner_id=owner_id).first()


def endpoint_lock_any(*, endpoint_id) -> Endpoint | None:
    """An endpoint whoever owns it, locked for update (re-encrypting its secret)."""
    taken(Rank.WEBHOOK, f"webhook endpoint {endpoint_id}")
    return Endpoint.objects.select_for_update().filter(pk=endpoint_id).first()


def delivery_lock(*, delivery_id) -> Delivery | None:
    """A delivery, locked for update while it is claimed or its attempt recorded (never during the request)."""
    taken(Rank.WEBHOOK, f"webhook delivery {delivery_id}")
    return Delivery.objects.select_for_update(of=("self",)).select_related("endpoint", "event").filter(pk=delivery_id).first()
