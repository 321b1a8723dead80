"""What an account may do: its roles (buyer, owner), checked at the services' door.

``require_role(user, "buyer")`` is the one check behind buying and topping up;
the services call it first, so the API and the pages refuse alike (403).
An account adds a role it lacks, or drops one it has, from its settings page
(``/account/``). An account keeps at least one role, and the apps that know what
a role holds say when it may not be dropped (:func:`register_drop_guard`: an
owner with open listings, in ``market.catalog.roles``).
"""

from __future__ import annotations

from collections.abc import Callable

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


#: role -> the checks run before dropping it (``register_drop_guard``)
_drop_guards: dict[str, list[Callable]] = {role: [] for role in ROLES}


def register_drop_guard(role: str):
    """Register ``guard(*, user) -> str | None`` (a decorator), run inside the transaction that
    drops ``role`` from ``user`` after their row is locked: a text refuses the drop and says why.
    A guard may lock rows ranked after the user's (``market.core.locks``), to keep what it checks
    from changing until the drop commits. Register at import time of a module an AppConfig.ready()
    imports (this app cannot import the apps above it)."""

    def add(guard):
        _drop_guards[role].append(guard)
        return guard

    return add


def drop_guards(role: str) -> list[Callable]:
    return list(_drop_guards[role])
