"""Failures of what the marketplace stands on (PostgreSQL, Redis, the Celery broker), told apart
from bugs: an outage is answered 503 with ``Retry-After`` (the API's error handler, the pages'
middleware and error view), never 500.

A lost lock race is not an outage (``market.core.locks.lost_race``: 409, run again), nor is a
statement the database refused; a database connection that broke (:func:`database_gone`), a Redis
error that escaped the cache's breaker (``market.core.cache``) and a broker that cannot be reached are.
"""

from __future__ import annotations

import logging

from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
)

from .errors import ServiceUnavailable
from .locks import lost_race

log = logging.getLogger(__name__)

#: what the answer says: the request may be repeated; a purchase's Idempotency-Key keeps that safe
MESSAGE = (
    "the marketplace could not reach its database or cache just now; try again in a few seconds "
    "(a purchase repeated with the same Idempotency-Key is never charged twice)"
)


def _transient() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import RedisError

    return (RedisError, BrokerError, ConnectionError, TimeoutError)


#: SQLSTATEs of a database that went away: connection_exception (class 08), admin_shutdown,
#: crash_shutdown, cannot_connect_now, too_many_connections, idle_in_transaction_session_timeout
GONE_SQLSTATES = {"57P01", "57P02", "57P03", "53300", "25P03"}


def database_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is the database connection failing (closed, reset, refused, terminated),
    not a statement the database refused (a lost race, a full disk, a bug)."""
    if isinstance(exc, InterfaceError):  # Django's or psycopg's "connection already closed"
        return True
    if not isinstance(exc, OperationalError) or lost_race(exc):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    if sqlstate is None:  # psycopg: the connection itself failed, with no answer from the server
        return connection.vendor == "postgresql"
    return sqlstate.startswith("08") or sqlstate in GONE_SQLSTATES


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is a dependency that did not answer, rather than a bug or a lost race."""
    return database_gone(exc) or isinstance(exc, _transient())


def unavailable(exc: BaseException | None = None) -> ServiceUnavailable:
    """The 503 an outage is answered with (``exc``: its cause, kept for the log)."""
    answer = ServiceUnavailable(MESSAGE)
    answer.__cause__ = exc
    return answer


def note(request, exc: BaseException) -> None:
    """Remember on ``request`` (Django's, or DRF's around it) that it failed because its database
    connection was lost, so that :class:`RetryReadsMiddleware` may run it once more."""
    if database_gone(exc):
        getattr(request, "_request", request).gradual_database_gone = True


class RetryReadsMiddleware:
    """A read (GET or HEAD) that failed because its database connection was lost (a restart, a
    failover, a terminated session) runs once more on a fresh connection instead of answering 503:
    it changed nothing, so running it again is safe. Writes are never run again here (a purchase
    settles its own lost connections: ``market.trading.services``), nor is anything inside a
    transaction that is still open. Placed near the top of ``MIDDLEWARE``: what is below it runs again."""

    SAFE = frozenset({"GET", "HEAD"})

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.method not in self.SAFE or not getattr(request, "gradual_database_gone", False):
            return response
        opened = connections.all(initialized_only=True)
        if any(conn.in_atomic_block for conn in opened):
            return response
        request.gradual_database_gone = False
        for conn in opened:
            try:
                conn.close()
            except DatabaseError:  # already broken: it is gone either way
                pass
        log.warning("%s %s lost its database connection: run again on a fresh one", request.method, request.path)
        return self.get_response(request)
