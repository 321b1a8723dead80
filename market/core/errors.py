"""Errors the services raise. The API and the pages turn them into one shape.

Each carries a stable ``code``, a plain-language ``message`` and, where the
error is about particular inputs, ``fields`` (name -> list of messages).
"""

from __future__ import annotations


def error_body(status: int, code: str, message: str, fields: dict | None = None) -> dict:
    """The one error shape of the API: ``{"error": {"status", "code", "message", "fields"}}``."""
    return {"error": {"status": status, "code": code, "message": message, "fields": fields or {}}}


class DomainError(Exception):
    status = 400
    code = "invalid"
    #: seconds after which trying again may succeed (sent as ``Retry-After``); None: not a matter of time
    retry_after: int | None = None

    def __init__(
        self,
        message: str,
        *,
        fields: dict[str, list[str]] | None = None,
        code: str | None = None,
        retry_after: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.fields = fields or {}
        if code:
            self.code = code
        if retry_after is not None:
            self.retry_after = retry_after


class InvalidInput(DomainError):
    status = 400
    code = "invalid"


class NotFound(DomainError):
    """Also used for things that exist but belong to someone else: 404, never 403."""

    status = 404
    code = "not_found"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class Busy(Conflict):
    """A step that cannot be taken right now (a purchase still being released, a lost lock race):
    409 with ``Retry-After``; nothing was changed."""

    code = "busy"
    retry_after = 1


class PriceChanged(Conflict):
    """The price of a step rose above what the buyer agreed to pay (``max_price``): 409, nothing was
    charged. ``quote`` is the new quote (``market.trading.services.Quote``), shown with the error
    so that the buyer can confirm again."""

    code = "price_changed"

    def __init__(self, message: str, *, quote, **kwargs):
        super().__init__(message, **kwargs)
        self.quote = quote


class OffsetMismatch(Conflict):
    """A part of a resumable upload does not start where the upload stands: 409, nothing was kept.
    ``received`` (in the error, as ``extra``) is where the next part must start."""

    code = "offset_mismatch"

    def __init__(self, message: str, *, received: int, **kwargs):
        super().__init__(message, **kwargs)
        self.extra = {"received": received}


class InsufficientFunds(DomainError):
    status = 402
    code = "insufficient_funds"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class TooManyAttempts(DomainError):
    """Refused for a while (e.g. a locked sign-in): ``retry_after`` is the seconds to wait."""

    status = 429
    code = "too_many_attempts"

    def __init__(self, message: str, *, retry_after: int, **kwargs):
        super().__init__(message, retry_after=retry_after, **kwargs)


class ServiceUnavailable(DomainError):
    """The database or Redis did not answer (a lost connection, a restart): 503 with ``Retry-After``.
    Never raised after a charge: a purchase that committed is answered with what is known."""

    status = 503
    code = "unavailable"
    retry_after = 2
