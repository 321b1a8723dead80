"""Output serializers without DRF's per-instance copies of their fields.

DRF builds a serializer's fields anew for every instance (a deep copy of the declared fields, then
binding each to it) before it writes one. The answers a buyer polls (a purchase, its release and
its readings, a quote) are written hundreds of times a second, and that copying was about a fifth
of the web's CPU per purchase (docs/performance.md). :class:`FastOutput` writes the same
representation from the declared fields themselves, unbound, copied once per class:

* a field's value is read from its ``source`` (its name by default; dotted sources and ``"*"`` too)
  with DRF's own ``get_attribute``, and written by that field's own ``to_representation``;
* a missing value is the field's default, else None where the field allows it, else left out when the
  field is not required (as DRF does);
  ``None`` stays ``None``;
* a ``SerializerMethodField`` calls the serializer's ``get_<name>`` (or its ``method_name``).

Only for output serializers whose fields need no binding (no ``context``-dependent fields, no
hyperlinks): ``tests/marketplace/test_fast_output.py`` writes purchases, releases, readings and quotes of
every mechanism both ways and requires the same JSON.
"""

from __future__ import annotations

import copy

from rest_framework import serializers
from rest_framework.fields import SkipField, empty, get_attribute


class _Plan:
    __slots__ = ("rows",)

    def __init__(self, declared: dict):
        rows = []
        for name, field in declared.items():
            if field.write_only:
                continue
            field = copy.deepcopy(field)  # once per class: this copy is never bound
            if isinstance(field, serializers.SerializerMethodField):
                rows.append((name, None, field.method_name or f"get_{name}", field))
                continue
            source = field.source or name
            attrs = [] if source == "*" else source.split(".")
            rows.append((name, attrs, None, field))
        self.rows = tuple(rows)


class FastOutput:
    """Mixin for a ``serializers.Serializer`` that is only ever written (see the module's text)."""

    _fast_plans: dict = {}
    #: False: write through DRF's own path (tests compare the two)
    enabled = True

    @classmethod
    def _fast_plan(cls) -> _Plan:
        plan = FastOutput._fast_plans.get(cls)
        if plan is None:
            plan = FastOutput._fast_plans[cls] = _Plan(cls._declared_fields)
        return plan

    def to_representation(self, instance):
        if not FastOutput.enabled:
            return serializers.Serializer.to_representation(self, instance)
        out = {}
        for name, attrs, method, field in self._fast_plan().rows:
            if method is not None:
                out[name] = getattr(self, method)(instance)
                continue
            try:
                value = get_attribute(instance, attrs)
            except (KeyError, AttributeError):
                if field.default is not empty:
                    value = field.get_default()
                elif field.allow_null:
                    value = None
                elif not field.required:
                    continue
                else:
                    raise
            except SkipField:
                continue
            out[name] = None if value is None else field.to_representation(value)
        return out
