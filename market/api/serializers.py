"""Serializers: shapes of the API's answers and inputs. No business logic."""

import numbers
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from jsonschema import Draft4Validator
from jsonschema.exceptions import best_match
from django.urls import reverse
from rest_framework import serializers

from market.catalog.spec.columns import MISSING as MISSING_POLICIES
from market.catalog.spec.columns import TYPES as COLUMN_TYPES
from market.catalog import sizes
from market.catalog.models import Listing
from market.catalog.spec import MICRODATA_COLUMN, S_CONFIRM, statistic_schema
from market.catalog.pricing import curve_of
from market.catalog.risk import level_at_risk
from market.catalog.services import same_content_notice
from market.catalog.whatif import MAX_PAIRS, MAX_SUBSAMPLE, MIN_SUBSAMPLE
from market.core import ids
from market.core.fields import LEVEL_QUANTUM
from market.core.levels import MAX_LEVEL
from market.ledger.selectors import leg_description
from market.trading.models import Purchase

from market.trading.selectors import release_microdata, release_readings

#: a positive decimal below 1 with at most four places: 0.0001 .. 0.9999
_FRACTION = r"0\.(?:[1-9][0-9]{0,3}|0[1-9][0-9]{0,2}|00[1-9][0-9]?|000[1-9])"
_PLACES4 = r"(?:\.[0-9]{1,4})?"
#: a privacy level as the API reads it: 0 < eps <= 10000 (``MAX_LEVEL``) with at most 4 decimal
#: places, e.g. "0.5"; the pattern states the whole range, so the schema says what is accepted
LEVEL_PATTERN = rf"^(?:10000(?:\.0{{1,4}})?|[1-9][0-9]{{0,3}}{_PLACES4}|{_FRACTION})$"
#: an amount of credits: "12.50", at most 2 decimal places
MONEY_PATTERN = r"^[0-9]{1,16}(\.[0-9]{1,2})?$"
#: a top-up: 0.01 .. 100000.00 credits (``ManualFunding``'s bounds), at most 2 decimal places
TOP_UP_MIN, TOP_UP_MAX = Decimal("0.01"), Decimal("100000.00")
TOP_UP_PATTERN = r"^(?:100000(?:\.0{1,2})?|[1-9][0-9]{0,4}(?:\.[0-9]{1,2})?|0\.(?:[1-9][0-9]?|0[1-9]))$"
#: the ledger's amounts are NUMERIC(18, 2): no amount of credits reaches 10^16
LEDGER_LIMIT = Decimal(10) ** 16
#: the largest id a row can have (BIGINT)
MAX_ID = 2**63 - 1


def within_ledger(value) -> None:
    """Refuse a number that no amount of credits can be (it would fail deep in the ledger's
    arithmetic); anything else is left to the services, which judge it with their own messages."""
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError, TypeError):
        return
    if number.is_finite() and number.copy_abs() >= LEDGER_LIMIT:
        raise serializers.ValidationError("At most 9999999999999999.99: the largest amount of credits there is.")


#: fields that take several values (which a form sends as one field repeated)
_MANY = (serializers.ListField, serializers.ListSerializer, serializers.MultipleChoiceField)


