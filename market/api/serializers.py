"""Serializers: shapes of the API's answers and inputs. No business logic."""

from decimal import Decimal

from rest_framework import serializers

from market.catalog.pricing import curve_of
from market.catalog.risk import level_at_risk

from releases.selectors import release_readings


class ListingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    owner = serializers.CharField(source="dataset.owner.username")
    statistics = serializers.JSONField()
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
    dataset = serializers.IntegerField()
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    statistics = serializers.JSONField()
    ceiling = serializers.CharField()
    price_per_epsilon = serializers.CharField(required=False, help_text="c of the linear curve P(eps) = c * eps")
    price_curve = serializers.JSONField(
        required=False,
        help_text='instead of price_per_epsilon: {"kind": "linear", "c"}, {"kind": "power", "c", "p" (at most 2)} '
        'or {"kind": "compensation", "margin"} (needs compensation)',
    )
    compensation = serializers.JSONField(
        required=False, help_text='the cost model {"E", "rate", "E_min", "people"}: per person E_min + E e^(-rate/eps)'
    )


class DatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
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
    total_budget = serializers.CharField(required=False, allow_blank=True, allow_null=True, default=None)


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
    price = serializers.DecimalField(max_digits=18, decimal_places=2)
    accuracy = AccuracySerializer(many=True, help_text="per released value at this level")


class ReadingSerializer(serializers.Serializer):
    label = serializers.CharField()
    kind = serializers.CharField()
    value = serializers.FloatField()
    noise_scale = serializers.FloatField(help_text="the Laplace scale of the noise on this value")
    error_bound = serializers.FloatField(help_text="|value - truth| <= error_bound with probability 95%")


class PrivacyAtRiskSerializer(serializers.Serializer):
    epsilon0 = serializers.DecimalField(max_digits=9, decimal_places=4, help_text="the level released")
    epsilon = serializers.FloatField(help_text="the finer level the release also meets, with the risk below")
    risk = serializers.FloatField(help_text="gamma: the release is epsilon-DP with this probability (Theorem 12)")
    dimension = serializers.IntegerField(help_text="k, the number of released values")
    rate = serializers.FloatField(help_text="c of the cost model E_min + E e^(-c/eps) whose budget epsilon minimises")


class ReleaseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    listing = serializers.IntegerField(source="listing_id")
    purchase = serializers.UUIDField(source="purchase_id")
    level = serializers.DecimalField(max_digits=9, decimal_places=4)
    values = serializers.SerializerMethodField()
    privacy_at_risk = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_privacy_at_risk(self, release) -> PrivacyAtRiskSerializer:
        figures = level_at_risk(release.listing, release.level)
        return PrivacyAtRiskSerializer({k: figures[k] for k in ("epsilon0", "epsilon", "risk", "dimension", "rate")}).data

    def get_values(self, release) -> list[dict]:
        return ReadingSerializer(release_readings(release), many=True).data


class PurchaseCreateSerializer(serializers.Serializer):
    listing = serializers.JSONField(help_text="the listing's id")
    epsilon = serializers.JSONField(help_text="the level to go up to, e.g. \"0.5\"")


class PurchaseSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    listing = serializers.IntegerField(source="listing_id")
    level_from = serializers.DecimalField(max_digits=9, decimal_places=4)
    epsilon = serializers.DecimalField(source="level_to", max_digits=9, decimal_places=4)
    price = serializers.DecimalField(max_digits=18, decimal_places=2)
    status = serializers.CharField()
    failure_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    release = serializers.SerializerMethodField()

    def get_release(self, purchase) -> dict | None:
        release = getattr(purchase, "release", None) if purchase.status == "released" else None
        return ReleaseSerializer(release).data if release else None


class LegSerializer(serializers.Serializer):
    transfer = serializers.IntegerField(source="transfer_id")
    kind = serializers.CharField(source="transfer.kind")
    memo = serializers.CharField(source="transfer.memo")
    amount = serializers.DecimalField(max_digits=18, decimal_places=2)
    at = serializers.DateTimeField(source="transfer.created_at")


class WalletSerializer(serializers.Serializer):
    balance = serializers.DecimalField(max_digits=18, decimal_places=2)
    currency = serializers.CharField()


class TopUpSerializer(serializers.Serializer):
    amount = serializers.CharField()


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()
