"""The product's one lock order, and the retry that keeps a lost race away from clients.

Every row lock is taken through a helper in a ``locks.py`` module of the app
that owns the row (``market/accounts/locks.py``, ``market/catalog/locks.py``, ``market/trust/locks.py``,
``market/trading/locks.py``, ``market/ledger/locks.py``,
``releases/locks.py``). Each helper announces its :class:`Rank` to
:func:`taken`; within one transaction locks are taken in increasing rank,
never back down, so no two transactions can each hold what the other waits
for. Rows of one rank are locked in id order.

=========  ==========================================  =====================
rank       rows                                        mode
=========  ==========================================  =====================
USER       a user (their API-key writes take turns)    FOR NO KEY UPDATE
API_KEY    an API key                                  FOR UPDATE
NETWORK    an owner's trust network                    FOR UPDATE
UPLOAD     an owner's resumable upload session         FOR UPDATE
DATASET    a dataset (its listings' budget; its        FOR UPDATE (purchases
           trust-capped sales)                         FOR NO KEY UPDATE)
LISTING    a listing (ceiling, open)                   FOR SHARE in purchases
PATH       a listing's noise path                      FOR UPDATE
HOLDING    a buyer's holding on a listing              FOR UPDATE
PURCHASE   a purchase                                  FOR UPDATE
ACCOUNT    ledger accounts, in id order                FOR UPDATE
PAYOUT     an owner's payout (staff mark it paid)      FOR UPDATE
WEBHOOK    a webhook endpoint or delivery (alone)      FOR UPDATE
=========  ==========================================  =====================

A purchase locks only the account it takes from (the buyer's wallet: its
balance is checked); the owner's earnings account it pays into is locked by
the balance update of the transfer's legs, its last write, so that a
listing's sales hold that row only from that write to the commit. No cycle can
form: a refund of that buyer on that listing, which takes from the earnings,
first holds their holding, which such a purchase takes before the wallet.

A purchase takes only a *share* lock on its listing: purchases on one listing
run side by side, and the listing's ceiling and ``is_open`` cannot change
under them (an owner's change waits for them, then the database triggers
check it against what was sold). Foreign-key checks, which PostgreSQL makes
at commit with ``FOR KEY SHARE``, never conflict with a share lock, so a
release committing while a purchase waits for the same holding cannot
deadlock with it.

A purchase on a trust-capped listing first locks its dataset's row (``FOR NO
KEY UPDATE``, ``market.catalog.locks.dataset_sales_lock``): every trust
tier's cap is shared by all its buyers across the dataset's capped listings,
so purchases on them take turns per dataset, whoever the buyers. Purchases on
listings that are not capped never take it.

Whatever still loses a race (a deadlock the database breaks, a serialization
failure, a lock not granted within the connection's ``lock_timeout``) is run
again by :func:`retrying`, a few times with jittered back-off; if it keeps
losing, the caller gets :class:`~market.core.errors.Busy` (409 with
``Retry-After``), never a 5xx.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from django.db import OperationalError, connection

from .errors import Busy

log = logging.getLogger(__name__)
T = TypeVar("T")


class Rank(enum.IntEnum):
    USER = 1
    API_KEY = 2
    NETWORK = 10
    UPLOAD = 15
    DATASET = 20
    LISTING = 30
    PATH = 40
    HOLDING = 50
    PURCHASE = 60
    ACCOUNT = 70
    PAYOUT = 80
    WEBHOOK = 90


class LockOrderError(AssertionError):
    """A lock was taken below one already held in the same transaction (a recorder is watching)."""


_local = threading.local()


def taken(rank: Rank, what: str) -> None:
    """Called by every lock helper just before it locks. Free unless a :func:`recording` is active."""
    log_ = getattr(_local, "log", None)
    if log_ is not None:
        log_.append((rank, what))


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[Rank, str]]]:
    """Record the locks the code inside takes, in order (tests check the order with :func:`check_order`)."""
    previous = getattr(_local, "log", None)
    _local.log = []
    try:
        yield _local.log
    finally:
        _local.log = previous


def released(what: str) -> None:
    """Called when a transaction that took locks rolled back on purpose, to run again with others
    (a purchase that found its listing trust-capped): its locks are gone, so a recorder starts over."""
    log_ = getattr(_local, "log", None)
    if log_ is not None:
        log_.append((None, what))


def check_order(locks: list[tuple[Rank | None, str]]) -> None:
    """Raise :class:`LockOrderError` unless ``locks`` never goes down in rank (within each
    transaction: a :func:`released` mark starts a new one)."""
    for (r1, w1), (r2, w2) in zip(locks, locks[1:]):
        if r1 is not None and r2 is not None and r2 < r1:
            raise LockOrderError(f"{w2} ({r2.name}) locked after {w1} ({r1.name}): against the lock order")


#: SQLSTATEs of a lost race: deadlock_detected, serialization_failure, lock_not_available
RETRYABLE_SQLSTATES = {"40P01", "40001", "55P03"}


def lost_race(exc: BaseException) -> bool:
    """Whether ``exc`` is the database breaking a lock conflict (worth running the transaction again)."""
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES:
        return True
    # SQLite: "database is locked" (another writer past the timeout), "database table is locked"
    # (shared-cache in-memory databases, as in tests)
    return connection.vendor == "sqlite" and "is locked" in str(exc)


def retrying(work: Callable[[], T], *, attempts: int = 5, base_delay: float = 0.02, what: str = "request") -> T:
    """Run ``work`` (which opens its own transaction) until it does not lose a race.

    Up to ``attempts`` runs with full-jitter exponential back-off between
    them. Inside an enclosing transaction a lost race cannot be retried (the
    outer transaction is broken), so it is reported as :class:`Busy` at once.
    """
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except OperationalError as exc:
            if not lost_race(exc):
                raise
            if connection.in_atomic_block or attempt == attempts:
                log.warning("%s lost a lock race %d time(s); answering busy: %s", what, attempt, exc)
                raise Busy(
                    f"the marketplace is busy with this {what} right now; nothing was changed, try again in a moment",
                    retry_after=1,
                ) from exc
            log.info("%s lost a lock race (attempt %d), running it again: %s", what, attempt, exc)
            time.sleep(random.uniform(0, base_delay * 2**attempt))
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------
# row-locking reads written once
#
# The row locks every purchase and release takes (a holding, the buyer's wallet, a listing's noise
# path) are reads whose SQL is written once per process (``market.core.reads.Prepared``: Django
# compiles a queryset's SQL on every evaluation, which cost more CPU than the statement itself,
# 0.44 ms against 0.15 ms for a holding in ``bench/load/phases.py``). The lock clause is
# PostgreSQL's; elsewhere the queryset each stands for runs (``fallback``), as Django's
# ``select_for_update()`` leaves the clause out on SQLite, where a write transaction already has
# the database to itself.

MODES = {"update": "FOR UPDATE", "no key update": "FOR NO KEY UPDATE", "share": "FOR SHARE"}


class LockedRows:
    """``LockedRows(Holding, where='t."buyer_id" = %s AND t."listing_id" = %s', fallback=...)``;
    ``.one(params)``: the locked row as a model instance, or None. The locked table's alias is
    ``t``. ``extra``: more selected expressions, each ``(sql, attribute)``, set on the instance (their
    parameters come first). ``joined``: rows read beside it, not locked, each ``(model, alias,
    excluded fields, "JOIN ... ON ...")``: ``.one`` then gives the tuple of instances. ``exclude``:
    the locked row's fields not read (left deferred)."""

    def __init__(self, model, *, where: str, fallback, mode: str = "update", extra: tuple = (), joined: tuple = (),
                 exclude: tuple = ()):
        from .reads import Prepared

        joins = " ".join(join for *_, join in joined)
        self.fallback = fallback
        self.extra = [attribute for _, attribute in extra]
        self.parts = 1 + len(joined)
        self.read = Prepared(
            select=[(model, "t", exclude), *[(m, alias, excluded) for m, alias, excluded, _ in joined]],
            extra=[sql for sql, _ in extra],
            sql=f'FROM "{model._meta.db_table}" t {joins} WHERE {where} {MODES[mode]} OF t',
            fallback=fallback,
        )

    def one(self, params):
        """The row (locked), or None; elsewhere than PostgreSQL, ``fallback(*params)``."""
        if connection.vendor != "postgresql":
            return self.fallback(*params)
        found = self.read.one(params)
        if found is None:
            return None
        for attribute, value in zip(self.extra, found[self.parts] if self.extra else ()):
            setattr(found[0], attribute, value)
        return found[0] if self.parts == 1 else found[:self.parts]
