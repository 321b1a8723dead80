"""``Prefer: wait`` through Redis: the task pushes to the purchase's key, a waiting request pops it."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

PREFIX = "baseline:released:"


@lru_cache(maxsize=1)
def redis_client():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL) if settings.REDIS_URL else None


def notify(purchase_id: int) -> None:
    r = redis_client()
    if r is not None:
        key = f"{PREFIX}{purchase_id}"
        r.pipeline().rpush(key, 1).expire(key, 60).execute()


def wait(purchase_id: int, seconds: float) -> None:
    """Block up to ``seconds`` for the purchase's release (returns at once without Redis)."""
    r = redis_client()
    if r is not None and seconds > 0:
        r.blpop(f"{PREFIX}{purchase_id}", timeout=seconds)
