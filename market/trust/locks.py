"""Row locks on trust networks, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core import visibility
from market.core.locks import Rank, taken

from .models import TrustNetwork


def network_lock(*, owner) -> TrustNetwork:
    """The owner's network, created with the defaults if need be, locked for update:
    two edits by one owner apply one after the other."""
    network, _ = TrustNetwork.objects.get_or_create(owner=owner)
    taken(Rank.NETWORK, f"trust network {network.pk}")
    return visibility.trust_networks(owner).select_for_update().get(pk=network.pk)
