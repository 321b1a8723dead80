"""Rate limits: every limit that applies to a request counted in one cache round trip.

A request is counted against its user (signed in: ``user``; otherwise its
client address, from ``market.core.clients``, never a header the client may
write itself: ``anon``) and against its view's ``throttle_scope`` if it has one
(``purchases``, ``auth``), each a fixed window of the rate's period: one
``INCR`` per limit (and an ``EXPIRE`` on a window's first request), all sent
to Redis in one pipeline; a request signed in with an API key has its limits
counted by the same Redis script that looks its key up
(:func:`key_and_counts`), so signing in and counting cost one round trip
together. Over a limit, the answer is 429 in the API's error
shape with ``Retry-After`` the seconds left in the window; every counted answer
carries ``RateLimit-Limit``, ``-Remaining``, ``-Reset`` and ``-Policy`` from the same
counts (:func:`rate_limit_headers`). A fixed window lets a
client send up to twice the rate across a window's edge; the limits are there
to stop floods, not to meter. Without Redis (the embedded default), or while
Redis is unavailable (``market.core.cache``: its breaker is open), the
process's own memory counts the same way: each process then allows the rate.
"""

from __future__ import annotations

import math
import time

from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from market.accounts.keycache import cache_key, entry_decode, forget_pending
from market.core.cache import Unavailable, local_cache, shared
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

    @classmethod
    def scopes(cls, view, signed_in: bool) -> list[tuple[str, int, int]]:
        """(scope, allowed, period) of every limit on a request to ``view``."""
        names = ["user" if signed_in else "anon"]
        if getattr(view, "throttle_scope", None):
            names.append(view.throttle_scope)
        return [(name, *parsed) for name in names if (parsed := parse_rate(cls.RATES.get(name)))]

    def allow_request(self, request, view) -> bool:
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        ident = f"user:{user.pk}" if signed_in else f"addr:{client_address(request)}"
        limits = self.scopes(view, signed_in)
        if not limits:
            return True
        counted = getattr(getattr(request, "_request", request), "gradual_counts", None)
        if counted is not None and counted[0] == ident:  # counted with the key's look-up
            now, counts = counted[1], counted[2]
        else:
            now = time.time()
            counts = _count([(_counter(scope, ident, period, now), period) for scope, _, period in limits])
        _remember(request, limits, counts, now)
        over = [period - now % period for (_, allowed, period), n in zip(limits, counts) if n > allowed]
        if over:
            self._wait = max(over)
            return False
        return True

    def wait(self) -> float | None:
        return math.ceil(self._wait) if self._wait is not None else None


def _remember(request, limits, counts, now: float) -> None:
    """Keep on the request what its ``RateLimit-*`` headers say (:func:`rate_limit_headers`):
    the limit closest to exhaustion (least left; on a tie, the one whose window ends last) and
    every limit's policy, from the counts just made (no further round trip)."""
    windows = [
        (allowed, max(0, allowed - n), math.ceil(period - now % period), period)
        for (_, allowed, period), n in zip(limits, counts)
    ]
    allowed, remaining, reset, _ = min(windows, key=lambda w: (w[1], -w[2]))
    getattr(request, "_request", request).gradual_rate_limit = {
        "RateLimit-Limit": str(allowed),
        "RateLimit-Remaining": str(remaining),
        "RateLimit-Reset": str(reset),
        "RateLimit-Policy": ", ".join(f"{a};w={p}" for a, _, _, p in windows),
    }


def rate_limit_headers(request, response) -> None:
    """The ``RateLimit-*`` headers (draft-ietf-httpapi-ratelimit-headers-06) on the answer to a
    request that was counted against a limit: ``Limit``, ``Remaining`` and ``Reset`` (seconds to
    its window's end) of the tightest limit, and ``Policy`` listing each (``600;w=60``)."""
    for name, value in (getattr(request, "gradual_rate_limit", None) or {}).items():
        response[name] = value


