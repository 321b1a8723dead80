"""API keys remembered in Redis, so that a request signs in without a database query.

An entry, under the key's stored digest, holds the key and its user (pickled,
after the user's id and a ``|``: the rate-limit script reads the id) and lives
at most :data:`TTL` seconds, never past the key's expiry or revocation. Every
write that can change whether a key signs a request in, or who it signs in
(revoking, rotating, a user's roles or status), replaces the entry with a
tombstone for :data:`TTL` seconds when its transaction commits: a tombstone
sends lookups to the database, and an entry is only ever added where there is
none (``SET NX``), so a request that read the key before the change cannot put
the old state back. Without Redis nothing is remembered, and every request
reads its key from the database.

While Redis is unavailable (``market.core.cache``) keys are read from the
database; a tombstone that could not be written then is kept in this process
and written before its next use of Redis, so an entry made before the outage
cannot sign a revoked key in once Redis is back.
"""

from __future__ import annotations

import logging
import pickle
import threading
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from market.core.cache import Unavailable, shared

from .models import ApiKey

log = logging.getLogger(__name__)

#: the longest an entry or a tombstone lives, in seconds
TTL = 60
TOMBSTONE = b"-"


def cache_key(digest: str) -> str:
    return f"gradual:apikey:{digest}"


#: digests whose tombstone could not be written (Redis unavailable): written by :func:`forget_pending`
_unforgotten: set[str] = set()
_unforgotten_lock = threading.Lock()


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
    ttl = TTL
    now = timezone.now()
    for limit in (key.expires_at, key.revoked_at):
        if isinstance(limit, datetime):
            ttl = min(ttl, int((limit - now).total_seconds()))
    if ttl < 1:
        return
    raw = str(key.user_id).encode() + b"|" + pickle.dumps(key)
    try:
        forget_pending()
        shared(lambda client: client.set(cache_key(key.secret_hash), raw, ex=ttl, nx=True))
    except Unavailable:
        pass  # not remembered: the next request reads the database again


def keys_forget(*, digests=None, user_id=None) -> None:
    """Tombstone the entries of these keys (or of every key of ``user_id``), now and when the
    current transaction commits."""

    def forget():
        hashes = list(digests or [])
        if user_id is not None:
            hashes += list(ApiKey.objects.filter(user_id=user_id).values_list("secret_hash", flat=True))
        _tombstones(hashes)

    forget()
    transaction.on_commit(forget)


def _tombstones(hashes) -> None:
    """Write a tombstone for each digest, or keep them for :func:`forget_pending` if Redis is unavailable."""
    if not hashes:
        return
    try:
        shared(lambda client: _write(client, hashes))
    except Unavailable:
        with _unforgotten_lock:
            _unforgotten.update(hashes)
        log.warning("could not forget %d API key(s) in Redis now; kept to be forgotten when it is back", len(hashes))


def _write(client, hashes) -> None:
    pipe = client.pipeline(transaction=False)
    for digest in hashes:
        pipe.set(cache_key(digest), TOMBSTONE, ex=TTL)
    pipe.execute()


def forget_pending() -> None:
    """Write the tombstones an outage kept back, before this process reads or adds an entry
    (:class:`~market.core.cache.Unavailable` if Redis still fails: nothing is read from it then)."""
    if not _unforgotten:
        return
    with _unforgotten_lock:
        hashes = list(_unforgotten)
    shared(lambda client: _write(client, hashes))
    with _unforgotten_lock:
        _unforgotten.difference_update(hashes)
