"""Waiting for a purchase's release without a polling loop (``Prefer: wait=N``, RFC 7240).

When a release transaction commits, :func:`releases_announce` puts a token in
a short-lived Redis list per purchase (one pipelined round trip for a whole
batch). :func:`release_wait` blocks on that list (``BLPOP``) until the token
comes or the time is up, and puts the token back so that every other waiter
on the same purchase wakes too. The database stays the truth: the caller
reads the purchase again after the wait, so a lost token only costs the
wait's time, never a wrong answer. Without Redis (the embedded default) the
wait reads the purchase's status every 50 ms instead, as it does while Redis is
unavailable (``market.core.cache``).

A wait holds a web thread, so few are held at once (:func:`wait_slot`): at most
``WAIT_MAX_PER_BUYER`` per buyer (counted in Redis across processes) and
``WAIT_MAX_PER_PROCESS`` in one web process (its threads are its own). Beyond
them the answer comes at once, as without the preference: RFC 7240 lets a
server ignore a preference, and the answer then carries no
``Preference-Applied`` (and ``Retry-After: 1``, the pace to ask again at).
"""

from __future__ import annotations

import functools
import logging
import time
from contextlib import contextmanager

from django.conf import settings

from market.core.cache import redis_down
from market.core.slots import Limit, slot_hold

log = logging.getLogger(__name__)

#: the longest wait a client may ask for, in seconds (longer asks are cut to it)
MAX_WAIT = 30
#: how long an announcement stays for late waiters, in seconds
TOKEN_TTL = 60


def _key(purchase_id) -> str:
    return f"gradual:released:{purchase_id}"


def _redis():
    return _client(settings.REDIS_URL)


@functools.cache
def _client(url: str):
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=MAX_WAIT + 5)


def releases_announce(*, purchase_ids) -> None:
    """Wake whoever waits for these purchases (called once their release or refund has committed)."""
    if not settings.REDIS_URL or not purchase_ids or redis_down():
        return
    try:
        pipe = _redis().pipeline(transaction=False)
        for purchase_id in purchase_ids:
            pipe.rpush(_key(purchase_id), 1)
            pipe.expire(_key(purchase_id), TOKEN_TTL)
        pipe.execute()
    except Exception:  # waiters time out and read the database: nothing is lost
        log.warning("could not announce releases %s", purchase_ids, exc_info=True)


def release_wait(*, purchase_id, seconds: float, done) -> None:
    """Return when the purchase's release or refund is announced, or ``seconds`` have passed.

    With Redis, one ``BLPOP``: an announcement is made only after the commit, and it stays
    (each waiter puts it back) for :data:`TOKEN_TTL` seconds, so a release made before the
    wait began answers at once. ``done()`` (which reads the purchase) is asked only without
    Redis, every 50 ms, or if Redis fails.
    """
    deadline = time.monotonic() + min(max(seconds, 0), MAX_WAIT)
    if settings.REDIS_URL and not redis_down():
        key = _key(purchase_id)
        try:
            if _redis().blpop([key], timeout=max(deadline - time.monotonic(), 0.01)) is not None:
                _redis().rpush(key, 1)  # the next waiter on this purchase wakes too
            return
        except Exception:
            log.warning("waiting on Redis failed; reading the database instead", exc_info=True)
    while time.monotonic() < deadline and not done():
        time.sleep(0.05)


def parse_prefer_wait(header: str | None) -> float | None:
    """The seconds of a ``Prefer: wait=N`` header (RFC 7240), cut to :data:`MAX_WAIT`; None without one."""
    for part in (header or "").split(","):
        for pref in part.split(";"):
            name, _, value = pref.strip().partition("=")
            if name.strip().lower() == "wait":
                try:
                    return min(max(float(value.strip().strip('"')), 0.0), MAX_WAIT)
                except ValueError:
                    return None
    return None


@contextmanager
def wait_slot(*, buyer_id, seconds: float | None, needed: bool = True):
    """``with wait_slot(buyer_id=..., seconds=wait, needed=purchase.in_flight) as wait``: ``wait`` is
    the seconds to wait, or None when no wait was asked or none may be held now (the buyer's or this
    process's waits are at their limit). A wait not ``needed`` (the purchase is final) takes no slot.
    The slot is given back on leaving."""
    if seconds is None or not needed:
        yield seconds
        return
    limits = [
        Limit(f"wait:buyer:{buyer_id}", settings.WAIT_MAX_PER_BUYER),
        Limit("wait:process", settings.WAIT_MAX_PER_PROCESS, local=True),
    ]
    with slot_hold(limits=limits, ttl=MAX_WAIT + 15) as slot:
        yield seconds if slot is not None else None
