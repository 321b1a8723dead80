"""What-ifs on privacy: composition across listings and sampled sensitivity."""

from decimal import ROUND_CEILING, ROUND_FLOOR

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.catalog.whatif import MAX_PAIRS, MAX_SUBSAMPLE, MIN_SUBSAMPLE

from .base import LevelTextField, StrictSerializer
from .listings import QuerySerializer

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
    finer = serializers.DecimalField(max_digits=20, decimal_places=12, coerce_to_string=False,
                                     help_text="the finer level its credit is counted at (at most its level)")
    risk = serializers.DecimalField(
        max_digits=7, decimal_places=6, rounding=ROUND_FLOOR, coerce_to_string=False, allow_null=True,
        help_text="the paper's privacy at risk at the finer level (the chance, under the paper's model, that its loss "
        "stays within the finer level), rounded down to 6 places so that the credit is never overstated; null when "
        "that model does not describe its noise")
    excluded = serializers.CharField(allow_null=True, help_text="why it is credited nothing, or null")


class CompositionSerializer(serializers.Serializer):
    """A what-if: the marketplace enforces ``basic`` against the budget; the other figures change nothing."""

    delta = serializers.FloatField()
    eps = serializers.DecimalField(max_digits=20, decimal_places=12, coerce_to_string=False,
                                   help_text="the finer level asked for")
    count = serializers.IntegerField(help_text="the listings with something released")
    basic = serializers.DecimalField(max_digits=12, decimal_places=4, help_text="the sum of their levels (enforced)")
    advanced = serializers.DecimalField(
        max_digits=20, decimal_places=6, rounding=ROUND_CEILING, coerce_to_string=False, allow_null=True,
        help_text="(eps', delta)-DP by advanced composition: eps' rounded up to 6 places")
    at_risk = serializers.DecimalField(
        max_digits=20, decimal_places=6, rounding=ROUND_CEILING, coerce_to_string=False, allow_null=True,
        help_text="eps' with the paper's privacy at risk, under its model, rounded up to 6 places")
    float_listings = serializers.IntegerField(help_text="how many of the listings have floating-point noise (the retired "
                                              "float path)")
    float_delta = serializers.FloatField(
        allow_null=True, help_text="0 when no listing has floating-point noise; null otherwise: the float path's "
        "delta was never established, so no figure here holds for those listings with any stated delta")
    listings_delta = serializers.FloatField(
        help_text="the deltas the listings state themselves (the Skellam path), added up: every figure here holds with "
        "delta plus this (0: none)")
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


class FitsQuerySerializer(StrictSerializer):
    mechanism = serializers.ChoiceField(choices=["lattice", "skellam"], required=False,
                                        help_text="the shape's mechanism (default lattice)")
    ceiling = LevelTextField(required=False, help_text='its ceiling (default "1")')
    values = serializers.IntegerField(required=False, min_value=1, max_value=1000,
                                      help_text="skellam: how many counts one record moves by one (default 1)")


class QualityLevelSerializer(serializers.Serializer):
    level = serializers.DecimalField(max_digits=9, decimal_places=4)
    rows = serializers.IntegerField(help_text="how many synthetic rows the level gives")
    tvd = serializers.FloatField(help_text="the rows' average total-variation distance from your data over every "
                                 "two-way table (0 identical, 1 nothing in common)")


class QualitySerializer(serializers.Serializer):
    listing = serializers.IntegerField()
    levels = QualityLevelSerializer(many=True, help_text="each level released, lowest first")


class FitsSerializer(serializers.Serializer):
    fits = serializers.IntegerField(help_text="how many more listings of this shape fit beside the dataset's (at most 200)")
    mechanism = serializers.CharField()
    ceiling = serializers.DecimalField(max_digits=9, decimal_places=4)
    values = serializers.IntegerField()
    rule = serializers.ChoiceField(choices=["sum", "composition"],
                                   help_text="sum: a dataset without a δ; composition: by privacy-loss distributions")
