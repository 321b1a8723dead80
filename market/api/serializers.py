"""Serializers: shapes of the API's answers and inputs. No business logic."""

from decimal import Decimal, InvalidOperation

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.catalog.pricing import curve_of
from market.catalog.risk import level_at_risk
from market.core import ids
from market.trading.models import Purchase

from releases.selectors import release_readings

#: a privacy level as the API writes it and as buyers best send it: "0.5", at most 4 decimal places
#: (the services also read numbers such as 0.5 and other decimal forms)
LEVEL_PATTERN = r"^[0-9]{1,5}(\.[0-9]{1,4})?$"
#: an amount of credits: "12.50", at most 2 decimal places
MONEY_PATTERN = r"^[0-9]{1,16}(\.[0-9]{1,2})?$"
#: the ledger's amounts are NUMERIC(18, 2): no amount of credits reaches 10^16
LEDGER_LIMIT = Decimal(10) ** 16


def within_ledger(value) -> None:
    """Refuse a number that no amount of credits can be (it would fail deep in the ledger's
    arithmetic); anything else is left to the services, which judge it with their own messages."""
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError, TypeError):
        return
    if number.is_finite() and number.copy_abs() >= LEDGER_LIMIT:
        raise serializers.ValidationError("At most 9999999999999999.99: the largest amount of credits there is.")


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": LEVEL_PATTERN, "example": "0.5"},
            {"type": "number", "minimum": 0, "exclusiveMinimum": True, "example": 0.5},
        ]
    }
)
class LevelInputField(serializers.JSONField):
    """A level as sent: a decimal string or a number (``market.core.levels.parse_level`` reads it)."""


@extend_schema_field({"type": "string", "pattern": LEVEL_PATTERN, "example": "5"})
class LevelTextField(serializers.CharField):
    """A level as text; the services judge it (documented with its pattern)."""


@extend_schema_field({"type": "string", "pattern": MONEY_PATTERN, "example": "10.00"})
class MoneyTextField(serializers.CharField):
    """An amount of credits as text, within the ledger's range; the services judge the rest."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.validators.append(within_ledger)


def _object(kinds: list[str], required: dict, description: str) -> dict:
    """An object schema of one kind of input, with no other properties."""
    # (the enum inside allOf: drf-spectacular's enum hook would merge the variants' kinds into one)
    properties = {"kind": {"allOf": [{"type": "string", "enum": kinds}]}, **required}
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": ["kind", *required],
        "additionalProperties": False,
    }


_NUMBER = {"type": "number"}
_COLUMNS = {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 16}
#: one statistic of a listing (``market/catalog/statistics.py``), as sent and as stored
STATISTIC_SCHEMA = {
    "oneOf": [
        _object(["count"], {}, description="the number of records"),
        _object(
            ["sum", "mean"],
            {"column": {"type": "string"}, "lower": _NUMBER, "upper": _NUMBER},
            description="the sum or mean of a column, each value clamped to [lower, upper]",
        ),
        _object(
            ["histogram"],
            {"column": {"type": "string"}, "bins": {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 51}},
            description="counts per bin; bins lists 2 to 51 increasing edges",
        ),
        _object(
            ["centroid"],
            {"columns": _COLUMNS, "center": {"type": "array", "items": _NUMBER}, "radius": _NUMBER,
             "min_records": {"type": "integer", "minimum": 2}},
            description="a vector statistic, listed on its own: the centroid of the points pulled within radius of center",
        ),
        _object(
            ["point"],
            {"columns": _COLUMNS, "row": {"type": "integer", "minimum": 1}, "radius": _NUMBER},
            description="a vector statistic, listed on its own: one record's point, protected within radius",
        ),
    ]
}
#: numbers in price curves and cost models are sent as decimal text (numbers are read too)
_DECIMAL_TEXT = {"type": "string", "pattern": r"^[0-9]{1,16}(\.[0-9]{1,4})?$"}
PRICE_CURVE_SCHEMA = {
    "oneOf": [
        _object(["linear"], {"c": _DECIMAL_TEXT}, description="P(eps) = c * eps"),
        _object(["power"], {"c": _DECIMAL_TEXT, "p": _DECIMAL_TEXT}, description="P(eps) = c * eps^p, p at most 2"),
        _object(
            ["compensation"],
            {"margin": _DECIMAL_TEXT},
            description="margin * people * (E_min + E e^(-rate/eps)); needs compensation",
        ),
    ]
}
COMPENSATION_SCHEMA = {
    "type": "object",
    "properties": {
        "E": _DECIMAL_TEXT,
        "rate": _DECIMAL_TEXT,
        "E_min": _DECIMAL_TEXT,
        "people": {"type": "integer", "minimum": 1},
    },
    "required": ["E", "people"],
    "additionalProperties": False,
}


@extend_schema_field(
    {"type": "array", "items": STATISTIC_SCHEMA, "minItems": 1, "maxItems": 20}, component_name="Statistics"
)
class StatisticsField(serializers.JSONField):
    """The list of statistics, as sent and as stored (validated by the catalogue's services)."""


@extend_schema_field(PRICE_CURVE_SCHEMA, component_name="PriceCurveInput")
class PriceCurveField(serializers.JSONField):
    """The curve as sent, its price scale c within the ledger's range; the services judge the rest."""

    def to_internal_value(self, data):
        curve = super().to_internal_value(data)
        if isinstance(curve, dict) and "c" in curve:
            try:
                within_ledger(curve["c"])
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"c": exc.detail}) from None
        return curve


