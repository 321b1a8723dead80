"""The JSON inputs a listing is made of (statistics, price curves, compensation, targets) and their schemas."""

import re
from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from jsonschema import Draft4Validator
from jsonschema.exceptions import best_match
from rest_framework import serializers

from market.catalog.spec import statistic_schema

from .statistic_errors import statistics_errors
from .base import _FRACTION, _PLACES4, MONEY_PATTERN


def _kind(kind: str) -> dict:
    """A price curve's ``kind``: a plain one-value enum, one component (``LinearPriceCurveKind``)
    shared by the curve as sent and as shown (``market.api.schema.named_schemas``)."""
    return {"title": f"{kind.capitalize()}PriceCurveKind", "type": "string", "enum": [kind]}


def _object(kind: str, required: dict, description: str) -> dict:
    """An object schema of one kind of price curve as sent, with no other properties; its title
    (``LinearPriceCurveRequest``) names its component in the API's schema."""
    return {
        "title": f"{kind.capitalize()}PriceCurveRequest",
        "type": "object",
        "description": description,
        "properties": {"kind": _kind(kind), **required},
        "required": ["kind", *required],
        "additionalProperties": False,
    }


_NUMBER = {"type": "number"}
_COLUMNS = {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 16}
#: one statistic of a listing, as sent and as stored: the union of the kinds' own schemas
#: (``market/catalog/spec/kinds/``, ``Kind.schema``)
STATISTIC_SCHEMA = statistic_schema()


def _positive(whole: str, top: str | None = None) -> dict:
    """Decimal text above 0 with at most 4 places: below 1, or a whole part matching ``whole``,
    or exactly ``top`` (the largest value: "1000", "1000.0", ...)."""
    top = rf"{top}(?:\.0{{1,4}})?|" if top else ""
    return {"type": "string", "pattern": rf"^(?:{top}(?:{whole}){_PLACES4}|{_FRACTION})$"}


#: numbers in price curves and cost models are decimal text, in the ranges the pricing accepts
_PRICE_SCALE = {"type": "string", "pattern": MONEY_PATTERN}  # c: credits, at most 2 places
_UP_TO_1000 = _positive(r"[1-9][0-9]{0,2}", top="1000")
PRICE_CURVE_SCHEMA = {
    "oneOf": [
        _object("linear", {"c": _PRICE_SCALE}, description="P(eps) = c * eps"),
        _object(
            "power",
            {"c": _PRICE_SCALE, "p": _positive("1", top="2")},
            description="P(eps) = c * eps^p, 0 < p <= 2",
        ),
        _object(
            "compensation",
            {"margin": _UP_TO_1000},
            description="margin * (E_min + E e^(-rate/eps)), times the public size when the dataset's size is public; 0 < margin <= 1000; needs compensation",
        ),
    ]
}
COMPENSATION_SCHEMA = {
    "type": "object",
    "properties": {
        "E": _positive(r"[1-9][0-9]{0,8}"),
        "rate": _UP_TO_1000,
        "E_min": {"type": "string", "pattern": rf"^[0-9]{{1,9}}{_PLACES4}$"},
    },
    "required": ["E"],
    "additionalProperties": False,
}

#: a decimal as the API shows it: text, exact (``str`` of a Decimal), e.g. "12.50" or "0.5000"
DECIMAL_TEXT_PATTERN = r"^-?[0-9]+(\.[0-9]+)?$"
_DECIMAL_TEXT = {"type": "string", "pattern": DECIMAL_TEXT_PATTERN}
_PRICE_POINT = {
    "title": "PricePoint",
    "type": "object",
    "properties": {
        "epsilon": {**_DECIMAL_TEXT, "description": "a level"},
        "price": {"type": "string", "pattern": MONEY_PATTERN, "description": "P at that level, in credits"},
    },
    "required": ["epsilon", "price"],
}
_COMPENSATION_SHOWN = {
    "title": "CompensationModel",
    "type": "object",
    "description": "the cost model E_min + E e^(-rate/eps), per person times people when the size is public",
    "properties": {
        "E": _DECIMAL_TEXT, "rate": _DECIMAL_TEXT, "E_min": _DECIMAL_TEXT,
        "people": {"type": "integer", "description": "the public number of records (only when it is public)"},
    },
    "required": ["E", "rate", "E_min"],
}


