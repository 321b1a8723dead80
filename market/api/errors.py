"""One error shape for the whole API.

Every error answer is ``{"error": {"status", "code", "message", "fields"}}``:
``fields`` maps an input name to its messages (empty when the error is not
about one input). Domain errors from the services, DRF's own errors, Django's
404 and unexpected failures all take this shape.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse, UnreadablePostError
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions
from rest_framework.response import Response

from market.core.bodies import BodyTimeout
from market.core.errors import Busy, DomainError, PriceChanged, error_body
from market.core.locks import lost_race
from market.core.outages import is_outage, note, unavailable

from .parsers import PayloadTooLarge
from .serializers import ErrorSerializer, QuoteSerializer

log = logging.getLogger(__name__)


#: what each error status means, as the schema documents it
MEANINGS = {
    400: "Invalid input: `fields` names each input at fault, with its messages.",
    401: "Not signed in (this operation needs a token), or the token sent is not valid.",
    402: "Not enough credits in your wallet for this step.",
    403: "Not allowed: e.g. not an owner, demo top-ups are off, or a session request without its CSRF token.",
    404: "Not found, or not yours (another user's rows do not exist for you); on a list, a page past the end.",
    409: "Conflict. `busy`: your previous purchase on this listing is still being released, or the marketplace "
    "is busy with this listing; nothing was changed, try again after the `Retry-After` seconds. `conflict`: the "
    "Idempotency-Key was used for a different purchase.",
    413: "The request body is too large (JSON bodies: API_JSON_MAX_BYTES; uploads: UPLOAD_MAX_BYTES).",
    408: "The request body did not arrive in time (see docs/operations.md, Web servers): nothing was kept; "
    "the connection is closed.",
    415: "Unsupported media type: send the Content-Type this operation documents.",
    429: "Too many requests: the `Retry-After` header gives the seconds to wait.",
    503: "The database or cache did not answer just now: try again after the `Retry-After` seconds. A purchase "
    "answered 503 was not charged (one that was is answered 202); repeating it with the same Idempotency-Key "
    "is safe either way.",
}

#: the 409 of ``POST purchases/``, which may carry the new quote
PRICE_CHANGED_MEANING = (
    "Conflict. `price_changed`: the step costs more than your `max_price` now (its owner changed the price); "
    "nothing was charged, and `quote` is the new quote: confirm its price as `max_price` to buy. "
    + MEANINGS[409].removeprefix("Conflict. ")
)


def documented(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error answers of one operation, for its schema (``extend_schema(responses=...)``):
    ``statuses`` plus 401, 429 and 503, which any request may get. All share the ``Error`` component."""
    return {code: OpenApiResponse(ErrorSerializer, description=MEANINGS[code])
            for code in sorted({401, 429, 503, *statuses})}


body = error_body


def documented_purchase(*statuses: int) -> dict[int, OpenApiResponse]:
    """:func:`documented` for ``POST purchases/``, whose 409 may be ``price_changed`` (with ``quote``)."""
    answers = documented(*statuses)
    answers[409] = OpenApiResponse(ErrorSerializer, description=PRICE_CHANGED_MEANING)
    return answers


def _flatten(detail) -> tuple[str, dict]:
    """DRF's nested error detail -> (first message, {field: [messages]})."""
    if isinstance(detail, dict):
        fields = {}
        for name, value in detail.items():
            if isinstance(value, dict):
                _, inner = _flatten(value)
                fields.update({f"{name}.{k}": v for k, v in inner.items()})
            else:
                items = value if isinstance(value, list) else [value]
                fields[name] = [str(v) for v in items]
        general = fields.pop("non_field_errors", None)
        if general:
            return general[0], fields
        first = next(iter(fields.items()), None)
        message = f"{first[0]}: {first[1][0]}" if first else "invalid input"
        return message, fields
    if isinstance(detail, list):
        return (str(detail[0]) if detail else "invalid input"), {}
    return str(detail), {}


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        answer = body(exc.status, exc.code, exc.message, exc.fields)
        if isinstance(exc, PriceChanged):  # the new quote, to confirm again
            answer["error"]["quote"] = QuoteSerializer(exc.quote).data
        answer["error"].update(getattr(exc, "extra", None) or {})  # e.g. offset_mismatch's received
        response = Response(answer, status=exc.status)
        if exc.retry_after is not None:
            response["Retry-After"] = str(int(exc.retry_after))
        return response
    if isinstance(exc, UnreadablePostError):  # the body stopped coming, or came too slowly (market.core.bodies)
        message = str(exc) if isinstance(exc.__cause__, BodyTimeout) else "The request body stopped arriving."
        return Response(body(408, "request_timeout", f"{message[:1].upper()}{message[1:]}."), status=408)
    if isinstance(exc, RequestDataTooBig):  # Django's own limit, met before a parser could judge
        exc = PayloadTooLarge()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.messages)
    if isinstance(exc, exceptions.APIException):
        message, fields = _flatten(exc.detail)
        code = exc.get_codes()
        code = code if isinstance(code, str) else ("invalid" if fields else exc.default_code)
        response = Response(body(exc.status_code, code, message, fields), status=exc.status_code)
        if isinstance(exc, exceptions.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            response["WWW-Authenticate"] = auth_header
        return response
    if is_outage(exc):  # the database or Redis did not answer: try again shortly, never a 500
        log.warning("a dependency did not answer: %s: %s", type(exc).__name__, exc)
        if context.get("request") is not None:
            note(context["request"], exc)  # a read is run once more on a fresh connection
        return exception_handler(unavailable(exc), context)
    if lost_race(exc):  # a lock race a service did not run again itself: busy, not broken
        log.warning("a lost lock race reached the API's error handler: %s", exc)
        busy = Busy("the marketplace is busy right now; nothing was changed, try again in a moment")
        return exception_handler(busy, context)
    log.exception("unexpected error in the API", exc_info=exc)
    return Response(body(500, "server_error", "Something went wrong on our side; nothing was charged twice."), status=500)


@csrf_exempt  # it changes nothing: a POST or PATCH to no route is a JSON 404 too, not the CSRF page's HTML 403
def not_found(request, exception=None):
    """Django's 404 for paths under /api/ that match no route."""
    return JsonResponse(body(404, "not_found", "Not found."), status=404)