@extend_schema_field(COMPENSATION_SCHEMA, component_name="Compensation")
class CompensationField(serializers.JSONField):
    pass


class ListingQuerySerializer(serializers.Serializer):
    # a CharField refuses NUL characters (PostgreSQL cannot compare text with them)
    search = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, default="", help_text="text in the title or description"
    )


class ListingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    owner = serializers.CharField(source="dataset.owner.username")
    statistics = StatisticsField()
    labels = serializers.ListField(child=serializers.CharField())
    sensitivity = serializers.FloatField()
    ceiling = serializers.DecimalField(max_digits=9, decimal_places=4)
    price_curve = serializers.SerializerMethodField()
    your_level = serializers.SerializerMethodField()
    your_cap = serializers.SerializerMethodField()
    is_open = serializers.BooleanField()
    created_at = serializers.DateTimeField()

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

    def get_your_level(self, listing) -> str | None:
        held = self.context.get("levels_held")
        if held is None:
            return None
        return str(held.get(listing.pk, "0.0000"))

    def get_your_cap(self, listing) -> str | None:
        """The highest level you may buy on this listing (signed in; null otherwise):
        the ceiling, unless the owner caps it by how far you stand from them."""
        caps = self.context.get("caps")
        if caps is None:
            return None
        return str(caps[listing.pk].level)


class ListingCreateSerializer(serializers.Serializer):
    dataset = serializers.CharField(max_length=ids.MAX_LENGTH, help_text='the dataset\'s id, e.g. "ds_4mGz2QpXk8RbT1vLwYc7Na"')
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    statistics = StatisticsField(
        help_text='e.g. [{"kind": "count"}, {"kind": "mean", "column": "age", "lower": 0, "upper": 100}]'
    )
    ceiling = LevelTextField(help_text='the highest level sold, e.g. "5"')
    price_per_epsilon = MoneyTextField(required=False, help_text="c of the linear curve P(eps) = c * eps")
    price_curve = PriceCurveField(
        required=False,
        help_text='instead of price_per_epsilon: {"kind": "linear", "c"}, {"kind": "power", "c", "p" (at most 2)} '
        'or {"kind": "compensation", "margin"} (needs compensation)',
    )
    compensation = CompensationField(
        required=False, help_text='the cost model {"E", "rate", "E_min", "people"}: per person E_min + E e^(-rate/eps)'
    )


class DatasetSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "ds_4mGz2QpXk8RbT1vLwYc7Na"')
    name = serializers.CharField()
    description = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    row_count = serializers.IntegerField()
    total_budget = serializers.DecimalField(max_digits=9, decimal_places=4, allow_null=True)
    created_at = serializers.DateTimeField()


class DatasetCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    file = serializers.FileField()
    total_budget = LevelTextField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text="the most all listings' ceilings may add up to",
    )


class AccuracySerializer(serializers.Serializer):
    label = serializers.CharField()
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")


class QuoteSerializer(serializers.Serializer):
    listing = serializers.IntegerField(source="listing_id")
    epsilon = serializers.DecimalField(max_digits=9, decimal_places=4)
    current_level = serializers.DecimalField(max_digits=9, decimal_places=4)
    ceiling = serializers.DecimalField(max_digits=9, decimal_places=4)
    cap = serializers.DecimalField(
        max_digits=9, decimal_places=4, help_text="the highest level you may buy here: the ceiling unless capped by trust"
    )
    cap_reason = serializers.CharField(help_text="why the cap is what it is, in plain words")
    # not bounded by the ledger's 18 digits: a quote may name a price no wallet can pay
    price = serializers.DecimalField(max_digits=None, decimal_places=2)
    accuracy = AccuracySerializer(many=True, help_text="per released value at this level")


class ReadingSerializer(serializers.Serializer):
    label = serializers.CharField()
    kind = serializers.CharField()
    value = serializers.FloatField()
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")


class PrivacyAtRiskSerializer(serializers.Serializer):
    epsilon0 = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="the level released")
    epsilon = serializers.DecimalField(
        max_digits=12, decimal_places=6, help_text="the finer level the release also meets, with the risk below"
    )
    risk = serializers.FloatField(help_text="gamma: the release is epsilon-DP with this probability (Theorem 12)")
    dimension = serializers.IntegerField(help_text="k, the number of released values")
    rate = serializers.DecimalField(
        max_digits=12, decimal_places=6, help_text="c of the cost model E_min + E e^(-c/eps) whose budget epsilon minimises"
    )


class ReleaseSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "rel_9QeT5wXr2LpZ0aKcVn3sHd"')
    listing = serializers.IntegerField(source="listing_id")
    purchase = serializers.UUIDField(source="purchase_id")
    level = serializers.DecimalField(max_digits=9, decimal_places=4)
    values = serializers.SerializerMethodField()
    privacy_at_risk = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_privacy_at_risk(self, release) -> PrivacyAtRiskSerializer:
        figures = level_at_risk(release.listing, release.level)
        return PrivacyAtRiskSerializer({k: figures[k] for k in ("epsilon0", "epsilon", "risk", "dimension", "rate")}).data

    @extend_schema_field(ReadingSerializer(many=True))
    def get_values(self, release) -> list[dict]:
        return ReadingSerializer(release_readings(release), many=True).data


class PurchaseCreateSerializer(serializers.Serializer):
    listing = serializers.IntegerField(help_text="the listing's id")
    epsilon = LevelInputField(help_text="the level to go up to, e.g. \"0.5\"")


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
    memo = serializers.CharField(source="transfer.memo")
    amount = serializers.DecimalField(max_digits=18, decimal_places=2)
    at = serializers.DateTimeField(source="transfer.created_at")


class WalletSerializer(serializers.Serializer):
    balance = serializers.DecimalField(max_digits=18, decimal_places=2)
    currency = serializers.CharField()


class TopUpSerializer(serializers.Serializer):
    # a Decimal of bounded size: the ledger then judges the amount (its range, its cents)
    amount = serializers.DecimalField(max_digits=12, decimal_places=2, help_text="credits, e.g. \"25.00\"")


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField(help_text="the HTTP status, repeated")
    code = serializers.CharField(help_text="a stable code: invalid, not_found, conflict, insufficient_funds, ...")
    message = serializers.CharField(help_text="what went wrong, in plain words")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="input name -> its messages; empty when the error is not about one input",
    )


class ErrorSerializer(serializers.Serializer):
    """Every error answer of the API, from validation to 404 to throttling."""

    error = ErrorDetailSerializer()
