"""Reads on accounts. A user's keys come from market.core.visibility (their own only)."""

from __future__ import annotations

import hmac

from django.db.models import QuerySet

from market.core import visibility
from market.core.errors import NotFound

from . import keys
from .models import ApiKey


def api_key_list(*, user) -> QuerySet:
    return visibility.api_keys(user)


def api_key_get(*, user, key_id: str) -> ApiKey:
    key = visibility.one(visibility.api_keys(user).filter(pk=key_id))
    if key is None:
        raise NotFound("no such API key")
    return key


def api_key_for_secret(secret: str) -> ApiKey | None:
    """The key a request presents, before anyone is signed in (so not a per-user read): None when
    the secret is malformed (no query), unknown, revoked or expired, or its user is inactive.
    One query, on the unique hash index; the hash is then compared in constant time."""
    if not keys.well_formed(secret):
        return None
    digest = keys.digest(secret)
    key = visibility.one(visibility.dangerously_unscoped(ApiKey).select_related("user").filter(ApiKey.usable_q(), secret_hash=digest))
    if key is None or not hmac.compare_digest(key.secret_hash, digest) or not key.user.is_active:
        return None
    return key