class StrictSerializer(serializers.Serializer):
    # An input that is exactly what its schema documents: an object, with no field the
    # serializer does not know (each unknown one is named in the error's ``fields``).
    # Its request component says ``additionalProperties: false`` (``schema.strict_inputs``).
    # A form (multipart or urlencoded) sends a list as one field given several times: a field
    # documented as one value and given twice is refused, not read as its last value.
    # (Comments, not a docstring: a docstring would describe every input in the schema.)

    def to_internal_value(self, data):
        unknown = sorted(str(k) for k in data if k not in self.fields) if isinstance(data, Mapping) else []
        errors = {name: ["Unknown field: this operation does not take it."] for name in unknown}
        if hasattr(data, "getlist"):
            errors.update({
                name: ["Give this field once."] for name, field in self.fields.items()
                if not isinstance(field, _MANY) and len(data.getlist(name)) > 1
            })
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError({**exc.detail, **errors}) from None
        if errors:
            raise serializers.ValidationError(errors)
        return value


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID, "example": 1})
class IdField(serializers.Field):
    """A row's id, as a JSON integer: no booleans, floats or strings (``true`` is not 1)."""

    default_error_messages = {
        "invalid": "Give the id as a whole number, e.g. 12 (not text, a decimal or true/false).",
        "range": f"Not an id: ids are between 1 and {MAX_ID}.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        if not 1 <= data <= MAX_ID:
            self.fail("range")
        return data

    def to_representation(self, value):
        return value


class _DecimalInput(serializers.Field):
    """A decimal sent as text matching ``pattern`` or as a JSON number in the same range:
    both forms are judged alike and read exactly (a number through its shortest decimal form)."""

    pattern = ""
    places = 0
    minimum = maximum = Decimal(0)
    exclusive_minimum = False
    default_error_messages = {"invalid": "", "type": "Give a decimal number, as text such as \"0.5\" or as a number."}

    def to_internal_value(self, data):
        if isinstance(data, str):
            if not re.fullmatch(self.pattern, data):
                self.fail("invalid")
            return Decimal(data)
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("type")
        try:
            number = Decimal(repr(data)) if isinstance(data, float) else Decimal(data)
        except InvalidOperation:
            self.fail("invalid")
        low_ok = number > self.minimum if self.exclusive_minimum else number >= self.minimum
        if not (number.is_finite() and low_ok and number <= self.maximum) or number != round(number, self.places):
            self.fail("invalid")
        return number

    def to_representation(self, value):
        return str(value)


def _decimal_schema(pattern: str, minimum, maximum, places: int, exclusive: bool, example: str) -> dict:
    number = {"type": "number", "minimum": float(minimum), "maximum": float(maximum), "multipleOf": float(Decimal(1).scaleb(-places))}
    if exclusive:
        number["exclusiveMinimum"] = True
    return {"oneOf": [{"type": "string", "pattern": pattern, "example": example}, number]}


@extend_schema_field(_decimal_schema(LEVEL_PATTERN, 0, MAX_LEVEL, 4, True, "0.5"))
class LevelInputField(_DecimalInput):
    """A privacy level: 0 < eps <= 10000 with at most 4 decimal places, as text or a number."""

    pattern, places, minimum, maximum, exclusive_minimum = LEVEL_PATTERN, 4, Decimal(0), MAX_LEVEL, True
    default_error_messages = {
        **_DecimalInput.default_error_messages,
        "invalid": f"A level above 0 and at most {MAX_LEVEL}, with at most 4 decimal places, e.g. \"0.5\".",
    }


@extend_schema_field(_decimal_schema(TOP_UP_PATTERN, TOP_UP_MIN, TOP_UP_MAX, 2, False, "25.00"))
class TopUpAmountField(_DecimalInput):
    """An amount to top up: 0.01 .. 100000.00 credits with at most 2 decimal places."""

    pattern, places, minimum, maximum = TOP_UP_PATTERN, 2, TOP_UP_MIN, TOP_UP_MAX
    default_error_messages = {
        **_DecimalInput.default_error_messages,
        "invalid": f"Enter an amount between {TOP_UP_MIN} and {TOP_UP_MAX}, with at most 2 decimal places.",
    }


#: a payout's bounds: far above any earnings, and exact as a JSON number (a float holds 14 digits exactly)
PAYOUT_MIN, PAYOUT_MAX = Decimal("0.01"), Decimal("999999999999.99")
PAYOUT_PATTERN = r"^(?:0\.(?:[1-9][0-9]?|0[1-9])|[1-9][0-9]{0,11}(?:\.[0-9]{1,2})?)$"


@extend_schema_field(_decimal_schema(PAYOUT_PATTERN, PAYOUT_MIN, PAYOUT_MAX, 2, False, "25.00"))
class PayoutAmountField(_DecimalInput):
    """An amount to pay out: from 0.01 credits, with at most 2 decimal places (at most the earnings held)."""

    pattern, places, minimum, maximum = PAYOUT_PATTERN, 2, PAYOUT_MIN, PAYOUT_MAX
    default_error_messages = {
        **_DecimalInput.default_error_messages,
        "invalid": f"Enter an amount from {PAYOUT_MIN} to {PAYOUT_MAX} credits, with at most 2 decimal places.",
    }


#: a price agreed to (``max_price``): 0.00 .. PAYOUT_MAX credits, exact as a JSON number too
MAX_PRICE_PATTERN = r"^(?:0|[1-9][0-9]{0,11})(?:\.[0-9]{1,2})?$"


@extend_schema_field(_decimal_schema(MAX_PRICE_PATTERN, 0, PAYOUT_MAX, 2, False, "12.50"))
class MaxPriceField(_DecimalInput):
    """The most a buyer agrees to pay: from 0 credits, with at most 2 decimal places."""

    pattern, places, minimum, maximum = MAX_PRICE_PATTERN, 2, Decimal(0), PAYOUT_MAX
    default_error_messages = {
        **_DecimalInput.default_error_messages,
        "invalid": f"An amount of credits from 0 to {PAYOUT_MAX}, with at most 2 decimal places, e.g. \"12.50\".",
    }


class TextField(serializers.CharField):
    """Text that is a JSON string: a number is not text (DRF's CharField would take 2 as "2")."""

    default_error_messages = {"invalid": "Give this as text (a JSON string)."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": LEVEL_PATTERN, "example": "5"})
class LevelTextField(TextField):
    """A level as text: above 0, at most 10000, at most 4 decimal places."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.append(
            RegexValidator(LEVEL_PATTERN, f"A level above 0 and at most {MAX_LEVEL}, with at most 4 decimal places.")
        )


@extend_schema_field({"type": "string", "pattern": MONEY_PATTERN, "example": "10.00"})
class MoneyTextField(TextField):
    """An amount of credits as text, within the ledger's range, at most 2 decimal places."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators += [RegexValidator(MONEY_PATTERN, "An amount such as 10.00: at most 2 decimal places."), within_ledger]


#: text with a visible character and no NUL (which PostgreSQL cannot store)
TEXT_PATTERN = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
OPTIONAL_TEXT_PATTERN = r"^[^\u0000]*$"


def text_field(*, max_length: int, required: bool = True, **kwargs) -> TextField:
    """Text judged as sent (no trimming: the schema's lengths are the accepted lengths)."""
    pattern, message = (
        (TEXT_PATTERN, "Must contain a visible character.") if required else (OPTIONAL_TEXT_PATTERN, "No NUL characters.")
    )
    extra = {} if required else {"required": False, "allow_blank": True, "default": ""}
    return TextField(
        max_length=max_length, trim_whitespace=False, validators=[RegexValidator(pattern, message)], **extra, **kwargs
    )


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
    """The list of statistics, as sent and as stored (the catalogue's services judge columns and bounds)."""

    to_internal_value = _schema_checked({"type": "array", "items": STATISTIC_SCHEMA, "minItems": 1, "maxItems": 20})


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


class QuoteQuerySerializer(serializers.Serializer):
    epsilon = LevelTextField(required=False, help_text="the level to go up to, e.g. 0.5 (or give target instead)")
    target = serializers.ListField(
        child=TargetField(), required=False, min_length=1, max_length=21,
        help_text="instead of epsilon: the 95% error bound you need, and the quote is for the cheapest level above "
        "yours (up to your cap) that meets every target given. A bound alone (target=0.5) applies to every "
        "statistic; a statistic's name as the quote's statistics[].name, a colon and a bound "
        "(target=mean(age):1) to that one; repeat the parameter for several (each must be met). "
        "A target no level up to your cap meets is refused (400) with the best bounds reachable at the cap.",
    )
    records = serializers.IntegerField(
        required=False, min_value=1, max_value=10**9,
        help_text="the number of records assumed in each mean's cell where the mean divides by a private count "
        "(its bound depends on it; default 1000, at most the dataset's public size); statistics[].assumes_records "
        "says which figures assume it",
    )

    def validate(self, data):
        if ("epsilon" in data) == ("target" in data):
            if "target" in data:
                raise serializers.ValidationError({"target": ["Give either epsilon or target, not both."]})
            raise serializers.ValidationError({"epsilon": ["This field is required (or give target)."]})
        return data


class QuerySerializer(serializers.Serializer):
    # Query parameters as strictly as bodies: an optional parameter given empty (``?epsilon=``) is
    # refused, not read as left out (DRF's reading of HTML forms), unless it may be blank.

    def to_internal_value(self, data):
        blank = {
            name: ["Give a value, or leave the parameter out."] for name, field in self.fields.items()
            if hasattr(data, "get") and data.get(name) == "" and not getattr(field, "allow_blank", False)
        }
        if blank:
            raise serializers.ValidationError(blank)
        return super().to_internal_value(data)


class ProfileQuerySerializer(QuerySerializer):
    epsilon = LevelTextField(required=False, help_text="the level, e.g. 0.5 (at most the ceiling; default: the ceiling)")


class ListingQuerySerializer(serializers.Serializer):
    # a CharField refuses NUL characters (PostgreSQL cannot compare text with them)
    search = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, default="", help_text="text in the title or description"
    )


MICRODATA_SPEC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["columns", "levels"],
    "properties": {
        "columns": {
            "type": "array", "minItems": 1, "maxItems": 20,
            "description": "one object per column: a categorical or boolean column as one-hot bits over the "
            "categories you declare public (a boolean's may be left out; declared categories need "
            "categories_public: true), or a categorical column hashed into a Bloom filter",
            "items": {
                "title": "MicrodataColumnInput", "type": "object", "additionalProperties": False, "required": ["column"],
                "properties": {
                    "column": {"type": "string", "maxLength": 200},
                    "categories": {"type": "array", "minItems": 1, "maxItems": 100,
                                   "items": {"oneOf": [{"type": "string", "maxLength": 200}, {"type": "boolean"}]}},
                    "categories_public": S_CONFIRM,
                    "bloom": {"title": "BloomFilterInput", "type": "object", "additionalProperties": False,
                              "required": ["bits", "hashes"],
                              "properties": {"bits": {"type": "integer", "minimum": 8, "maximum": 128},
                                             "hashes": {"type": "integer", "minimum": 1, "maximum": 8}}},
                },
            },
        },
        "levels": {
            "type": "array", "minItems": 1, "maxItems": 8,
            "items": {"type": "string", "pattern": r"^[0-9]{1,5}(\.[0-9]{1,4})?$"},
            "description": "the ladder of levels (eps per record) buyers may buy; the highest is the ceiling",
        },
    },
}


