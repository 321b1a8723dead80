"""The shared cache (Redis), which no answer depends on: a circuit breaker in front of it.

Redis holds what makes requests fast and limits fair across processes (throttle
counters, remembered API keys, sign-in failures, release flags), and nothing a
request cannot do without. :class:`ResilientRedisCache` is Django's Redis cache
with short socket timeouts and a breaker: the first Redis error is logged
(once per outage), the breaker opens and, for ``COOLDOWN`` seconds, every call
is served by a per-process in-memory cache (the same methods, counted in this
process's memory) without touching Redis; then Redis is tried again. A dead or
hung Redis costs a request milliseconds, never an error.

Code that talks to Redis directly (one Lua script or pipeline per request, the
fast path when Redis is up) goes through :func:`shared`, which raises
:class:`Unavailable` when there is no Redis or the breaker is open; the caller
then does without (the database, a per-process count, sending a task).

Settings (``CACHES["default"]["OPTIONS"]``): ``COOLDOWN`` (seconds, default 5),
and any option of redis-py's connection pool (``socket_timeout``,
``socket_connect_timeout``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

log = logging.getLogger(__name__)
T = TypeVar("T")

#: what a Redis outage raises: redis-py's errors (connection refused, timeouts, a server
#: loading or read-only) and the socket's own
REDIS_ERRORS = (RedisError, OSError)


class Unavailable(Exception):
    """Redis cannot be used right now: none is configured, or it failed within the cool-down."""


class Breaker:
    """One per Redis location and process, shared by its threads (Django makes a cache backend
    per thread). Closed: Redis is used. Open (after a failure): Redis is skipped until the
    cool-down ends; then one call, and only one, tries Redis again (the others keep using the
    process's memory until it answers): a hung Redis costs one request per cool-down one
    socket timeout, not every request."""

    def __init__(self, location: str, cooldown: float):
        self.location = location
        self.cooldown = cooldown
        self.open_until = 0.0
        self.outage = False  # failed, and not yet answered again
        self._lock = threading.Lock()

    def allow(self) -> bool:
        """Whether this call may use Redis (while open: the one trial call after each cool-down)."""
        if not self.outage:
            return True
        with self._lock:
            now = time.monotonic()
            if now < self.open_until:
                return False
            self.open_until = now + self.cooldown  # this call tries; the others wait for its answer
            return True

    def trip(self, exc: BaseException) -> None:
        with self._lock:
            self.open_until = time.monotonic() + self.cooldown
            first, self.outage = not self.outage, True
        if first:
            log.warning(
                "Redis at %s failed (%s: %s): serving from this process's memory, trying Redis again every %gs",
                self.location, type(exc).__name__, exc, self.cooldown,
            )

    def succeeded(self) -> None:
        if self.outage:
            with self._lock:
                ended, self.outage = self.outage, False
            if ended:
                log.warning("Redis at %s answers again: the shared cache is back in use", self.location)

    def reset(self) -> None:
        """Close the breaker at once (an operator's shell, tests)."""
        with self._lock:
            self.open_until, self.outage = 0.0, False


_breakers: dict[str, Breaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(location: str, cooldown: float) -> Breaker:
    with _breakers_lock:
        found = _breakers.get(location)
        if found is None:
            found = _breakers[location] = Breaker(location, cooldown)
        found.cooldown = cooldown
        return found


def _falling_back(name: str):
    """A cache method that calls Redis while the breaker is closed and this process's memory otherwise."""

    def method(self, *args, **kwargs):
        breaker = self.breaker
        if breaker.allow():
            try:
                result = getattr(RedisCache, name)(self, *args, **kwargs)
            except REDIS_ERRORS as exc:
                breaker.trip(exc)
            except Exception:  # Redis answered (e.g. incr of a missing key): the caller's to handle
                breaker.succeeded()
                raise
            else:
                breaker.succeeded()
                return result
        return getattr(self.local, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``{name}`` on Redis, or on this process's memory while Redis is unavailable."
    return method


class _OneClientPerPool(RedisCacheClient):
    """Django's Redis cache client, with one ``redis.Redis`` per connection pool for the process
    instead of a new one per call (building one fills a dict of about 170 reply parsers: a fifth of
    the CPU of a small API request). A ``redis.Redis`` is safe to share between threads: each
    command takes a connection from the pool."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class ResilientRedisCache(RedisCache):
    """Django's Redis cache, falling back to this process's memory while Redis fails (module docstring)."""

    def __init__(self, server, params):
        options = dict(params.get("OPTIONS") or {})
        cooldown = float(options.pop("COOLDOWN", 5))
        options.setdefault("socket_connect_timeout", 0.25)
        options.setdefault("socket_timeout", 0.5)
        super().__init__(server, {**params, "OPTIONS": options})
        self._class = _OneClientPerPool
        location = re.sub(r"//[^/@]*@", "//", ",".join(self._servers))  # logged: never its password
        self.breaker = breaker_for(location, cooldown)
        # one per process and location: LocMemCache keeps its entries in a module-level dict by name
        self.local = LocMemCache(f"gradual-fallback:{location}", {"TIMEOUT": params.get("TIMEOUT", 300)})

    add = _falling_back("add")
    get = _falling_back("get")
    set = _falling_back("set")
    touch = _falling_back("touch")
    delete = _falling_back("delete")
    get_many = _falling_back("get_many")
    has_key = _falling_back("has_key")
    incr = _falling_back("incr")
    set_many = _falling_back("set_many")
    delete_many = _falling_back("delete_many")
    clear = _falling_back("clear")

    def redis(self, operation: Callable[[object], T]) -> T:
        """``operation(client)`` on Redis (a ``redis.Redis`` on the cache's pool); :class:`Unavailable`
        if the breaker is open or the operation fails with a Redis error (which opens it)."""
        breaker = self.breaker
        if not breaker.allow():
            raise Unavailable(f"Redis at {breaker.location} is cooling down after a failure")
        try:
            result = operation(self._cache.get_client(write=True))
        except REDIS_ERRORS as exc:
            breaker.trip(exc)
            raise Unavailable(str(exc)) from exc
        breaker.succeeded()
        return result


def _backend():
    backend = caches["default"]
    return backend if isinstance(backend, ResilientRedisCache) else None


def shared(operation: Callable[[object], T]) -> T:
    """``operation(client)`` on the shared Redis: :class:`Unavailable` when the cache is not Redis
    (the embedded default), or Redis failed now or within the cool-down."""
    backend = _backend()
    if backend is None:
        raise Unavailable("the cache is this process's memory, not a shared Redis")
    return backend.redis(operation)


def local_cache():
    """This process's own cache: the Redis cache's fallback, or the default cache when it is in memory."""
    backend = _backend()
    return backend.local if backend is not None else caches["default"]


def redis_down() -> bool:
    """Whether the shared Redis failed and has not answered since (False without Redis: nothing is
    down). It asks nothing of Redis: calls through the cache and :func:`shared` find out it is back."""
    backend = _backend()
    return backend is not None and backend.breaker.outage
