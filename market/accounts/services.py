"""Writes on accounts: API keys and roles. Keyword-only, one transaction each."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from market.core.errors import Conflict, InvalidInput, NotFound
from market.core.locks import lost_race

from .keycache import keys_forget
from . import keys
from .locks import api_key_lock, user_lock
from .roles import ROLES, drop_guards
from .models import ApiKey, User

#: a rotated key may keep working this long at most, so that clients can switch over
ROTATION_GRACE_MAX = timedelta(hours=24)
#: an expiry at most this far ahead (a key without expiry is also allowed)
EXPIRY_MAX = timedelta(days=3650)
NAME_MAX = 100


def _max_active() -> int:
    return int(getattr(settings, "API_KEY_MAX_ACTIVE", 100))


def _name(name) -> str:
    name = (name or "").strip() if isinstance(name, str) else ""
    if not name:
        raise InvalidInput("name is required", fields={"name": ["This field is required."]})
    if len(name) > NAME_MAX:
        raise InvalidInput("name is too long", fields={"name": [f"At most {NAME_MAX} characters."]})
    return name


def _expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    if expires_at is None:
        return None
    if timezone.is_naive(expires_at):
        raise InvalidInput("expires_at needs a time zone", fields={"expires_at": ["Give a time zone, e.g. 2027-01-01T00:00:00Z."]})
    if expires_at <= now:
        raise InvalidInput("expires_at is in the past", fields={"expires_at": ["Must be in the future."]})
    if expires_at > now + EXPIRY_MAX:
        raise InvalidInput("expires_at is too far ahead", fields={"expires_at": [f"At most {EXPIRY_MAX.days} days ahead."]})
    return expires_at


def _issue(*, user: User, name: str, expires_at, from_sign_in: bool, now) -> tuple[ApiKey, str]:
    secret = keys.new_secret()
    key = ApiKey.objects.create(
        user=user,
        name=name,
        prefix=keys.display_prefix(secret),
        secret_hash=keys.digest(secret),
        from_sign_in=from_sign_in,
        created_at=now,
        expires_at=expires_at,
    )
    return key, secret


def api_key_create(*, user: User, name: str, expires_at: datetime | None = None, from_sign_in: bool = False) -> tuple[ApiKey, str]:
    """A new key for ``user``. Returns the key and its secret: the only time the secret exists
    outside the client. At most ``API_KEY_MAX_ACTIVE`` usable keys per user: a sign-in exchange
    at the cap retires the user's oldest sign-in key; any other creation is refused (409)."""
    now = timezone.now()
    name = _name(name)
    expires_at = _expiry(expires_at, now)
    with transaction.atomic():
        user_lock(user=user)
        usable = ApiKey.objects.filter(ApiKey.usable_q(now), user=user)
        if usable.count() >= _max_active():
            oldest = usable.filter(from_sign_in=True).order_by("created_at").first() if from_sign_in else None
            if oldest is None:
                raise Conflict(
                    f"you have {_max_active()} active API keys, the most allowed: revoke one first",
                    code="too_many_keys",
                )
            ApiKey.objects.filter(pk=oldest.pk).update(revoked_at=now)
            keys_forget(digests=[oldest.secret_hash])
        return _issue(user=user, name=name, expires_at=expires_at, from_sign_in=from_sign_in, now=now)


def _own_key_for_update(*, user: User, key_id: str) -> ApiKey:
    key = api_key_lock(user=user, key_id=key_id)
    if key is None:
        raise NotFound("no such API key")
    return key


def api_key_revoke(*, user: User, key_id: str) -> ApiKey:
    """Revoke one of ``user``'s keys, at once (also a rotated key still in its grace period).
    Revoking a revoked key changes nothing; another user's key is a 404."""
    now = timezone.now()
    with transaction.atomic():
        key = _own_key_for_update(user=user, key_id=key_id)
        if key.revoked_at is None or key.revoked_at > now:
            key.revoked_at = now
            key.save(update_fields=["revoked_at"])
            keys_forget(digests=[key.secret_hash])
        return key


