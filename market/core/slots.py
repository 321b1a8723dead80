"""Concurrency slots: at most N of something at once per key (an owner's uploads, a buyer's waits).

A slot is taken before the costly thing starts and given back when it ends
(:func:`slot_hold`). Several limits are taken together or not at all
(e.g. the owner's and the whole deployment's): with Redis, one script run
per take, each limit a sorted set of holders scored by when their slot
expires, so a process that died holding one frees it after ``ttl`` seconds.
Without Redis, or when Redis fails, each process counts its own holders (a
per-process limit: weaker, never an error); limits marked ``local`` are
always counted that way (e.g. the waits of one process, which share its
threads).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

from .cache import Unavailable
from .cache import shared as in_redis

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    key: str  #: what is counted, e.g. "upload:owner:7"
    allowed: int  #: at most this many holders at once
    local: bool = False  #: counted in this process only (never in Redis)


class SlotsFull(Exception):
    """A limit had no free slot (``limit``); nothing was taken."""

    def __init__(self, limit: Limit):
        super().__init__(f"no free slot under {limit.key} (at most {limit.allowed})")
        self.limit = limit


@dataclass
class Slot:
    token: str
    shared: list[str]  #: the Redis sets it holds a place in
    local: list[str]  #: the keys it counts in this process


_TAKE = """
local now, expires, token = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then return i end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, expires, token)
  redis.call('EXPIRE', key, math.ceil(expires - now) + 1)
end
return 0
"""

_lock = threading.Lock()
_held: Counter[str] = Counter()


def _redis_key(key: str) -> str:
    return f"gradual:slots:{key}"


def _take_local(limits: list[Limit]) -> list[str]:
    with _lock:
        for limit in limits:
            if _held[limit.key] >= limit.allowed:
                raise SlotsFull(limit)
        for limit in limits:
            _held[limit.key] += 1
    return [limit.key for limit in limits]


def _give_local(keys: list[str]) -> None:
    with _lock:
        for key in keys:
            _held[key] -= 1
            if _held[key] <= 0:
                del _held[key]


def slot_take(*, limits: list[Limit], ttl: float) -> Slot:
    """A slot under every one of ``limits``; :class:`SlotsFull` when one of them is full (nothing is taken)."""
    token = uuid.uuid4().hex
    shared = [limit for limit in limits if not limit.local]
    if shared:
        now = time.time()
        keys = [_redis_key(limit.key) for limit in shared]
        allowed = [limit.allowed for limit in shared]
        try:
            full = int(in_redis(lambda client: client.eval(_TAKE, len(keys), *keys, now, now + ttl, token, *allowed)))
        except Unavailable:  # no Redis, or it failed (market.core.cache): counted in this process
            pass
        else:
            if full:
                raise SlotsFull(shared[full - 1])
            try:
                return Slot(token, keys, _take_local([limit for limit in limits if limit.local]))
            except SlotsFull:
                _give_shared(keys, token)
                raise
    return Slot(token, [], _take_local(limits))  # no Redis (or it failed): every limit counted in this process


def _give_shared(keys: list[str], token: str) -> None:
    def give(client):
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.zrem(key, token)
        pipe.execute()

    try:
        in_redis(give)
    except Unavailable:  # it expires by itself after its ttl
        log.warning("could not give back slot %s in Redis", token)


def slot_give(slot: Slot | None) -> None:
    """Give ``slot`` back (None: nothing to give)."""
    if slot is None:
        return
    if slot.shared:
        _give_shared(slot.shared, slot.token)
    if slot.local:
        _give_local(slot.local)


@contextmanager
def slot_hold(*, limits: list[Limit], ttl: float):
    """``with slot_hold(...) as slot``: ``slot`` is None when a limit is full; given back on leaving."""
    try:
        slot = slot_take(limits=limits, ttl=ttl)
    except SlotsFull:
        slot = None
    try:
        yield slot
    finally:
        slot_give(slot)


def slots_held(key: str) -> int:
    """How many slots of ``key`` this process counts itself (tests, diagnostics)."""
    with _lock:
        return _held[key]
