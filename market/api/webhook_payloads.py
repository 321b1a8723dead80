"""What a webhook event carries: exactly what this API shows its user of the object, rendered
by the API's own serializers (registered into ``market.webhooks.events`` when the app is ready,
since webhooks sit below the API). Never raw data, true answers or stored noise: only what the
user's own ``GET`` would answer. A builder returns None when the user cannot see the object."""

from __future__ import annotations

import json

from rest_framework.renderers import JSONRenderer

from market.catalog import selectors as catalog
from market.core import visibility
from market.core.errors import NotFound
from market.trading import selectors as trading
from market.trust.selectors import buyer_caps
from market.webhooks.events import register_payload

from rest_framework.fields import DateTimeField

from . import serializers as s


def _plain(data) -> dict:
    """Serializer output as plain JSON values (decimals as strings, as the API sends them)."""
    return json.loads(JSONRenderer().render(data))


@register_payload("purchase.released")
@register_payload("purchase.failed")
def purchase_payload(*, object_id: str, user) -> dict | None:
    """The purchase as ``GET purchases/{id}/`` answers its buyer (with its release's values once released)."""
    try:
        purchase = trading.purchase_get(user=user, purchase_id=object_id)
    except NotFound:
        return None
    return {"object": "purchase", **_plain(s.PurchaseSerializer(purchase).data)}


@register_payload("listing.sold")
def sale_payload(*, object_id: str, user) -> dict | None:
    """A released sale on one of the owner's listings: the listing as ``GET listings/{id}/`` shows
    its owner, the step sold and its price (as the earnings statement says it); never who bought."""
    try:
        purchase = visibility.sales(user).filter(pk=object_id).first()
    except Exception:  # not a purchase id
        purchase = None
    if purchase is None:
        return None
    listing = catalog.listing_get(user=user, listing_id=purchase.listing_id)
    context = {  # as GET listings/{id}/ answers its owner
        "levels_held": catalog.levels_held(user=user, listing_ids=[listing.pk]),
        "caps": buyer_caps(listings=[listing], buyer=user),
        "spent": catalog.listing_spent(user=user, listing_ids=[listing.pk]),
    }
    return {
        "object": "sale",
        "listing": _plain(s.ListingSerializer(listing, context=context).data),
        "level_from": str(purchase.level_from),
        "epsilon": str(purchase.level_to),
        "price": str(purchase.price),
        "created_at": _plain({"t": DateTimeField().to_representation(purchase.created_at)})["t"],
    }


@register_payload("listing.ready")
@register_payload("listing.failed")
def listing_payload(*, object_id: str, user) -> dict | None:
    """The owner's listing as ``GET listings/{id}/`` answers them: ``status`` ready (open to buyers)
    or failed (with ``failure``, why)."""
    try:
        listing = catalog.listing_get(user=user, listing_id=int(object_id))
    except (NotFound, ValueError):
        return None
    context = {"levels_held": {}, "caps": buyer_caps(listings=[listing], buyer=user),
               "spent": catalog.listing_spent(user=user, listing_ids=[listing.pk])}
    return {"object": "listing", **_plain(s.ListingSerializer(listing, context=context).data)}


@register_payload("dataset.ready")
def dataset_payload(*, object_id: str, user) -> dict | None:
    """The dataset as ``GET datasets/{id}/`` answers its owner."""
    try:
        dataset = catalog.dataset_get(user=user, dataset_id=object_id)
    except NotFound:
        return None
    earlier = catalog.dataset_same_content(user=user, dataset=dataset)
    return {"object": "dataset", **_plain(s.dataset_answer(dataset, earlier))}
