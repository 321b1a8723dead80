"""Datasets: their columns, progress, creation, uploads, column choices and budget changes."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from market.catalog.composition import delta_text
from market.catalog.selectors import dataset_composed as composed_of
from market.catalog.services import same_content_notice
from market.catalog.spec.columns import MISSING as MISSING_POLICIES
from market.catalog.spec.columns import TYPES as COLUMN_TYPES

from .base import DeltaTextField, LevelTextField, StrictSerializer, text_field


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


class ComposedSerializer(serializers.Serializer):
    delta = serializers.CharField(help_text='δ spent at ε = budget by the listings at their ceilings, rounded up, e.g. "3.10e-7"')
    epsilon = serializers.CharField(allow_null=True, help_text="the least ε at the dataset's δ, rounded up to 0.001 "
                                    "(null: none meets it)")


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
    delta = serializers.SerializerMethodField(
        help_text='the dataset\'s δ as text, e.g. "1e-6" (null: none; its listings are then pure ε-DP and their '
        "ceilings add up to at most budget)")
    composed = serializers.SerializerMethodField(
        help_text="with a δ: what its counted listings spend together at their ceilings, composed by privacy-loss "
        "distributions: delta (at ε budget, rounded up) and epsilon (the least ε at the dataset's δ, rounded up); "
        "null without a δ")
    ceilings_total = serializers.DecimalField(
        max_digits=12, decimal_places=4, help_text="what the listings' ceilings add up to (at most budget without a δ)"
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

    @extend_schema_field({"type": "string", "nullable": True, "example": "1e-6"})
    def get_delta(self, dataset):
        return delta_text(dataset.delta_budget)

    @extend_schema_field(ComposedSerializer(allow_null=True))
    def get_composed(self, dataset):
        found = composed_of(dataset)
        return None if found is None else {"delta": found.delta_text, "epsilon": found.epsilon_text}

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
    delta = DeltaTextField(
        required=False, allow_null=True,
        help_text='the dataset\'s δ, at most "1e-6" (left out: as it is; null: none). With a δ its listings compose by '
        "privacy-loss distributions and may use the Skellam path; without, their ceilings add up to at most the budget")
    reason = text_field(max_length=500, help_text="why, for the dataset's audit record")
