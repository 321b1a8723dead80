"""What the owner role holds, for dropping it (``market.accounts.services.user_role_drop``).

An owner with open listings keeps the role until they are closed: buyers could otherwise
keep buying from an account that can no longer manage (or close) what it sells. Their
datasets, closed listings and earnings stay as they are, for when the role comes back.
"""

from __future__ import annotations

from market.accounts.roles import register_drop_guard

from .locks import owned_datasets_lock
from .models import Listing


@register_drop_guard("owner")
def open_listings(*, user) -> str | None:
    """A reason to keep the owner role while any of the user's listings is open. Their datasets
    are locked first: a listing cannot be created or reopened on them until the drop commits."""
    owned_datasets_lock(owner=user)
    count = Listing.objects.filter(dataset__owner=user, is_open=True).count()
    if count:
        return (
            f"you have {count} open listing{'s' if count != 1 else ''}: close {'them' if count != 1 else 'it'} "
            "first (on each listing's page), so that nothing is sold by an account that is no longer an owner"
        )
    return None
