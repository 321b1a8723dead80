"""Listings: the catalogue's queries, a listing's answer, and what creates, changes and closes one."""

from decimal import Decimal

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.catalog import sizes
from market.catalog.composition import delta_text
from market.catalog.models import Listing
from market.catalog.pricing import curve_of
from market.catalog.spec import S_CONFIRM
from market.core import ids
from market.core.fields import LEVEL_QUANTUM
from market.core.levels import level_text

from .base import (
    OPTIONAL_TEXT_PATTERN,
    TEXT_PATTERN,
    DeltaTextField,
    LevelTextField,
    MoneyTextField,
    StrictSerializer,
    TextField,
    text_field,
)
from .inputs import (
    _DECIMAL_TEXT,
    PRICE_CURVE_SHOWN,
    CompensationField,
    PriceCurveField,
    StatisticsField,
    TargetField,
    _schema_checked,
)


class QuoteQuerySerializer(serializers.Serializer):
    epsilon = LevelTextField(required=False, help_text="the level to go up to, e.g. 0.5 (or give target instead)")
    target = serializers.ListField(
        child=TargetField(), required=False, min_length=1, max_length=21,
        help_text="instead of epsilon: the 95% error bound you need, and the quote is for the cheapest level above "
        "yours (up to your cap) that meets every target given. A bound alone (target=0.5) applies to every "
        "statistic; a statistic's name as the quote's statistics[].name, or any label of a release's readings "
        "(\"mean(weight) | gender = female\"; exactly or in any case), a colon and a bound "
        "(target=mean(age):1) to that one (an unknown name is refused with a few known ones); repeat the parameter for several (each must be met). "
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


class ReleaseQuerySerializer(QuerySerializer):
    listing = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                       help_text="only the releases of this listing (its id)")
    since = serializers.DateTimeField(required=False, help_text="only the releases made at or after this moment "
                                      "(ISO 8601, e.g. 2026-11-01T00:00:00Z or 2026-11-01)")


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
    mechanism = serializers.ChoiceField(choices=Listing.Mechanism.choices, help_text="the release mechanism")
    delta = serializers.SerializerMethodField(
        help_text='the δ of every level sold, e.g. "1e-9" (null: exactly ε-DP, δ = 0)')
    levels = serializers.SerializerMethodField(
        help_text="the levels a listing sold on a ladder offers (the Skellam path), from the lowest; null: any level "
        "up to buyable_ceiling")
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
    status = serializers.ChoiceField(
        choices=Listing.Status.choices,
        help_text="ready (sold); preparing (yours only: its answer being computed over a large table, its budget "
        "reserved, not yet open to buyers; the listing.ready or listing.failed webhook says when it is done); or "
        "failed (yours only: never sold, holding no budget; failure says why)",
    )
    failure = serializers.CharField(help_text="why the listing could not be prepared (status failed; else empty)")
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

    @extend_schema_field({"type": "string", "nullable": True, "example": "1e-9"})
    def get_delta(self, listing):
        return delta_text(listing.delta)

    @extend_schema_field({"type": "array", "items": {"type": "string"}, "nullable": True})
    def get_levels(self, listing):
        ladder = listing.release_mechanism.ladder()
        return None if ladder is None else [level_text(level) for level in ladder]

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
    mechanism = serializers.ChoiceField(
        choices=["lattice", "skellam"], required=False,
        help_text="lattice (default: exact integer Laplace-like noise, exactly eps-DP, each group of values its share "
        "of eps) or skellam (exact integer Gaussian-like noise, (eps, delta)-DP, calibrated to the l2 size of one "
        "record's change: less noise when a record moves many values; on a dataset with a δ only; sells a ladder "
        "of levels up to the ceiling)",
    )
    delta = DeltaTextField(required=False, help_text='skellam only: the δ of each level sold, default "1e-9", at most '
                           "the dataset's δ")

    def validate(self, attrs):
        return _one_price(attrs)


class ListingCompareSerializer(StrictSerializer):
    dataset = text_field(max_length=ids.MAX_LENGTH, help_text="your dataset's id")
    statistics = StatisticsField(help_text="the statistics, as for a new listing")
    ceiling = LevelTextField(help_text="the ceiling, as for a new listing")
    delta = DeltaTextField(required=False, help_text='the Skellam listing\'s δ (default "1e-9", at most the dataset\'s)')


class ComparedValueSerializer(serializers.Serializer):
    label = serializers.CharField()
    error_bound = serializers.FloatField(help_text="the 95% error bound at the ceiling, in the value's units")


class ComparedMechanismSerializer(serializers.Serializer):
    mechanism = serializers.ChoiceField(choices=["lattice", "skellam"])
    label = serializers.CharField()
    delta = serializers.SerializerMethodField(help_text="its δ (null: exactly ε-DP)")
    available = serializers.BooleanField(help_text="whether a listing on this dataset may use it")
    reason = serializers.CharField(help_text="why not, when it is not available (empty otherwise)")
    values = ComparedValueSerializer(many=True)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_delta(self, entry):
        return delta_text(entry["delta"])


class ComparisonSerializer(serializers.Serializer):
    proposed = serializers.ChoiceField(choices=["lattice", "skellam"], help_text="the mechanism with the smaller bounds")
    ratio = serializers.FloatField(
        allow_null=True, help_text="the mean over values of (Skellam bound / lattice bound)^2: below 1, the Skellam "
        "path is more accurate (null: not available)")
    mechanisms = ComparedMechanismSerializer(many=True)


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
