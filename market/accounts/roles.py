"""What an account may do: its roles (buyer, owner), checked at the services' door.

``require_role(user, "buyer")`` is the one check behind buying and topping up;
the services call it first, so the API and the pages refuse alike (403).
An account adds a role it lacks from its settings page (``/account/``).
"""

from __future__ import annotations

from market.core.errors import Forbidden

#: role -> the user's flag, and what the role lets an account do
ROLES = {
    "buyer": ("is_buyer", "buy releases and top up a wallet"),
    "owner": ("is_owner", "upload datasets and list them"),
}

#: where an account adds a role it lacks
SETTINGS_PATH = "/account/"


def has_role(user, role: str) -> bool:
    flag, _ = ROLES[role]
    return bool(user is not None and user.is_authenticated and getattr(user, flag, False))


def role_missing_message(role: str) -> str:
    _, what = ROLES[role]
    return (
        f"only {role}s can {what}: this account is not a {role}; "
        f"add the {role} role in your account settings ({SETTINGS_PATH})"
    )


def require_role(user, role: str) -> None:
    """Refuse (403, code ``role_required``) unless ``user`` is signed in and has ``role``."""
    if not has_role(user, role):
        raise Forbidden(role_missing_message(role), code="role_required")