def _shown(kind: str, parameters: dict, description: str) -> dict:
    """A price curve of one kind as the API shows it (``LinearPriceCurve``): its parameters, its
    formula in words, P at a quarter, half, three quarters and all of the ceiling, and its cost model."""
    return {
        "title": f"{kind.capitalize()}PriceCurve",
        "type": "object",
        "description": description,
        "properties": {
            "kind": _kind(kind), **parameters,
            "formula": {"type": "string", "description": 'e.g. "P(ε) = 10.00 × ε credits"'},
            "points": {"type": "array", "items": _PRICE_POINT, "description": "a purchase from a to b costs P(b) - P(a)"},
            "compensation": _COMPENSATION_SHOWN,
        },
        "required": ["kind", *parameters, "formula", "points"],
    }


#: the price curve of a listing as the API shows it: one schema per kind
PRICE_CURVE_SHOWN = {
    "oneOf": [
        _shown("linear", {"c": _DECIMAL_TEXT}, "P(eps) = c * eps"),
        _shown("power", {"c": _DECIMAL_TEXT, "p": _DECIMAL_TEXT}, "P(eps) = c * eps^p"),
        _shown("compensation", {"margin": _DECIMAL_TEXT}, "margin * (E_min + E e^(-rate/eps)), times people when public"),
    ]
}

#: JSON Schema as OpenAPI 3.0 reads it (draft 4: a boolean exclusiveMinimum, 1.0 is no integer)
_Validator = Draft4Validator


def _where(error) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")


def _schema_checked(schema: dict):
    """A JSON field's ``to_internal_value`` that holds the value to its documented schema."""
    validator = _Validator(schema)

    def to_internal_value(self, data):
        data = serializers.JSONField.to_internal_value(self, data)
        error = best_match(validator.iter_errors(data))
        if error is not None:
            where = _where(error)
            raise serializers.ValidationError(f"{where + ': ' if where else ''}{error.message[:300]}")
        return data

    return to_internal_value


@extend_schema_field(
    {"type": "array", "items": STATISTIC_SCHEMA, "minItems": 1, "maxItems": 20}, component_name="Statistics"
)
class StatisticsField(serializers.JSONField):
    """The list of statistics, as sent and as stored (the catalogue's services judge columns and bounds).
    A statistic off its schema is refused in words: each fault names the statistic, its kind and the
    field (``statistic_errors``), never the schema's ``oneOf`` over the kinds."""

    _validator = _Validator({"type": "array", "items": STATISTIC_SCHEMA, "minItems": 1, "maxItems": 20})

    def to_internal_value(self, data):
        data = serializers.JSONField.to_internal_value(self, data)
        if self._validator.is_valid(data):
            return data
        raise serializers.ValidationError(statistics_errors(data)[:10] or ["the statistics are not of the documented form"])


@extend_schema_field(PRICE_CURVE_SCHEMA, component_name="PriceCurveInput")
class PriceCurveField(serializers.JSONField):
    """The curve as sent, held to its schema; the services judge the rest."""

    _checked = _schema_checked(PRICE_CURVE_SCHEMA)

    def to_internal_value(self, data):
        # a power above 2 is refused by the pricing itself, with its reason (arbitrage): the
        # schema's bound and the service's agree, the service explains it better
        if isinstance(data, dict) and data.get("kind") == "power" and isinstance(data.get("p"), str):
            if re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,4})?", data["p"]) and Decimal(data["p"]) > 2:
                self._checked({**data, "p": "2"})
                return data
        return self._checked(data)


@extend_schema_field(COMPENSATION_SCHEMA, component_name="Compensation")
class CompensationField(serializers.JSONField):
    to_internal_value = _schema_checked(COMPENSATION_SCHEMA)


#: one accuracy target: an error bound for every statistic ("0.5"), or for one named statistic
#: ("mean(age):1"; the name is everything before the last colon)
TARGET_PATTERN = r"^(?:.+:)?[0-9]{1,15}(?:\.[0-9]{1,15})?$"


@extend_schema_field({"type": "string", "pattern": TARGET_PATTERN, "example": "mean(age):1"})
class TargetField(serializers.CharField):
    """An accuracy target as text, read as ``(name or None, bound as a Decimal)``."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("max_length", 500)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        if not re.fullmatch(TARGET_PATTERN, text):
            raise serializers.ValidationError(
                "A target is a bound such as 0.5 (for every statistic) or a statistic's name, a colon and a bound, "
                "such as mean(age):1.")
        name, colon, bound = text.rpartition(":")
        if Decimal(bound) <= 0:
            raise serializers.ValidationError("A target's error bound must be above 0.")
        return (name if colon else None, Decimal(bound))