@extend_schema_field(MICRODATA_SPEC_SCHEMA, component_name="MicrodataSpec")
class MicrodataSpecField(serializers.JSONField):
    to_internal_value = _schema_checked(MICRODATA_SPEC_SCHEMA)


def _one_price(attrs):
    if "price_per_epsilon" in attrs and "price_curve" in attrs:
        message = "Give either price_per_epsilon or price_curve, not both."
        raise serializers.ValidationError({"price_per_epsilon": [message], "price_curve": [message]})
    if "price_per_epsilon" not in attrs and "price_curve" not in attrs:
        raise serializers.ValidationError({"price_per_epsilon": ["Give price_per_epsilon or price_curve."]})
    return attrs


class MicrodataCreateSerializer(StrictSerializer):
    dataset = text_field(max_length=ids.MAX_LENGTH, help_text="your dataset's id; its number of records must be public")
    title = text_field(max_length=200)
    description = text_field(max_length=5000, required=False)
    microdata = MicrodataSpecField(
        help_text='e.g. {"columns": [{"column": "island", "categories": ["Biscoe", "Dream", "Torgersen"], '
        '"categories_public": true}, {"column": "sex"}], "levels": ["0.5", "1", "2"]}'
    )
    price_per_epsilon = MoneyTextField(required=False, help_text="c of the linear curve P(eps) = c * eps")
    price_curve = PriceCurveField(required=False, help_text="instead of price_per_epsilon, as for any listing")
    compensation = CompensationField(required=False, help_text="the cost model, as for any listing")

    def validate(self, attrs):
        return _one_price(attrs)


class MicrodataLevelSerializer(serializers.Serializer):
    level = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="eps per record")
    bit_level = serializers.CharField(help_text='each bit\'s level, exactly: level / weight, as a whole number or a '
                                      'fraction such as "1/8"')
    p = serializers.FloatField(help_text="the chance a bit set to 1 is reported 1")
    q = serializers.FloatField(help_text="the chance a bit set to 0 is reported 1")
    error_bound = serializers.FloatField(help_text="the 95% half-width of every decoded count (normal approximation)")


class MicrodataOfferSerializer(serializers.Serializer):
    """What a microdata listing sells: every record's bits, at the levels of its ladder."""

    records = serializers.IntegerField(help_text="the number of records (public): one row each")
    bits = serializers.IntegerField(help_text="bits per record")
    weight = serializers.IntegerField(help_text="the most bits one record change can flip")
    salt = serializers.CharField(help_text="the Bloom filters' public hash key (hex)")
    levels = MicrodataLevelSerializer(many=True)


class SizeCellSerializer(serializers.Serializer):
    label = serializers.CharField(help_text="the count's label, e.g. \"count | species = Adelie\"")
    value = serializers.IntegerField(help_text="the noisy count (whole records)")
    note = serializers.CharField(
        help_text="empty, or what the cell's means say before purchase: \"too few records to estimate\", "
        "\"other: values outside the declared categories\", \"no records outside the declared categories ...\"")


class SizeReleaseSerializer(serializers.Serializer):
    level = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="eps_p: the release is eps_p-DP")
    confidence = serializers.CharField(help_text="the confidence of error_bound")
    error_bound = serializers.IntegerField(help_text="each noisy count is within this of the truth with 95% probability")
    cells = SizeCellSerializer(many=True)


class ListingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    owner = serializers.CharField(source="dataset.owner.username")
    statistics = StatisticsField()
    labels = serializers.ListField(child=serializers.CharField())
    engine = serializers.ChoiceField(
        choices=Listing.Engine.choices,
        help_text="how values are released: lattice (exact integer noise, exactly eps-DP: counts and bins are "
        "whole numbers, a sum or mean is rounded to its statistic's grid and its sum released in whole grid steps) "
        "or laplace (floating-point noise, retired: listings made before the lattice path and old vector listings; no "
        "delta was established for most of their releases, no new noise is drawn on them, and only levels they "
        "have released can be bought)",
    )
    sensitivity = serializers.FloatField()
    ceiling = serializers.DecimalField(
        source="total_level", max_digits=9, decimal_places=4,
        help_text="the most privacy the listing can ever cost: the highest level buyers may buy (buyable_ceiling) plus "
        "its size release's level (size_level); what its dataset's budget counts",
    )
    buyable_ceiling = serializers.DecimalField(
        source="ceiling", max_digits=9, decimal_places=4, help_text="the highest level buyers may buy here")
    size_level = serializers.DecimalField(
        max_digits=9, decimal_places=4,
        help_text="the level of the listing's size release (0: none), spent once at creation")
    size_release = serializers.SerializerMethodField()
    price_curve = serializers.SerializerMethodField()
    your_level = serializers.SerializerMethodField()
    your_cap = serializers.SerializerMethodField()
    spent = serializers.SerializerMethodField()
    is_open = serializers.BooleanField()
    closed_reason = serializers.CharField(help_text="why the listing was closed (empty while it is open)")
    relation = serializers.ChoiceField(
        source="dataset.relation", choices=["private_size", "public_size"],
        help_text="whom a release protects: private_size (add or remove one record; the number of records is "
        "private) or public_size (replace one record; the number of records is public)",
    )
    public_size = serializers.IntegerField(
        source="dataset.public_size", allow_null=True,
        help_text="the number of records when the dataset declares it public; null when it is private",
    )
    protects = serializers.CharField(source="dataset.protects", help_text="whom a release protects, in one sentence")
    microdata = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    @extend_schema_field(MicrodataOfferSerializer(allow_null=True))
    def get_microdata(self, listing):
        """A microdata listing's ladder and the accuracy at each level (null for other listings)."""
        if not listing.release_mechanism.sells_records:
            return None
        md = listing.microdata()
        return MicrodataOfferSerializer({
            "records": md.records, "bits": md.bits, "weight": md.weight, "salt": md.salt,
            "levels": [{"level": level, "bit_level": str(md.bit_level(level)), "p": md.rates(level)[0],
                        "q": md.rates(level)[1], "error_bound": md.bound(level)} for level in md.levels],
        }).data

    @extend_schema_field(SizeReleaseSerializer(allow_null=True))
    def get_size_release(self, listing):
        """The noisy count of each mean cell, a public DP release at size_level (null: the listing has none;
        one made before size releases quotes its means for an assumed number of records)."""
        shown = sizes.shown(listing)
        return None if shown is None else SizeReleaseSerializer(shown).data

    @extend_schema_field(PRICE_CURVE_SHOWN)
    def get_price_curve(self, listing) -> dict:
        """The curve's parameters, its formula, and P at a few levels (a purchase from
        level a to b costs P(b) - P(a))."""
        curve = curve_of(listing)
        points = [listing.ceiling * i / 4 for i in range(1, 5)]
        return {
            **curve.as_dict(),
            **({"compensation": curve.compensation.as_dict()} if curve.compensation else {}),
            "formula": curve.formula(),
            "points": [{"epsilon": str(e.quantize(Decimal("0.0001"))), "price": str(curve.price(e))} for e in points],
        }

    @extend_schema_field({**_DECIMAL_TEXT, "nullable": True})
    def get_your_level(self, listing) -> str | None:
        held = self.context.get("levels_held")
        if held is None:
            return None
        return str(held.get(listing.pk, "0.0000"))

    @extend_schema_field({**_DECIMAL_TEXT, "nullable": True})
    def get_your_cap(self, listing) -> str | None:
        """The highest level you may buy on this listing (signed in; null otherwise):
        the ceiling, unless the owner caps it by how far you stand from them (then also at most
        what your trust tier, everyone at your distance or further, has left on the dataset)."""
        caps = self.context.get("caps")
        if caps is None:
            return None
        return str(caps[listing.pk].level)

    @extend_schema_field({**_DECIMAL_TEXT, "nullable": True})
    def get_spent(self, listing) -> str | None:
        """Your listings only (null on others'): the privacy spent on it, its largest released level plus
        its size release's level; the dataset has spent the sum of these over its listings."""
        spent = self.context.get("spent") or {}
        value = spent.get(listing.pk)
        # as every level in the API, with four places (SQLite's sums come back as 2.5, PostgreSQL's as 2.5000)
        return None if value is None else f"{Decimal(value).quantize(LEVEL_QUANTUM):f}"


class ListingCreateSerializer(StrictSerializer):
    dataset = text_field(max_length=ids.MAX_LENGTH, help_text='your dataset\'s id, e.g. "ds_4mGz2QpXk8RbT1vLwYc7Na"')
    title = text_field(max_length=200)
    description = text_field(max_length=5000, required=False)
    statistics = StatisticsField(
        help_text='e.g. [{"kind": "count"}, {"kind": "mean", "column": "age", "lower": 0, "upper": 100}, '
        '{"kind": "sum", "column": "income", "lower": 0, "upper": 200000, "grid": "0.01"}, '
        '{"kind": "count", "by": "island", "categories": ["Biscoe", "Dream"], "categories_public": true}]. '
        "A statistic that declares categories (categories, row_categories, column_categories) needs "
        "categories_public: true: buyers see them, and which values occur in your data is itself private"
    )
    ceiling = LevelTextField(help_text='the most privacy the listing can ever cost, e.g. "5" (with a size release, '
                             'buyers may buy up to ceiling - size_level)')
    size_level = LevelTextField(
        required=False,
        help_text="eps_p of the listing's size release, for means that divide by a private count (a private size, a "
        "filter, a group-by or a column with missing values): a noisy count of each mean's cell, published once at "
        "creation, carved out of the ceiling and charged to the dataset; default a tenth of the ceiling; ignored when "
        "no mean needs it; refused (400) when it leaves nothing to sell",
    )
    price_per_epsilon = MoneyTextField(required=False, help_text="c of the linear curve P(eps) = c * eps")
    price_curve = PriceCurveField(
        required=False,
        help_text='instead of price_per_epsilon: {"kind": "linear", "c"}, {"kind": "power", "c", "p" (at most 2)} '
        'or {"kind": "compensation", "margin"} (needs compensation)',
    )
    compensation = CompensationField(
        required=False, help_text='the cost model {"E", "rate", "E_min"}: E_min + E e^(-rate/eps), per person when the dataset\'s size is public (times that size), else in total'
    )

    def validate(self, attrs):
        return _one_price(attrs)


class ListingUpdateSerializer(StrictSerializer):
    # partial: a field left out keeps its value (no default: an absent title is not an empty one)
    title = TextField(
        max_length=200, required=False, trim_whitespace=False,
        validators=[RegexValidator(TEXT_PATTERN, "Must contain a visible character.")],
        help_text="the new title (left out: it stays as it is)",
    )
    description = TextField(
        max_length=5000, required=False, allow_blank=True, trim_whitespace=False,
        validators=[RegexValidator(OPTIONAL_TEXT_PATTERN, "No NUL characters.")],
        help_text="the new description (empty clears it)",
    )
    price_per_epsilon = MoneyTextField(required=False, help_text="a new linear curve P(eps) = c * eps, for purchases from now on")
    price_curve = PriceCurveField(
        required=False,
        help_text='instead of price_per_epsilon: a new curve, {"kind": "linear", "c"}, {"kind": "power", "c", "p"} or '
        '{"kind": "compensation", "margin"} (with the listing\'s compensation model), for purchases from now on',
    )

    def validate(self, attrs):
        if "price_per_epsilon" in attrs and "price_curve" in attrs:
            message = "Give either price_per_epsilon or price_curve, not both."
            raise serializers.ValidationError({"price_per_epsilon": [message], "price_curve": [message]})
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": ["Give at least one of title, description, price_per_epsilon, price_curve."]})
        return attrs


class ListingCloseSerializer(StrictSerializer):
    reason = text_field(max_length=500, required=False, help_text="why, shown to the listing's buyers (optional)")


class CategoryCountSerializer(serializers.Serializer):
    value = serializers.CharField()
    count = serializers.IntegerField()