def api_key_rotate(*, user: User, key_id: str, grace: timedelta = timedelta(0)) -> tuple[ApiKey, str]:
    """A new secret for a key: a new key with the same name and expiry; the old key is revoked
    after ``grace`` (0 to 24 hours; 0 = at once), so that clients can switch over. Only an
    active key can be rotated (a revoked, expired or already rotated one is a 409)."""
    if not isinstance(grace, timedelta) or grace < timedelta(0) or grace > ROTATION_GRACE_MAX:
        raise InvalidInput(
            "the grace period must be between 0 and 24 hours",
            fields={"grace_seconds": [f"Between 0 and {int(ROTATION_GRACE_MAX.total_seconds())} seconds."]},
        )
    now = timezone.now()
    with transaction.atomic():
        user_lock(user=user)
        key = _own_key_for_update(user=user, key_id=key_id)
        state = key.status(now)
        if state != "active":
            raise Conflict(f"this key is {state}: only an active key can be rotated", code=f"key_{state}")
        key.revoked_at = now + grace
        key.save(update_fields=["revoked_at"])
        keys_forget(digests=[key.secret_hash])
        return _issue(user=user, name=key.name, expires_at=key.expires_at, from_sign_in=key.from_sign_in, now=now)


def user_password_set(*, user: User, raw_password: str | None) -> User:
    """Give ``user`` a new password (None: an unusable one, no password sign-in) and revoke every
    API key of theirs that still works, in one transaction: every path that sets a password (the
    password page, the admin, ``manage.py changepassword``) comes here. Their other sessions end by
    themselves (the session's hash of the password no longer matches)."""
    with transaction.atomic():
        user_lock(user=user)
        if raw_password is None:
            user.set_unusable_password()
        else:
            user.set_password(raw_password)
        user.save(update_fields=["password"])
        api_keys_revoke_all(user=user)
    return user


def api_keys_revoke_all(*, user: User) -> int:
    """Revoke every key of ``user`` that still works (a password change does this). Returns how many."""
    now = timezone.now()
    with transaction.atomic():
        keys_forget(user_id=user.pk)
        return ApiKey.objects.filter(user=user).exclude(revoked_at__lte=now).update(revoked_at=now)


def api_key_touch(*, key: ApiKey, every: timedelta = timedelta(seconds=60)) -> None:
    """Record a use of ``key``: at most one write per key per ``every`` (a conditional UPDATE,
    so concurrent requests do not all write, and most requests do not write at all). The stamp
    is bookkeeping: if the row is locked right now (a rotation in progress), the request goes on
    unstamped rather than waiting or failing."""
    now = timezone.now()
    if key.last_used_at is not None and key.last_used_at > now - every:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - every)
    try:
        with transaction.atomic():
            ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    except OperationalError as exc:
        if not lost_race(exc):
            raise
        return
    key.last_used_at = now


def user_role_add(*, user: User, role: str) -> User:
    """Give ``user`` the role they lack: "buyer" (may buy and top up) or "owner" (may list data)."""
    if role not in ROLES:
        raise InvalidInput("unknown role", fields={"role": [f"One of: {', '.join(ROLES)}."]})
    field, _ = ROLES[role]
    with transaction.atomic():
        User.objects.filter(pk=user.pk).update(**{field: True})
        keys_forget(user_id=user.pk)  # a remembered key carries its user's roles
        setattr(user, field, True)
    return user


def user_role_drop(*, user: User, role: str) -> User:
    """Take ``role`` from ``user``. Refused (409, with the reason) when it is their only role (an
    account keeps at least one), or when an app's guard says what the role still holds (an owner
    with open listings must close them first: ``market.catalog.roles``). What the account made
    under the role stays theirs: an owner's datasets, closed listings and earnings wait for the
    role to come back; a buyer's releases stay readable and their wallet keeps its credits,
    although they can no longer buy or top up. Dropping a role the user lacks changes nothing."""
    if role not in ROLES:
        raise InvalidInput("unknown role", fields={"role": [f"One of: {', '.join(ROLES)}."]})
    field, _ = ROLES[role]
    with transaction.atomic():
        user_lock(user=user)
        current = User.objects.filter(pk=user.pk).values(*(flag for flag, _ in ROLES.values())).first()
        if not current[field]:
            setattr(user, field, False)
            return user
        if not any(has for flag, has in current.items() if flag != field):
            raise Conflict(
                f"the {role} role is this account's only role; an account keeps at least one "
                f"(add the other role first)", code="last_role",
            )
        for guard in drop_guards(role):
            reason = guard(user=user)
            if reason:
                raise Conflict(reason, code="role_in_use")
        User.objects.filter(pk=user.pk).update(**{field: False})
        keys_forget(user_id=user.pk)  # a remembered key carries its user's roles
        setattr(user, field, False)
    return user
