"""Public ids of webhook rows (``market.core.ids``: a prefix and 22 random base62 characters)."""

from market.core.ids import public_id
from market.core.ids import random_base62


def new_endpoint_id() -> str:
    return public_id("we_")


def new_event_id() -> str:
    return public_id("evt_")


def new_delivery_id() -> str:
    return public_id("whd_")


def new_secret() -> str:
    """A signing secret: ``whsec_`` and 32 random base62 characters (about 190 bits)."""

    return "whsec_" + random_base62(32)