#: the headers in the schema (a component each, on every answer of the API)
SCHEMA_HEADERS = {
    "RateLimit-Limit": "the requests allowed in the window of the limit closest to exhaustion",
    "RateLimit-Remaining": "the requests left in that window",
    "RateLimit-Reset": "seconds until that window ends",
    "RateLimit-Policy": "every limit counted on this request: requests;w=window seconds, e.g. 600;w=60, 120;w=60",
}


def schema_headers(result, generator, request, public):
    """drf-spectacular hook: the ``RateLimit-*`` headers as components, named on every answer
    (but 401s: a request refused before it is counted); ``Retry-After`` on 429s."""
    headers = result.setdefault("components", {}).setdefault("headers", {})
    for name, description in SCHEMA_HEADERS.items():
        headers[name] = {"description": description, "schema": {"type": "integer", "minimum": 0}}
    headers["RateLimit-Policy"]["schema"] = {"type": "string"}
    headers["Retry-After"] = {"description": "seconds to wait before trying again", "schema": {"type": "integer", "minimum": 1}}
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for status, response in operation.get("responses", {}).items():
                if status == "401" or "$ref" in response:
                    continue
                named = response.setdefault("headers", {})
                for name in SCHEMA_HEADERS:
                    named.setdefault(name, {"$ref": f"#/components/headers/{name}"})
                if status == "429":
                    named.setdefault("Retry-After", {"$ref": "#/components/headers/Retry-After"})
    return result


def _counter(scope: str, ident: str, period: int, now: float) -> str:
    return f"gradual:throttle:{scope}:{ident}:{int(now // period)}"


#: GET the key's entry; if it is one (not a miss, not a tombstone), count the user's limits too
_KEY_AND_COUNTS = """
local raw = redis.call('GET', KEYS[1])
if not raw or raw == '-' then return {false} end
local uid = string.match(raw, '^(%d+)|')
if not uid then return {false} end
local out = {raw}
for i = 1, #ARGV, 3 do
  local k = ARGV[i] .. uid .. ':' .. ARGV[i + 1]
  local n = redis.call('INCR', k)
  if n == 1 then redis.call('EXPIRE', k, ARGV[i + 2]) end
  out[#out + 1] = n
end
return out
"""


def key_and_counts(request, digest: str):
    """The remembered API key of ``digest`` (None on a miss) and, with it, the request's limits
    counted against the key's user: one Redis round trip. The counts are kept on the request
    for :class:`RateLimits`."""

    view = (getattr(request, "parser_context", None) or {}).get("view")
    now = time.time()
    limits = RateLimits.scopes(view, signed_in=True)
    args = []
    for scope, _, period in limits:
        args += [f"gradual:throttle:{scope}:user:", int(now // period), period + 1]
    try:
        forget_pending()
        reply = shared(lambda client: client.eval(_KEY_AND_COUNTS, 1, cache_key(digest), *args))
    except Unavailable:  # the key is read from the database, the limits counted in this process
        return None
    key = entry_decode(reply[0])
    if key is not None:
        request._request.gradual_counts = (f"user:{key.user_id}", now, [int(n) for n in reply[1:]])
    return key


def _count(windows: list[tuple[str, int]]) -> list[int]:
    """Add one to each window's counter and return the counts: one round trip to Redis, or this
    process's memory without it."""
    try:
        return shared(lambda client: _count_shared(client, windows))
    except Unavailable:
        return _count_here(windows)


def _count_shared(client, windows: list[tuple[str, int]]) -> list[int]:
    pipe = client.pipeline(transaction=False)
    for key, period in windows:
        pipe.incr(key)
        pipe.expire(key, period + 1, nx=True)
    replies = pipe.execute()
    return [int(n) for n in replies[0::2]]


def _count_here(windows: list[tuple[str, int]]) -> list[int]:
    here = local_cache()
    counts = []
    for key, period in windows:
        here.add(key, 0, timeout=period + 1)
        try:
            counts.append(here.incr(key))
        except ValueError:  # expired between add and incr: a new window
            here.add(key, 1, timeout=period + 1)
            counts.append(1)
    return counts
