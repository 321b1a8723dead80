from django.db.models import QuerySet

from market.core import visibility
from market.core.errors import NotFound


def purchase_list(*, user) -> QuerySet:
    """The user's purchases, newest first, each with its release and the release's listing and dataset
    (what the release's readings are laid out from) in the same query."""
    return visibility.purchases(user).select_related("release__listing__dataset").order_by("-created_at")


def purchase_get(*, user, purchase_id) -> "Purchase":  # noqa: F821
    try:
        purchase = visibility.purchases(user).filter(pk=purchase_id).first()
    except Exception:  # not a UUID: no such purchase
        purchase = None
    if purchase is None:
        raise NotFound("no such purchase")
    return purchase
