"""Quotes, readings, privacy at risk and profiles, releases and purchases: what a buyer is answered."""

import numbers

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.catalog.risk import level_at_risk
from market.catalog.spec import MICRODATA_COLUMN
from market.trading.models import Purchase
from market.trading.selectors import release_microdata, release_readings, release_synthetic

from .fast import FastOutput
from .base import IdField, LevelInputField, MaxPriceField, StrictSerializer
from .inputs import DECIMAL_TEXT_PATTERN


class AccuracySerializer(FastOutput, serializers.Serializer):
    label = serializers.CharField()
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")


class StatisticAccuracySerializer(FastOutput, serializers.Serializer):
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


class TargetEchoSerializer(FastOutput, serializers.Serializer):
    name = serializers.CharField(allow_null=True, help_text="the statistic, or null for every statistic")
    error_bound = DecimalTextField(max_digits=None, decimal_places=None)


class QuoteSerializer(FastOutput, serializers.Serializer):
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
    warning = serializers.CharField(
        allow_null=True, help_text="a plain sentence when this level's answers are mostly noise: a statistic's 95% "
        "interval (± its error bound) is wider than the whole range its value can take (0 to n for a count of n "
        "records, a mean's clamp range); null when none")


@extend_schema_field({"type": "number"})
class NumberField(serializers.FloatField):
    """A number as the reading holds it: a JSON integer for a whole-number value (a count or a bin on the
    lattice path, a sum on an integer grid), else a JSON number with its decimals."""

    def to_representation(self, value):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        return float(value)


class ReadingSerializer(FastOutput, serializers.Serializer):
    label = serializers.CharField()
    kind = serializers.CharField()
    value = NumberField(
        help_text="the released value at its meaningful precision: on a lattice listing its grid's decimals (an "
        "integer for counts and bins and for a sum on an integer grid; a sum on a grid such as 0.01 has its grid's "
        "decimals), otherwise rounded to the place of the second significant digit of error_bound (68.02593 ± "
        "9.0388 is 68.0 ± 9.1); value_exact is the value as released"
    )
    noise_scale = serializers.FloatField(
        help_text="the Laplace scale of the noise on this value; a mean's is its sum's scale divided by the count "
        "it divides by (the public number of records, or its released count, at least 1)")
    error_bound = NumberField(
        help_text="|value - truth| <= error_bound with probability 95%, rounded UP at value's precision (never "
        "understated); error_bound_exact is the bound as computed")
    value_exact = NumberField(help_text="the released value, unrounded")
    error_bound_exact = serializers.FloatField(help_text="the 95% error bound, unrounded")
    note = serializers.CharField(
        required=False, default="",
        help_text="a mean's cell, read off its released count: empty, \"too few records to estimate\" (the value "
        "says nothing better than the clamp range), \"other: values outside the declared categories\" or \"no records "
        "outside the declared categories (its released count is 0)\"")


class PrivacyAtRiskSerializer(FastOutput, serializers.Serializer):
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


class ProfilePointSerializer(FastOutput, serializers.Serializer):
    epsilon = serializers.DecimalField(max_digits=12, decimal_places=6, help_text="eps', at most the level (exact)")
    delta = serializers.FloatField(
        allow_null=True,
        help_text="δ at this ε′: the hockey-stick divergence, a probability; null when the profile was not "
        "computed (see method)",
    )


class PrivacyProfileSerializer(FastOutput, serializers.Serializer):
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


class DecodedBitSerializer(FastOutput, serializers.Serializer):
    label = serializers.CharField()
    reported = serializers.IntegerField(help_text="the number of records whose report of this bit says 1")
    estimate = serializers.FloatField(help_text="the number of records with the bit set, decoded without bias")
    low = serializers.FloatField(help_text="95% interval (normal approximation), clipped to [0, records]")
    high = serializers.FloatField()
    error_bound = serializers.FloatField(help_text="the interval's half-width before clipping")


class ReleaseMicrodataSerializer(FastOutput, serializers.Serializer):
    """A microdata release: the records' randomised bits (download them) and the decoded counts."""

    records = serializers.IntegerField()
    bits = serializers.IntegerField()
    weight = serializers.IntegerField(help_text="the most bits one record change can flip")
    bit_level = serializers.CharField(help_text='each bit\'s level, exactly: the release\'s level / weight, as a whole '
                                      'number or a fraction such as "1/8"')
    p = serializers.FloatField(help_text="P(report 1 | bit 1) = 1 / (1 + e^-b), b the bit's own privacy parameter")
    q = serializers.FloatField(help_text="P(report 1 | bit 0) = e^-b / (1 + e^-b)")
    salt = serializers.CharField(help_text="the Bloom filters' public hash key (hex)")
    columns = MicrodataColumnsField(help_text="each column's bits, as the listing states them")
    decoded = DecodedBitSerializer(many=True)
    records_csv = serializers.CharField(help_text="where to download the records as CSV (one row per record)")
    records_parquet = serializers.CharField(help_text="the same as Parquet")


class ReleaseSyntheticSerializer(serializers.Serializer):
    """A synthetic-data release: its rows (download them)."""

    columns = serializers.ListField(child=serializers.CharField(), help_text="the rows' columns, as declared")
    rows = serializers.IntegerField(allow_null=True, help_text="how many rows: the public number of records; null "
                                    "when it is private (the rows then number the release's estimate of it)")
    rows_csv = serializers.CharField(help_text="where to download the rows as CSV (a header, then one line per row)")
    rows_parquet = serializers.CharField(help_text="the same as Parquet")


class ReleaseSerializer(FastOutput, serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "rel_9QeT5wXr2LpZ0aKcVn3sHd"')
    listing = serializers.IntegerField(source="listing_id")
    purchase = serializers.UUIDField(source="purchase_id")
    level = serializers.DecimalField(max_digits=9, decimal_places=4)
    values = serializers.SerializerMethodField()
    microdata = serializers.SerializerMethodField()
    synthetic = serializers.SerializerMethodField()
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

    @extend_schema_field(ReleaseSyntheticSerializer(allow_null=True))
    def get_synthetic(self, release):
        """A synthetic-data release's rows to download: the same for every buyer of its level (null for
        other listings)."""
        found = release_synthetic(release)
        if found is None:
            return None
        links = {fmt: reverse("api-release-rows", kwargs={"release_id": release.public_id, "fmt": fmt})
                 for fmt in ("csv", "parquet")}
        return ReleaseSyntheticSerializer({**found, "rows_csv": links["csv"], "rows_parquet": links["parquet"]}).data

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


class PurchaseSerializer(FastOutput, serializers.Serializer):
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
