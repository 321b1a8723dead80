"""What the owners' writes share: the owner role, read again under a lock, and text inputs."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from market.accounts.roles import require_role
from market.core.errors import InvalidInput


def _require_owner(user) -> None:
    require_role(user, "owner")


def _require_owner_still(user) -> None:
    """The owner role read again, under a lock on one of the user's datasets: dropping the role
    (``market.catalog.roles``) locks them all first, so a listing cannot open meanwhile."""
    if not get_user_model().objects.filter(pk=user.pk, is_owner=True).exists():
        require_role(None, "owner")


def _text(value, name: str, *, max_length: int, required: bool = True) -> str:
    text = (value or "").strip()
    if required and not text:
        raise InvalidInput(f"{name} is required", fields={name: ["This field is required."]})
    if len(text) > max_length:
        raise InvalidInput(f"{name} is too long", fields={name: [f"At most {max_length} characters."]})
    return text


#: the longest record name, singular or plural (``Dataset.record_name``)
