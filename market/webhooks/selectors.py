"""Reading webhooks as their user sees them (``market.core.visibility``)."""

from django.db.models import QuerySet

from market.core import visibility
from market.core.errors import NotFound

from .models import Delivery


def endpoint_list(*, user) -> QuerySet:
    return visibility.webhook_endpoints(user).order_by("-created_at", "pk")


def endpoint_get(*, user, endpoint_id):
    endpoint = visibility.webhook_endpoints(user).filter(pk=str(endpoint_id)).first()
    if endpoint is None:
        raise NotFound("no such webhook endpoint")
    return endpoint


def delivery_list(*, user, endpoint=None, event=None, status=None) -> QuerySet:
    qs = visibility.webhook_deliveries(user).order_by("-created_at", "pk")
    if endpoint:
        qs = qs.filter(endpoint_id=endpoint)
    if event:
        qs = qs.filter(event__type=event)
    if status:
        qs = qs.filter(status=status)
    return qs


def delivery_get(*, user, delivery_id) -> Delivery:
    delivery = visibility.webhook_deliveries(user).prefetch_related("attempt_log").filter(pk=str(delivery_id)).first()
    if delivery is None:
        raise NotFound("no such webhook delivery")
    return delivery
