"""Announcing that an operation goes away: ``Deprecation`` (RFC 9745), ``Sunset`` (RFC 8594) and
``Link`` headers on its answers, and ``deprecated: true`` in the schema.

Mark a view (every method) or one of its methods::

    @deprecated(since=date(2027, 1, 1), sunset=date(2027, 7, 1), link="https://…/changelog#…")
    class OldView(APIView): ...

or set the attribute by hand, ``deprecated = {"since": ..., "sunset": ..., "link": ...}``
(the headers then come, but only the decorator marks the schema). The versioning
policy in docs/api.md says how long before the sunset an operation is marked.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, time, timezone

from django.utils.http import http_date
from drf_spectacular.utils import extend_schema


@dataclass(frozen=True)
class Deprecation:
    since: date  # when it was (or will be) deprecated
    sunset: date  # from this day on it may stop answering
    link: str  # where the change and what to use instead are explained

    def headers(self) -> dict[str, str]:
        return {
            "Deprecation": f"@{calendar.timegm(_midnight(self.since).timetuple())}",
            "Sunset": http_date(calendar.timegm(_midnight(self.sunset).timetuple())),
            "Link": f'<{self.link}>; rel="deprecation"; type="text/html"',
        }


def _midnight(day: date) -> datetime:
    if isinstance(day, datetime):
        return day.astimezone(timezone.utc)
    return datetime.combine(day, time(0, 0), tzinfo=timezone.utc)


def _coerce(value) -> Deprecation | None:
    if value is None or isinstance(value, Deprecation):
        return value
    return Deprecation(**value)


def deprecated(*, since: date, sunset: date, link: str):
    """Class or method decorator: the answers carry the headers; the schema says ``deprecated``."""
    if sunset <= since:
        raise ValueError("the sunset comes after the deprecation")
    info = Deprecation(since=since, sunset=sunset, link=link)

    def mark(target):
        target.deprecated = info
        return extend_schema(deprecated=True)(target)

    return mark


def deprecation_of(view_func, method: str) -> Deprecation | None:
    """The deprecation of the operation ``view_func`` answers for ``method``: the method's own, else
    its view's; None for an operation that is not deprecated."""
    view_class = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None)
    if view_class is None:
        return None
    handler = getattr(view_class, method.lower(), None)
    return _coerce(getattr(handler, "deprecated", None)) or _coerce(getattr(view_class, "deprecated", None))
