"""Rate limits: every limit that applies to a request counted in one cache round trip.

A request is counted against its user (signed in: ``user``; otherwise its
client address, from ``market.core.clients``, never a header the client may
write itself: ``anon``) and against its view's ``throttle_scope`` if it has one
(``purchases``, ``auth``), each a fixed window of the rate's period: one
``INCR`` per limit (and an ``EXPIRE`` on a window's first request), all sent
to Redis in one pipeline. Over a limit, the answer is 429 in the API's error
shape with ``Retry-After`` the seconds left in the window. A fixed window lets a
client send up to twice the rate across a window's edge; the limits are there
to stop floods, not to meter. Without Redis (the embedded default) the
process's own cache counts the same way.
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from market.core.clients import client_address

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """``"120/minute"`` -> (120, 60); None for no limit."""
    if not rate:
        return None
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period.strip()[0]]


class RateLimits(BaseThrottle):
    #: scope -> rate ("120/minute"); tests may replace it
    RATES: dict[str, str | None] = api_settings.DEFAULT_THROTTLE_RATES

    def __init__(self):
        self._wait: float | None = None

    def limits(self, request, view) -> list[tuple[str, int, int]]:
        """(counter key, allowed, period) of every limit on this request."""
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            scopes, ident = ["user"], f"user:{user.pk}"
        else:
            scopes, ident = ["anon"], f"addr:{client_address(request)}"
        if getattr(view, "throttle_scope", None):
            scopes.append(view.throttle_scope)
        out = []
        now = time.time()
        for scope in scopes:
            parsed = parse_rate(self.RATES.get(scope))
            if parsed:
                allowed, period = parsed
                out.append((f"gradual:throttle:{scope}:{ident}:{int(now // period)}", allowed, period))
        return out

    def allow_request(self, request, view) -> bool:
        limits = self.limits(request, view)
        if not limits:
            return True
        counts = _count([(key, period) for key, _, period in limits])
        now = time.time()
        over = [period - now % period for (_, allowed, period), n in zip(limits, counts) if n > allowed]
        if over:
            self._wait = max(over)
            return False
        return True

    def wait(self) -> float | None:
        return math.ceil(self._wait) if self._wait is not None else None


def _count(windows: list[tuple[str, int]]) -> list[int]:
    """Add one to each window's counter and return the counts: one round trip to Redis."""
    if settings.REDIS_URL:
        client = cache._cache.get_client(write=True)  # Django's Redis cache: its connection pool
        pipe = client.pipeline(transaction=False)
        for key, period in windows:
            pipe.incr(key)
            pipe.expire(key, period + 1, nx=True)
        replies = pipe.execute()
        return [int(n) for n in replies[0::2]]
    counts = []
    for key, period in windows:
        cache.add(key, 0, timeout=period + 1)
        counts.append(cache.incr(key))
    return counts
