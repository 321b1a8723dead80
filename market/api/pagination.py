"""Cursor pagination for every list in the API.

Every list answers ``{"next": url | null, "previous": url | null, "results": [...]}``. A page
is read by position (keyset), never by offset: ``cursor`` holds the ordering values of the row
a page starts after (or, going back, before), sealed by ``market.core.crypto`` and bound to the
list's path and ordering, so it is opaque, cannot be altered, and a cursor of one list is no
cursor of another (each is a 400 in the API's error shape, never silently the first page).

The order is the list's own (its selector's ``order_by``, else the model's ``Meta.ordering``),
made unique by adding the primary key when it is not already there. Rows added or removed
between two pages therefore never repeat or skip any other row.

A list whose rows carry a window function (a statement's running ``balance_after``) has its
position compared after the window is computed over all the rows (the cursor's values are
window expressions too, so Django filters them around the query), so every page's running
balances are those of the whole statement.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from datetime import date, datetime
from decimal import Decimal
from uuid import UUID

from django.db.models import F, Max, Q, Window
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from market.core import crypto

_KEY = "_cursor_{}"


def ordering_of(queryset) -> tuple[str, ...]:
    """The queryset's ordering as field names ("-created_at", "id"), ending with the primary key."""
    query = queryset.query
    ordering = list(query.order_by) or list(query.get_meta().ordering or [])
    for name in ordering:
        if not isinstance(name, str) or name.lstrip("-") == "?":
            raise TypeError(f"a paginated list is ordered by field names, not {name!r}")
    pk = query.get_meta().pk.name
    names = {name.lstrip("-") for name in ordering}
    if not names & {"pk", pk}:
        ordering.append(("-" if ordering and ordering[-1].startswith("-") else "") + "pk")
    return tuple(ordering)


def _encode(value):
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        if value is None:
            raise TypeError("a paginated list is not ordered by a field that may be null")
        return value
    raise TypeError(f"cannot hold {type(value).__name__} in a cursor")


class CursorPagination(BasePagination):
    page_size = 20
    max_page_size = 100
    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    invalid_cursor_message = "Invalid cursor: follow the next and previous links as given (or start again without a cursor)."

    def get_page_size(self, request) -> int:
        """The page size asked for, 1 to 100; anything else is a 400 (not silently the default)."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= self.max_page_size):
            raise ValidationError({self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]})
        return int(raw)

    # --- the cursor: (backwards?, values), sealed and bound to the list's path and ordering
    def _context(self) -> bytes:
        return b"api-cursor|" + self.request.path.encode() + b"|" + ",".join(self.ordering).encode()

    def _cursor(self, *, backwards: bool, values: list) -> str:
        payload = json.dumps({"b": backwards, "v": values}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(crypto.seal(payload, context=self._context())).decode().rstrip("=")

    def _position(self, request):
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None
        try:
            blob = base64.urlsafe_b64decode(raw.encode("ascii") + b"=" * (-len(raw) % 4))
            payload = json.loads(crypto.unseal(blob, context=self._context()))
            backwards, values = payload["b"], payload["v"]
            if not isinstance(backwards, bool) or not isinstance(values, list) or len(values) != len(self.ordering):
                raise ValueError("malformed")
        except (UnicodeEncodeError, binascii.Error, ValueError, KeyError, TypeError, crypto.CryptoError):
            raise ValidationError({self.cursor_query_param: [self.invalid_cursor_message]}) from None
        return backwards, values

    # --- the page
    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.page_size = self.get_page_size(request)
        self.ordering = ordering_of(queryset)
        position = self._position(request)
        windowed = any(getattr(a, "contains_over_clause", False) for a in queryset.query.annotations.values())
        keys = {}
        for i, name in enumerate(self.ordering):
            field = name.lstrip("-")
            # a window's own value: compared after the statement's windows are computed over every row
            keys[_KEY.format(i)] = Window(Max(field), partition_by=[F("pk")]) if windowed else F(field)
        queryset = queryset.annotate(**keys)
        backwards = bool(position and position[0])
        if position is not None:
            queryset = queryset.filter(self._beyond(position[1], backwards))
        order = [self._direction(i, backwards) for i in range(len(self.ordering))]
        rows = list(queryset.order_by(*order)[: self.page_size + 1])
        more = len(rows) > self.page_size
        rows = rows[: self.page_size]
        if backwards:
            rows.reverse()
        self.rows = rows
        self.next_link = self.previous_link = None
        if backwards:
            self.next_link = self._link(rows[-1], backwards=False) if rows else self._first()
            self.previous_link = self._link(rows[0], backwards=True) if more else None
        else:
            self.next_link = self._link(rows[-1], backwards=False) if more else None
            self.previous_link = self._link(rows[0], backwards=True) if position is not None and rows else None
        return rows

    def _direction(self, i: int, backwards: bool) -> str:
        descending = self.ordering[i].startswith("-") != backwards
        return ("-" if descending else "") + _KEY.format(i)

    def _beyond(self, values: list, backwards: bool) -> Q:
        """The rows after ``values`` in the list's order (before them, backwards)."""
        condition = Q(pk__in=[])
        for i in range(len(self.ordering)):
            descending = self.ordering[i].startswith("-") != backwards
            step = Q(**{f"{_KEY.format(i)}__{'lt' if descending else 'gt'}": values[i]})
            for j in range(i):
                step &= Q(**{_KEY.format(j): values[j]})
            condition |= step
        return condition

    def _link(self, row, *, backwards: bool) -> str:
        values = [_encode(getattr(row, _KEY.format(i))) for i in range(len(self.ordering))]
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.cursor_query_param, self._cursor(backwards=backwards, values=values))

    def _first(self) -> str:
        return remove_query_param(self.request.build_absolute_uri(), self.cursor_query_param)

    def get_paginated_response(self, data):
        return Response(OrderedDict([("next", self.next_link), ("previous", self.previous_link), ("results", data)]))

    def get_paginated_response_schema(self, schema):
        link = {"type": "string", "format": "uri", "nullable": True}
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "next": {**link, "description": "the next page (null on the last page)"},
                "previous": {**link, "description": "the page before (null on the first page)"},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "where a page starts: opaque, taken from the next or previous link of the page before",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"rows per page (default {self.page_size})",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
            },
        ]


#: the name settings.REST_FRAMEWORK used before cursors
Pagination = CursorPagination
