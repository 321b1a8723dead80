"""Staff's view of datasets and listings. Raw data, true answers and noise are never shown."""

from django.contrib import admin

from .models import Dataset, Listing


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    # the exact record count is private (the true answer of a count): not shown, even to staff
    list_display = ("public_id", "name", "owner", "total_budget", "created_at")
    fields = ("public_id", "owner", "name", "description", "columns", "total_budget", "created_at")
    readonly_fields = ("public_id", "owner", "columns", "created_at")
    search_fields = ("=public_id", "name", "owner__username")

    def has_add_permission(self, request):
        return False  # datasets are uploaded by their owners, where they are validated


@admin.register(Listing)
class ListingAdmin(admin.ModelAdmin):
    list_display = ("title", "dataset", "ceiling", "price_per_epsilon", "is_open", "created_at")
    list_filter = ("is_open",)
    fields = ("dataset", "title", "description", "statistics", "labels", "sensitivity", "ceiling", "price_per_epsilon", "is_open")
    readonly_fields = ("dataset", "statistics", "labels", "sensitivity", "ceiling")
    search_fields = ("title", "description")

    def has_add_permission(self, request):
        return False  # listings are created through the service, which computes the answer once