class DatasetColumnSerializer(serializers.Serializer):
    """One column of your dataset: its type and missing-value policy, and summary hints of your
    own data (shown to you, the owner, only)."""

    name = serializers.CharField()
    type = serializers.ChoiceField(choices=list(COLUMN_TYPES), help_text="the confirmed type (ignored: left out)")
    inferred = serializers.ChoiceField(
        choices=list(COLUMN_TYPES), required=False, help_text="the type inferred from the values"
    )
    missing = serializers.ChoiceField(
        choices=list(MISSING_POLICIES), help_text="none (complete), exclude, or category (its own group)"
    )
    missing_count = serializers.IntegerField(required=False, allow_null=True, help_text="empty or marked cells")
    markers = serializers.ListField(
        child=serializers.CharField(), required=False, help_text='the missing markers seen, e.g. ["NA", "(empty)"]'
    )
    min = serializers.JSONField(required=False, allow_null=True, help_text="numbers and dates: the smallest value "
                                "(yours to see; typed as a listing's bound, it is published)")
    max = serializers.JSONField(required=False, allow_null=True, help_text="numbers and dates: the largest value "
                                "(yours to see; typed as a listing's bound, it is published)")
    distinct = serializers.IntegerField(required=False, allow_null=True, help_text="the number of distinct values")
    categories = CategoryCountSerializer(
        many=True, required=False,
        help_text="text and booleans: up to 50 most frequent values of your own data, shown to you only. They are "
        "never a default of what is published: declaring one of them as a category publishes that it occurs "
        "(needs categories_public: true)",
    )

    def to_representation(self, instance):
        if isinstance(instance, str):  # a name only (before types existed)
            instance = {"name": instance, "type": "decimal", "missing": "none"}
        return super().to_representation(instance)


class DatasetProgressSerializer(serializers.Serializer):
    phase = serializers.CharField(required=False, help_text="queued, reading, inferring or typing")
    rows = serializers.IntegerField(required=False, help_text="rows read so far")
    percent = serializers.FloatField(required=False, help_text="percent of the file's bytes read")


class DatasetSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "ds_4mGz2QpXk8RbT1vLwYc7Na"')
    name = serializers.CharField()
    description = serializers.CharField()
    source = serializers.CharField(help_text="where the data comes from")
    licence = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["processing", "ready", "failed"],
        help_text="processing (see progress), ready (columns known; it can be listed) or failed (see failure)",
    )
    progress = serializers.SerializerMethodField(help_text="while processing: how far; null otherwise")
    failure = serializers.ListField(
        child=serializers.CharField(), help_text="when failed: the reasons, one per column or for the whole file"
    )
    format = serializers.CharField(help_text="csv or parquet (empty until read)")
    columns = DatasetColumnSerializer(many=True, help_text="when ready: the columns (empty before)")
    row_count = serializers.IntegerField(
        allow_null=True, help_text="the exact number of records (shown to you, the owner, only); null until ready"
    )
    budget = serializers.DecimalField(
        source="total_budget", max_digits=9, decimal_places=4,
        help_text="the privacy budget: the listings' ceilings (point listings aside) may not add up to more",
    )
    total_budget = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="the same as budget (its older name)")
    ceilings_total = serializers.DecimalField(
        max_digits=12, decimal_places=4, help_text="what the listings' ceilings add up to (at most budget)"
    )
    spent = serializers.DecimalField(
        max_digits=12, decimal_places=4,
        help_text="the privacy spent on this dataset: the sum over its listings of each one's largest released level "
        "(independent releases add up); at most ceilings_total",
    )
    relation = serializers.ChoiceField(choices=["private_size", "public_size"])
    record_name = serializers.CharField()
    record_name_plural = serializers.CharField()
    public_size = serializers.IntegerField(allow_null=True, help_text="what buyers see of the number of records")
    protects = serializers.CharField(help_text="whom a release protects, in one sentence (shown on listing pages)")
    created_at = serializers.DateTimeField()

    @extend_schema_field(DatasetProgressSerializer(allow_null=True))
    def get_progress(self, dataset):
        if dataset.status != "processing":
            return None
        progress = dataset.progress or {}
        return {k: progress[k] for k in ("phase", "rows", "percent") if k in progress}


class DatasetCreatedSerializer(DatasetSerializer):
    same_content_as = serializers.ListField(
        child=serializers.CharField(),
        help_text="your earlier datasets with exactly the same content (ids); usually empty",
    )
    notice = serializers.CharField(allow_null=True, help_text="what same_content_as means for the budgets; null if empty")


def dataset_answer(dataset, earlier) -> dict:
    """A dataset as the API answers its owner (``GET datasets/{id}/``, the upload's answer, the
    ``dataset.ready`` webhook): with the owner's earlier datasets of the same content, and what that means."""
    return {**DatasetSerializer(dataset).data, "same_content_as": [d.public_id for d in earlier],
            "notice": same_content_notice(earlier) if earlier else None}


class DatasetCreateSerializer(StrictSerializer):
    name = text_field(max_length=200)
    description = text_field(max_length=5000, required=False)
    source = text_field(max_length=500, required=False, help_text="where the data comes from")
    licence = text_field(max_length=200, required=False, help_text='e.g. "CC0-1.0"')
    file = serializers.FileField(
        help_text="a CSV (delimiter and quoting detected; UTF-8, with or without BOM, or Latin-1) or Parquet file"
    )
    budget = LevelTextField(
        required=False,
        help_text=f"required (or its older name total_budget): the dataset's privacy budget, the most all its "
        f"listings' ceilings may add up to. Suggested: {settings.DATASET_DEFAULT_BUDGET}",
    )
    total_budget = LevelTextField(required=False, help_text="the same as budget (its older name)")
    relation = serializers.ChoiceField(
        choices=["private_size", "public_size"], required=False, default="private_size",
        help_text="whom releases protect. private_size (default): any one record, whether or not it is in the "
        "data; the number of records is never shown and can be sold as a noisy count. public_size: any one "
        "record's values; the number of records is published exactly and not sold",
    )
    record_name = text_field(max_length=60, required=False, help_text='what one record is about, e.g. "patient"')
    record_name_plural = text_field(max_length=60, required=False, help_text='e.g. "patients"')

    def validate(self, attrs):
        blank = [k for k in ("budget", "total_budget") if k in self.initial_data and self.initial_data.get(k) in ("", None)]
        if blank:  # a form leaves an empty optional field out: an empty budget is still a wrong one
            raise serializers.ValidationError({k: ["This field may not be blank."] for k in blank})
        if "budget" in attrs and "total_budget" in attrs and attrs["budget"] != attrs["total_budget"]:
            message = "Give budget or total_budget, not two different ones."
            raise serializers.ValidationError({"budget": [message], "total_budget": [message]})
        if "budget" not in attrs and "total_budget" not in attrs:
            raise serializers.ValidationError({"budget": ["This field is required."]})
        attrs["total_budget"] = attrs.pop("budget", None) or attrs["total_budget"]
        return attrs


class DatasetUploadSerializer(DatasetCreateSerializer):
    # The upload as documented: ``budget`` required. (``total_budget``, its older name, is still
    # accepted by DatasetCreateSerializer but not documented: an empty optional field in a form
    # is left out, which the schema could not say.)
    budget = LevelTextField(
        help_text=f"the dataset's privacy budget, the most all its listings' ceilings may add up to. "
        f"Suggested: {settings.DATASET_DEFAULT_BUDGET}",
    )
    total_budget = None


