"""The API's field types and patterns: strict serializers, ids, decimal inputs, plain text."""

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.core.levels import MAX_LEVEL

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


#: A delta of (eps, delta)-DP as text, at most 1e-6 (every delta the marketplace takes): a decimal
#: (0.000001, 0.000000001) or in E notation (1e-6, 2.5e-9), at most 20 decimal places.
DP_DELTA_PATTERN = (r"^(0\.000001|0\.000000[0-9]{1,14}|1(\.0{1,12})?[eE]-0?6|[1-9](\.[0-9]{1,12})?[eE]-(0?[7-9]|1[0-9]))$")


@extend_schema_field({"type": "string", "pattern": DP_DELTA_PATTERN, "example": "1e-9"})
class DeltaTextField(TextField):
    """A delta as text, e.g. "1e-9" (the services check its range)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(DP_DELTA_PATTERN, 'A delta of at most 1e-6, such as "1e-9" or "0.000000001".'))


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
