"""Money: ledger legs, earnings, payouts, the wallet, top-ups, and the token request."""

from rest_framework import serializers

from market.ledger.selectors import leg_description

from .base import (
    TOP_UP_MAX,
    TOP_UP_MIN,
    PayoutAmountField,
    StrictSerializer,
    TextField,
    TopUpAmountField,
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