class ColumnChoiceSerializer(StrictSerializer):
    name = text_field(max_length=200, help_text="the column's name")
    type = serializers.ChoiceField(choices=list(COLUMN_TYPES), required=False, help_text="ignored drops the column")
    missing = serializers.ChoiceField(choices=list(MISSING_POLICIES), required=False)


class DatasetColumnsSerializer(StrictSerializer):
    columns = ColumnChoiceSerializer(
        many=True, allow_empty=False,
        help_text="the columns to confirm or change; the others keep their type and policy",
    )


class BudgetChangeSerializer(StrictSerializer):
    budget = LevelTextField(help_text="the new budget, e.g. \"4\": at least what the listings' ceilings add up to")
    reason = text_field(max_length=500, help_text="why, for the dataset's audit record")


class AccuracySerializer(serializers.Serializer):
    label = serializers.CharField()
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")


class StatisticAccuracySerializer(serializers.Serializer):
    name = serializers.CharField(help_text="the statistic's name, as a target names it")
    kind = serializers.CharField()
    error_bound = serializers.FloatField(
        help_text="|value - truth| <= error_bound with probability 95% (each value of a histogram, table or group; "
        "a vector's Euclidean error)")
    assumes_records = serializers.IntegerField(
        allow_null=True, help_text="null when the bound assumes nothing (exact, or a mean's bound from the listing's "
        "size release); else the number of records in the mean's cell it assumes, on a listing made before size "
        "releases (the true number is private): the request's records, default 1000")
    too_few = serializers.BooleanField(
        help_text="a mean's cell whose published noisy count is too small for any useful mean: error_bound is the "
        "whole clamp range, and no target on it can be met")
    note = serializers.CharField(help_text="empty, or what the figure says of its cell (see too_few; \"other: ...\")")


@extend_schema_field({"type": "string", "format": "decimal", "pattern": DECIMAL_TEXT_PATTERN})
class DecimalTextField(serializers.DecimalField):
    """A decimal without a bound on its digits, shown as text (its schema says which text)."""


class TargetEchoSerializer(serializers.Serializer):
    name = serializers.CharField(allow_null=True, help_text="the statistic, or null for every statistic")
    error_bound = DecimalTextField(max_digits=None, decimal_places=None)


class QuoteSerializer(serializers.Serializer):
    listing = serializers.IntegerField(source="listing_id")
    epsilon = serializers.DecimalField(max_digits=9, decimal_places=4)
    current_level = serializers.DecimalField(max_digits=9, decimal_places=4)
    ceiling = serializers.DecimalField(
        max_digits=9, decimal_places=4,
        help_text="the listing's total: the highest level sold plus its size release's level (as the listing's ceiling)")
    cap = serializers.DecimalField(
        max_digits=9, decimal_places=4,
        help_text="the highest level you may buy here: the listing's buyable_ceiling unless capped by trust, and on a "
        "trust-capped listing at most what your trust tier has left of its cap on the dataset",
    )
    cap_reason = serializers.CharField(
        help_text="why the cap is what it is, in plain words (on a trust-capped listing it may be the room your "
        "trust tier has left on the dataset: everyone at your distance or further shares one cap there)"
    )
    cap_bound = serializers.CharField(
        help_text="on a trust-capped listing, what is bounded for your whole trust tier on its dataset, in a "
        "sentence (everyone at your distance from the owner or further, together); empty otherwise"
    )
    # not bounded by the ledger's 18 digits: a quote may name a price no wallet can pay
    price = DecimalTextField(max_digits=None, decimal_places=2)
    accuracy = AccuracySerializer(many=True, help_text="per released value at this level")
    statistics = StatisticAccuracySerializer(
        many=True, help_text="per statistic you get (a mean once, though it is released as a sum and a count), "
        "its 95% error bound at this level")
    target = TargetEchoSerializer(many=True, allow_null=True, help_text="the targets this level was chosen for "
                                  "(null: you named the level)")


@extend_schema_field({"type": "number"})
class NumberField(serializers.FloatField):
    """A number as the reading holds it: a JSON integer for a whole-number value (a count or a bin on the
    lattice path, a sum on an integer grid), else a JSON number with its decimals."""

    def to_representation(self, value):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        return float(value)


class ReadingSerializer(serializers.Serializer):
    label = serializers.CharField()
    kind = serializers.CharField()
    value = NumberField(
        help_text="the released value: an integer for counts and bins (lattice listings) and for a sum on an "
        "integer grid; a sum on a grid such as 0.01 has at most its grid's decimals"
    )
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")
    note = serializers.CharField(
        required=False, default="",
        help_text="a mean's cell, read off its released count: empty, \"too few records to estimate\" (the value "
        "says nothing better than the clamp range), \"other: values outside the declared categories\" or \"no records "
        "outside the declared categories (its released count is 0)\"")


class PrivacyAtRiskSerializer(serializers.Serializer):
    """The privacy-at-risk paper's figures, under its model (not a guarantee of this release)."""

    epsilon0 = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="the level released")
    epsilon = serializers.DecimalField(
        max_digits=12, decimal_places=6,
        help_text="the finer level that minimises the paper's compensation budget",
    )
    gamma = serializers.FloatField(
        help_text="the paper's privacy at risk of epsilon: P(T <= eps) / P(T <= eps0), T the size of the noise on "
        "all `dimension` released values together (its norm, in units of the sensitivity), as the paper's model "
        "draws it (one Laplace scale for all); an average over the noise. It is NOT the probability that this "
        "release is epsilon-DP; privacy_profile states the release's guarantee exactly"
    )
    dimension = serializers.IntegerField(help_text="k, the number of released values, as the paper's model counts them")
    rate = serializers.DecimalField(
        max_digits=12, decimal_places=6, help_text="c of the cost model E_min + E e^(-c/eps) whose budget epsilon minimises"
    )
    definition = serializers.CharField(help_text="what gamma (privacy at risk) is, in one sentence")


class ProfilePointSerializer(serializers.Serializer):
    epsilon = serializers.DecimalField(max_digits=12, decimal_places=6, help_text="eps', at most the level (exact)")
    delta = serializers.FloatField(
        allow_null=True,
        help_text="δ at this ε′: the hockey-stick divergence, a probability; null when the profile was not "
        "computed (see method)",
    )


