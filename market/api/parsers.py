"""Request parsers for the whole API: bodies are judged before Python's own decoders see them.

- JSON (``StrictJSONParser``): at most ``API_JSON_MAX_BYTES`` bytes (else 413), nested at
  most ``API_JSON_MAX_DEPTH`` arrays/objects deep (else 400: the depth is measured on the raw
  text, before ``json`` could recurse and fail), and only finite numbers: ``NaN``,
  ``Infinity`` and numbers that overflow a float (``1e309``) are 400.
- Forms and multipart (``LimitedFormParser``, ``LimitedMultiPartParser``): a body longer
  than the upload limit (``UPLOAD_MAX_BYTES`` and room for the form's other fields) is 413
  before it is read; Django's own limits (field count, files) are 400.
- A part of a resumable upload (``UploadPartParser``, ``application/octet-stream``): at most
  ``UPLOAD_PART_MAX_BYTES`` bytes (else 413).

Every refusal is an ``APIException``, so the error handler gives it the API's error shape.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from rest_framework import parsers, status
from rest_framework.exceptions import APIException, ParseError


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is too large."


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The request body is too large: at most {limit} bytes.")


def _declared_length(parser_context) -> int | None:
    request = (parser_context or {}).get("request")
    meta = getattr(request, "META", {}) if request is not None else {}
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except (TypeError, ValueError):
        return None


def _read_at_most(stream, limit: int) -> bytes:
    """The body, or 413 as soon as it is known to be longer than ``limit``."""
    if stream is None:
        return b""
    try:
        data = stream.read(limit + 1)
    except RequestDataTooBig:
        raise _too_large(limit) from None
    if len(data) > limit:
        raise _too_large(limit)
    return data


#: a JSON string, escapes included (possessive: linear time, no backtracking)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
#: brackets as steps of depth: opening +1, closing -1, anything else dropped
_OPENERS, _CLOSERS = b"[{", b"]}"
_STEPS = bytes.maketrans(_OPENERS + _CLOSERS, b"\x01\x01\xff\xff")
_OTHER = bytes(set(range(256)) - set(_OPENERS + _CLOSERS))


def json_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in a JSON text (0 for a bare value), read off its
    brackets outside strings: no recursion, linear in the body's size."""
    brackets = _STRING.sub(b"", data).translate(_STEPS, _OTHER)
    if not brackets:
        return 0
    return int(np.frombuffer(brackets, dtype=np.int8).astype(np.int64).cumsum().max())


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:30]} is too large")
    return number


class StrictJSONParser(parsers.JSONParser):
    """JSON within the size and depth limits, with finite numbers only."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_JSON_MAX_BYTES
        declared = _declared_length(parser_context)
        if declared and declared > limit:
            raise _too_large(limit)
        data = _read_at_most(stream, limit)
        depth_limit = settings.API_JSON_MAX_DEPTH
        if json_depth(data) > depth_limit:
            raise ParseError(f"JSON parse error - arrays and objects nest more than {depth_limit} deep.")
        try:
            text = data.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
            return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        except (ValueError, UnicodeError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _django_limits(parse, *, files: bool = False):
    """Django's own form limits as API errors: too much data 413, too many fields or files 400.
    A multipart body may carry a file up to ``UPLOAD_MAX_BYTES`` (streamed to a temporary file
    and stopped there by ``market.catalog.uploads``) and fields up to ``DATA_UPLOAD_MAX_MEMORY_SIZE``."""

    def wrapped(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + (settings.UPLOAD_MAX_BYTES if files else 0)
        declared = _declared_length(parser_context)
        if declared and declared > limit:
            raise _too_large(limit)
        try:
            parsed = parse(self, stream, media_type, parser_context)
        except RequestDataTooBig:
            raise _too_large(limit) from None
        except SuspiciousOperation as exc:  # TooManyFieldsSent, TooManyFilesSent, a bad boundary
            raise ParseError(f"Form parse error - {exc}") from None
        request = getattr((parser_context or {}).get("request"), "_request", None)
        stopped = getattr(request, "upload_too_large", None)
        if files and stopped:  # a file stopped at UPLOAD_MAX_BYTES by market.catalog.uploads
            raise PayloadTooLarge(f"The file is larger than the limit of {stopped:,} bytes.")
        return parsed

    return wrapped


class LimitedFormParser(parsers.FormParser):
    parse = _django_limits(parsers.FormParser.parse)


class LimitedMultiPartParser(parsers.MultiPartParser):
    parse = _django_limits(parsers.MultiPartParser.parse, files=True)


class UploadPartParser(parsers.BaseParser):
    """A part of a resumable upload (``PUT uploads/{id}/``): raw bytes, at most
    ``UPLOAD_PART_MAX_BYTES`` (413 as soon as it is known to be longer: from its declared length
    before reading, else after reading one byte more than the limit)."""

    media_type = "application/octet-stream"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.UPLOAD_PART_MAX_BYTES
        declared = _declared_length(parser_context)
        if declared and declared > limit:
            raise _too_large(limit)
        return _read_at_most(stream, limit)
