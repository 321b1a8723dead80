"""Staff's view of datasets and listings. Raw data, true answers and noise are never shown.

A dataset's budget changes only through ``dataset_budget_set`` (checked
against the listings' ceilings, and audited): the admin form asks for a
reason, refuses a budget below the ceilings with the figure, and lists the
audit rows read-only.
"""

from django import forms
from django.contrib import admin

from market.core.errors import DomainError
from market.core.levels import level_text

from .models import Dataset, DatasetBudgetChange, Listing
from .selectors import ceilings_needed
from .services import dataset_budget_set


class DatasetAdminForm(forms.ModelForm):
    budget_reason = forms.CharField(
        required=False, max_length=500, label="Reason for a budget change",
        help_text="Required when the budget changes; kept in the dataset's budget history.",
    )

    class Meta:
        model = Dataset
        fields = ("name", "description", "total_budget")

    def clean(self):
        cleaned = super().clean()
        if "total_budget" in self.changed_data and cleaned.get("total_budget") is not None:
            need = ceilings_needed(dataset_pk=self.instance.pk)
            if cleaned["total_budget"] < need:
                self.add_error(
                    "total_budget",
                    f"The listings on this dataset have ceilings adding up to {level_text(need)}; the budget cannot be below that.",
                )
            if not (cleaned.get("budget_reason") or "").strip():
                self.add_error("budget_reason", "Say why the budget changes (it is kept in the history).")
        return cleaned


class BudgetChangeInline(admin.TabularInline):
    model = DatasetBudgetChange
    fields = ("at", "old", "new", "actor", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "budget history (append-only)"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    # the exact record count is private (the true answer of a count): not shown, even to staff
    form = DatasetAdminForm
    # nor are the columns' summaries (min, max, categories, examples: the owner's data) or the files
    list_display = ("public_id", "name", "owner", "status", "total_budget", "created_at")
    fields = ("public_id", "owner", "name", "description", "status", "column_types", "total_budget", "budget_reason",
              "created_at")
    readonly_fields = ("public_id", "owner", "status", "column_types", "created_at")
    search_fields = ("=public_id", "name", "owner__username")
    inlines = [BudgetChangeInline]

    def has_add_permission(self, request):
        return False  # datasets are uploaded by their owners, where they are validated

    @admin.display(description="columns")
    def column_types(self, obj) -> str:
        """Names and types only: never the summaries."""
        return ", ".join(
            f"{c} (decimal)" if isinstance(c, str) else f"{c['name']} ({c.get('type')}, missing {c.get('missing')})"
            for c in obj.columns or []
        )

    def save_model(self, request, obj, form, change):
        """Name and description are saved as they are; the budget goes through the service."""
        if "total_budget" in form.changed_data:
            try:
                dataset_budget_set(
                    actor=request.user,
                    dataset_id=obj.public_id,
                    budget=form.cleaned_data["total_budget"],
                    reason=form.cleaned_data["budget_reason"],
                )
            except DomainError as exc:  # a listing raised the ceilings since the form was checked
                self.message_user(request, f"The budget was not changed: {exc.message}", level="error")
        obj.save(update_fields=["name", "description"])


@admin.register(Listing)
class ListingAdmin(admin.ModelAdmin):
    list_display = ("title", "dataset", "ceiling", "price_per_epsilon", "is_open", "created_at")
    list_filter = ("is_open",)
    fields = ("dataset", "title", "description", "statistics", "labels", "sensitivity", "ceiling", "price_per_epsilon", "is_open")
    readonly_fields = ("dataset", "statistics", "labels", "sensitivity", "ceiling")
    search_fields = ("title", "description")

    def has_add_permission(self, request):
        return False  # listings are created through the service, which computes the answer once