class PrivacyProfileSerializer(serializers.Serializer):
    """The exact guarantee of a release at one level, for a worst-case neighbour under the dataset's relation."""

    level = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="the release is level-DP (delta 0 at eps' = level)")
    method = serializers.CharField(
        help_text='how delta was computed: "exact" (Laplace noise), the quadrature\'s accuracy (l2 noise), the error '
        'bound of the summed law (integer noise), or "not computed: <why>" when that law is too large to sum'
    )
    points = ProfilePointSerializer(many=True, help_text="delta(eps') for eps' from 0 to the level: the hockey-stick divergence")
    summary = ProfilePointSerializer(help_text="the profile at half the level")
    guarantee = serializers.CharField(
        help_text="the release's guarantee: exactly eps-DP with integer noise, or what floating-point noise "
        "costs, as measured"
    )
    protects = serializers.CharField(help_text="whom the release protects, in one sentence")


@extend_schema_field({"type": "array", "items": MICRODATA_COLUMN})
class MicrodataColumnsField(serializers.JSONField):
    pass


class DecodedBitSerializer(serializers.Serializer):
    label = serializers.CharField()
    reported = serializers.IntegerField(help_text="the number of records whose report of this bit says 1")
    estimate = serializers.FloatField(help_text="the number of records with the bit set, decoded without bias")
    low = serializers.FloatField(help_text="95% interval (normal approximation), clipped to [0, records]")
    high = serializers.FloatField()
    error_bound = serializers.FloatField(help_text="the interval's half-width before clipping")


class ReleaseMicrodataSerializer(serializers.Serializer):
    """A microdata release: the records' randomised bits (download them) and the decoded counts."""

    records = serializers.IntegerField()
    bits = serializers.IntegerField()
    weight = serializers.IntegerField(help_text="the most bits one record change can flip")
    bit_level = serializers.CharField(help_text='each bit\'s level, exactly: the release\'s level / weight, as a whole '
                                      'number or a fraction such as "1/8"')
    p = serializers.FloatField(help_text="P(report 1 | bit 1) = 1 / (1 + e^-bit_level)")
    q = serializers.FloatField(help_text="P(report 1 | bit 0) = e^-bit_level / (1 + e^-bit_level)")
    salt = serializers.CharField(help_text="the Bloom filters' public hash key (hex)")
    columns = MicrodataColumnsField(help_text="each column's bits, as the listing states them")
    decoded = DecodedBitSerializer(many=True)
    records_csv = serializers.CharField(help_text="where to download the records as CSV (one row per record)")
    records_parquet = serializers.CharField(help_text="the same as Parquet")


class ReleaseSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "rel_9QeT5wXr2LpZ0aKcVn3sHd"')
    listing = serializers.IntegerField(source="listing_id")
    purchase = serializers.UUIDField(source="purchase_id")
    level = serializers.DecimalField(max_digits=9, decimal_places=4)
    values = serializers.SerializerMethodField()
    microdata = serializers.SerializerMethodField()
    privacy_profile = serializers.SerializerMethodField()
    privacy_at_risk = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_privacy_profile(self, release) -> str:
        """Where the exact guarantee of this release is: its listing's privacy-loss profile at its level
        (``GET listings/{id}/privacy-profile/?epsilon=``), computed on request, not on every poll."""
        path = reverse("api-privacy-profile", kwargs={"listing_id": release.listing_id})
        return f"{path}?epsilon={release.level}"

    @extend_schema_field(PrivacyAtRiskSerializer(allow_null=True))
    def get_privacy_at_risk(self, release):
        """The privacy-at-risk paper's figures at this level, under its model; null for l2 (vector) listings."""
        figures = release.privacy_at_risk  # stored when the release was made
        if figures is None:  # not applicable (l2), or a release made before they were stored
            figures = level_at_risk(release.listing, release.level)
        if figures is None:
            return None
        return PrivacyAtRiskSerializer(figures).data

    @extend_schema_field(ReadingSerializer(many=True))
    def get_values(self, release) -> list[dict]:
        return ReadingSerializer(release_readings(release), many=True).data

    @extend_schema_field(ReleaseMicrodataSerializer(allow_null=True))
    def get_microdata(self, release):
        """A microdata release's decoded counts and downloads (null for other listings)."""
        found = release_microdata(release)
        if found is None:
            return None
        links = {fmt: reverse("api-release-records", kwargs={"release_id": release.public_id, "fmt": fmt})
                 for fmt in ("csv", "parquet")}
        return ReleaseMicrodataSerializer({**found, "records_csv": links["csv"], "records_parquet": links["parquet"]}).data


class PurchaseCreateSerializer(StrictSerializer):
    listing = IdField(help_text="the listing's id")
    epsilon = LevelInputField(help_text="the level to go up to, e.g. \"0.5\"")
    max_price = MaxPriceField(
        required=False,
        help_text="the most you agree to pay, in credits: send the price you were quoted. If the step costs more "
        "now (its owner changed the price), nothing is charged and the answer is 409 `price_changed` with the new "
        "quote; a lower price is charged as it is",
    )


class PurchaseSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    listing = serializers.IntegerField(source="listing_id")
    level_from = serializers.DecimalField(max_digits=9, decimal_places=4)
    epsilon = serializers.DecimalField(source="level_to", max_digits=9, decimal_places=4)
    price = serializers.DecimalField(max_digits=18, decimal_places=2)
    status = serializers.ChoiceField(choices=Purchase.Status.choices)
    failure_reason = serializers.CharField(help_text="why a failed purchase failed (it was refunded); empty otherwise")
    created_at = serializers.DateTimeField()
    release = serializers.SerializerMethodField()

    @extend_schema_field(ReleaseSerializer(allow_null=True, help_text="the release, once released; null before"))
    def get_release(self, purchase) -> dict | None:
        release = getattr(purchase, "release", None) if purchase.status == "released" else None
        return ReleaseSerializer(release).data if release else None


class PurchaseAnswerSerializer(PurchaseSerializer):
    """A purchase as ``POST purchases/`` answers it."""

    note = serializers.CharField(
        required=False, help_text="only when the release queue could not be reached: the release follows later"
    )


class LegSerializer(serializers.Serializer):
    transfer = serializers.CharField(source="transfer.public_id", help_text='opaque, e.g. "tr_7JbN1xQs4MvC8eRtUy2oPk"')
    kind = serializers.CharField(source="transfer.kind")
    memo = serializers.CharField(source="transfer.memo", help_text="the text stored with the transfer when it was made")
    description = serializers.SerializerMethodField(
        help_text='the line in words, from the transfer\'s own data, e.g. "Purchase: Clinic visits, ε 0.5 → 2"'
    )
    amount = serializers.DecimalField(max_digits=18, decimal_places=2)
    balance_after = serializers.DecimalField(
        max_digits=18, decimal_places=2, help_text="the balance once this movement was made (the statement's running balance)"
    )
    at = serializers.DateTimeField(source="transfer.created_at")

    def get_description(self, leg) -> str:
        return leg_description(leg)


