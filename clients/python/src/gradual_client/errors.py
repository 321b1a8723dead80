"""Exceptions: every error answer of the API becomes one, carrying the API's error code, message and fields.

The API answers every error as ``{"error": {"status", "code", "message", "fields"}}``; ``fields`` maps an
input name to its messages. :func:`error_from_response` turns such an answer into the subclass for its status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import httpx

    from .models import Purchase, Quote


class GradualError(Exception):
    """Base of every error this package raises.

    ``status`` is the HTTP status (0 when no answer came), ``code`` the API's stable code (``invalid``,
    ``invalid_key``, ``insufficient_funds``, ``busy``, ...), ``message`` its words and ``fields`` the inputs
    at fault with their messages."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "error",
        fields: Mapping[str, list[str]] | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields: dict[str, list[str]] = dict(fields or {})
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        head = f"{self.status} {self.code}: {self.message}" if self.status else f"{self.code}: {self.message}"
        if self.fields:
            details = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in self.fields.items())
            return f"{head} ({details})"
        return head


class ValidationError(GradualError):
    """400: invalid input; ``fields`` names each input at fault."""


class AuthenticationError(GradualError):
    """401: no API key where one is needed, or the key is malformed, unknown, revoked or expired."""


class InsufficientFundsError(GradualError):
    """402: not enough credits in your wallet for this step."""


class PermissionDeniedError(GradualError):
    """403: not allowed (a role you lack, demo top-ups off, ...)."""


class NotFoundError(GradualError):
    """404: not found, or not yours."""


class ConflictError(GradualError):
    """409: ``busy`` (your previous step on this listing is still being released: try again after
    ``retry_after`` seconds), ``conflict`` (an idempotency key reused for another purchase), ``too_many_keys``."""


class PriceChangedError(ConflictError):
    """409 ``price_changed``: the step costs more now than the ``max_price`` you sent (its owner changed the
    price); nothing was charged. ``quote`` is the new quote: buy again with ``max_price=quote.price`` to
    accept it."""

    def __init__(self, message: str, *, quote: Quote | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.quote = quote


class PayloadTooLargeError(GradualError):
    """413: the body is too large."""


class RateLimitError(GradualError):
    """429: throttled, or the account is locked; ``retry_after`` gives the seconds to wait."""


class ServerError(GradualError):
    """5xx: a fault on the marketplace's side."""


class NetworkError(GradualError):
    """No answer: the marketplace could not be reached, or the connection broke or timed out."""


class PurchaseFailed(GradualError):
    """A purchase waited for ended failed (it was refunded); ``purchase`` is the purchase, with its
    ``failure_reason``."""

    def __init__(self, purchase: Purchase) -> None:
        super().__init__(purchase.failure_reason or "the release could not be made; the purchase was refunded",
                         code="purchase_failed")
        self.purchase = purchase


class ReleaseTimeout(GradualError):
    """A purchase waited for was still in flight when the wait ended; ``purchase`` is its last state
    (read it again later with ``client.purchase(id)``)."""

    def __init__(self, purchase: Purchase, seconds: float) -> None:
        super().__init__(f"purchase {purchase.id} was still {purchase.status} after {seconds:g} s", code="timeout")
        self.purchase = purchase


BY_STATUS: dict[int, type[GradualError]] = {
    400: ValidationError,
    401: AuthenticationError,
    402: InsufficientFundsError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
}


def retry_after_of(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header as seconds (the API sends whole seconds), or None."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_response(response: httpx.Response) -> GradualError:
    """The exception for an error answer: the API's one error shape when it has it, else the status and text."""
    status = response.status_code
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        code = str(detail.get("code") or "error")
        message = str(detail.get("message") or response.reason_phrase)
        raw_fields = detail.get("fields") or {}
        fields = {
            str(name): [str(m) for m in (messages if isinstance(messages, list) else [messages])]
            for name, messages in (raw_fields.items() if isinstance(raw_fields, dict) else [])
        }
    else:
        code = "server_error" if status >= 500 else "error"
        text = response.text.strip()
        message = (text[:200] if text and not text.startswith("<") else "") or response.reason_phrase or "error"
        fields = {}
    cls = BY_STATUS.get(status, ServerError if status >= 500 else GradualError)
    common: dict[str, Any] = {"status": status, "code": code, "fields": fields, "retry_after": retry_after_of(response),
                              "body": body}
    if status == 409 and code == "price_changed":
        from .models import Quote

        quote = detail.get("quote") if isinstance(detail, dict) else None
        return PriceChangedError(message, quote=Quote.from_json(quote) if isinstance(quote, dict) else None, **common)
    return cls(message, **common)
