"""API keys remembered in Redis, so that a request signs in without a database query.

An entry, under the key's stored digest, holds the key and its user (pickled,
after the user's id and a ``|``: the rate-limit script reads the id) and lives
at most :data:`TTL` seconds, never past the key's expiry or revocation. Every
write that can change whether a key signs a request in, or who it signs in
(revoking, rotating, a user's roles or status), replaces the entry with a
tombstone for :data:`TTL` seconds when its transaction commits: a tombstone
sends lookups to the database, and an entry is only ever added where there is
none (``SET NX``), so a request that read the key before the change cannot put
the old state back. Without Redis nothing is remembered.
"""

from __future__ import annotations

import logging
import pickle
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

log = logging.getLogger(__name__)

#: the longest an entry or a tombstone lives, in seconds
TTL = 60
TOMBSTONE = b"-"


def cache_key(digest: str) -> str:
    return f"gradual:apikey:{digest}"


def redis_client():
    """The Redis connection of Django's cache (None without Redis)."""
    if not settings.REDIS_URL:
        return None
    from django.core.cache import cache

    return cache._cache.get_client(write=True)


def entry_decode(raw: bytes | None):
    """The key (with its user) of an entry; None for a miss or a tombstone."""
    if not raw or raw == TOMBSTONE:
        return None
    try:
        return pickle.loads(raw.split(b"|", 1)[1])  # noqa: S301 - our own entry, written by entry_add
    except Exception:
        return None


def entry_add(key) -> None:
    """Remember ``key`` (an ApiKey with its user loaded) unless an entry or tombstone is there."""
    client = redis_client()
    if client is None:
        return
    ttl = TTL
    now = timezone.now()
    for limit in (key.expires_at, key.revoked_at):
        if isinstance(limit, datetime):
            ttl = min(ttl, int((limit - now).total_seconds()))
    if ttl < 1:
        return
    raw = str(key.user_id).encode() + b"|" + pickle.dumps(key)
    try:
        client.set(cache_key(key.secret_hash), raw, ex=ttl, nx=True)
    except Exception:
        log.warning("could not remember an API key", exc_info=True)


def keys_forget(*, digests=None, user_id=None) -> None:
    """Tombstone the entries of these keys (or of every key of ``user_id``), now and when the
    current transaction commits."""

    def forget():
        client = redis_client()
        if client is None:
            return
        from .models import ApiKey

        hashes = list(digests or [])
        if user_id is not None:
            hashes += list(ApiKey.objects.filter(user_id=user_id).values_list("secret_hash", flat=True))
        if not hashes:
            return
        try:
            pipe = client.pipeline(transaction=False)
            for digest in hashes:
                pipe.set(cache_key(digest), TOMBSTONE, ex=TTL)
            pipe.execute()
        except Exception:
            log.exception("could not forget API keys %s", hashes)

    forget()
    transaction.on_commit(forget)
