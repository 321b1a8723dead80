"""The one error shape every 4xx answer has."""

from rest_framework import serializers

from .readings import QuoteSerializer


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
