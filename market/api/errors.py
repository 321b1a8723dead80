"""One error shape for the whole API.

Every error answer is ``{"error": {"status", "code", "message", "fields"}}``:
``fields`` maps an input name to its messages (empty when the error is not
about one input). Domain errors from the services, DRF's own errors, Django's
404 and unexpected failures all take this shape.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from market.core.errors import DomainError

log = logging.getLogger(__name__)


def body(status: int, code: str, message: str, fields: dict | None = None) -> dict:
    return {"error": {"status": status, "code": code, "message": message, "fields": fields or {}}}


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
        return Response(body(exc.status, exc.code, exc.message, exc.fields), status=exc.status)
    if isinstance(exc, Http404):
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
    log.exception("unexpected error in the API", exc_info=exc)
    return Response(body(500, "server_error", "Something went wrong on our side; nothing was charged twice."), status=500)


def not_found(request, exception=None):
    """Django's 404 for paths under /api/ that match no route."""
    return JsonResponse(body(404, "not_found", "Not found."), status=404)