class EarningsSerializer(serializers.Serializer):
    balance = serializers.DecimalField(max_digits=18, decimal_places=2, help_text="your earnings not yet paid out")
    requested = serializers.DecimalField(max_digits=18, decimal_places=2, help_text="payouts asked for, waiting for staff")
    paid = serializers.DecimalField(max_digits=18, decimal_places=2, help_text="payouts paid")
    currency = serializers.CharField()


class PayoutSerializer(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=18, decimal_places=2)
    status = serializers.ChoiceField(choices=["requested", "paid"], help_text="requested: staff pay it; paid: paid out")
    transfer = serializers.CharField(source="transfer.public_id", help_text="the ledger transfer that took it from your earnings")
    created_at = serializers.DateTimeField()
    paid_at = serializers.DateTimeField(allow_null=True)


class PayoutCreateSerializer(StrictSerializer):
    amount = PayoutAmountField(help_text="credits, from 0.01 to your earnings balance, e.g. \"25.00\"")


class WalletSerializer(serializers.Serializer):
    balance = serializers.DecimalField(max_digits=18, decimal_places=2)
    currency = serializers.CharField()


class TopUpSerializer(StrictSerializer):
    amount = TopUpAmountField(help_text=f"credits, {TOP_UP_MIN} to {TOP_UP_MAX}, e.g. \"25.00\"")


class TokenRequestSerializer(StrictSerializer):
    username = TextField(max_length=150, trim_whitespace=False)
    password = TextField(max_length=4096, trim_whitespace=False)


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField(help_text="the HTTP status, repeated")
    code = serializers.CharField(help_text="a stable code: invalid, not_found, conflict, insufficient_funds, ...")
    message = serializers.CharField(help_text="what went wrong, in plain words")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="input name -> its messages; empty when the error is not about one input",
    )
    quote = QuoteSerializer(required=False, help_text="`price_changed` only (POST purchases/): the quote as it "
                                                      "stands now; send its price as max_price to buy")


class ErrorSerializer(serializers.Serializer):
    """Every error answer of the API, from validation to 404 to throttling."""

    error = ErrorDetailSerializer()


#: delta in (0, 1): a decimal fraction such as 0.001, or a power of ten such as 1e-6 (the schema states exactly
#: what is accepted, so that what it allows is never refused and what it refuses is never accepted)
DELTA_PATTERN = r"^(?:0?\.[0-9]{0,29}[1-9]|[1-9](?:\.[0-9]{1,6})?e-[1-9][0-9]?)$"
#: a positive level such as 0.1 or 2.5
FINER_PATTERN = r"^(?:[1-9][0-9]{0,5}(?:\.[0-9]{1,12})?|0?\.[0-9]{0,11}[1-9])$"


class CompositionQuerySerializer(QuerySerializer):
    delta = serializers.RegexField(DELTA_PATTERN, required=False, max_length=40,
                                   help_text="strictly between 0 and 1, e.g. 0.001 or 1e-6 (default 1e-6)")
    eps = serializers.RegexField(FINER_PATTERN, required=False, max_length=40,
                                 help_text="the finer privacy level, above 0, e.g. 0.1 (the default)")


class CompositionListingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    level = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="its largest level released")
    values = serializers.IntegerField(help_text="how many values it releases")
    engine = serializers.CharField()
    finer = serializers.FloatField(help_text="the finer level its credit is counted at (at most its level)")
    risk = serializers.FloatField(allow_null=True, help_text="the paper's privacy at risk at the finer level, "
                                  "under the paper's model; null when that model does not describe its noise")
    excluded = serializers.CharField(allow_null=True, help_text="why it is credited nothing, or null")


class CompositionSerializer(serializers.Serializer):
    """A what-if: the marketplace enforces ``basic`` against the budget; the other figures change nothing."""

    delta = serializers.FloatField()
    eps = serializers.FloatField()
    count = serializers.IntegerField(help_text="the listings with something released")
    basic = serializers.DecimalField(max_digits=12, decimal_places=4, help_text="the sum of their levels (enforced)")
    advanced = serializers.FloatField(allow_null=True, help_text="(eps', delta)-DP by advanced composition")
    at_risk = serializers.FloatField(allow_null=True, help_text="eps' with the paper's privacy at risk, under its model")
    float_listings = serializers.IntegerField(help_text="how many of the listings have floating-point noise (the retired "
                                              "float path)")
    float_delta = serializers.FloatField(
        allow_null=True, help_text="0 when no listing has floating-point noise; null otherwise: the float path's "
        "delta was never established, so no figure here holds for those listings with any stated delta")
    budget = serializers.DecimalField(max_digits=12, decimal_places=4)
    definitions = serializers.DictField(child=serializers.CharField())
    what_if = serializers.CharField()
    listings = CompositionListingSerializer(many=True)


# The what-if's numbers documented with their exact ranges; the service checks them (every problem named at
# once, in its own words), so the fields only state them in the schema
@extend_schema_field({"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1, "example": 0.9})
class _Risk(serializers.FloatField):
    pass


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_PAIRS, "example": 200})
class _Pairs(serializers.IntegerField):
    pass


@extend_schema_field({"type": "integer", "minimum": MIN_SUBSAMPLE, "maximum": MAX_SUBSAMPLE, "example": 1000})
class _Subsample(serializers.IntegerField):
    pass


class SampledSensitivityRequestSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=["mean", "ridge"])
    column = serializers.CharField(required=False, max_length=200, help_text="the column of a mean")
    target = serializers.CharField(required=False, max_length=200, help_text="a regression's target column")
    features = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=10,
                                     help_text="a regression's feature columns")
    lam = serializers.FloatField(required=False, help_text="a regression's regularisation, above 0")
    gamma2 = _Risk(help_text="the risk: above 0, at most 1")
    pairs = _Pairs(help_text=f"neighbouring pairs drawn, 1 to {MAX_PAIRS}")
    subsample = _Subsample(help_text=f"records sampled, {MIN_SUBSAMPLE} to {MAX_SUBSAMPLE}")


class SampledSensitivitySerializer(serializers.Serializer):
    """A what-if estimate from the data: not differential privacy, never stored, never used for a listing."""

    query = serializers.CharField()
    kind = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    records = serializers.IntegerField()
    dropped = serializers.IntegerField(help_text="records left out for a missing value in a chosen column")
    sampled_records = serializers.IntegerField()
    pairs = serializers.IntegerField()
    gamma2 = serializers.FloatField()
    sampled_sensitivity = serializers.FloatField()
    largest_seen = serializers.FloatField()
    accuracy = serializers.FloatField(help_text="how close the sampled law is taken to be to the true one")
    confidence = serializers.FloatField()
    empirical_risk = serializers.FloatField(help_text="gamma2 times confidence (the paper's figure)")
    share_covered = serializers.FloatField(help_text="gamma2 - accuracy: with the stated confidence, at least this "
                                           "share of pairs drawn the same way move the answer by at most the value")
    replace_pairs_note = serializers.CharField(allow_null=True)
