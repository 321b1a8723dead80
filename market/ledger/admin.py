"""Staff's view of the ledger. Nothing is edited in place: staff top up a
wallet by adding a transfer (through the payment interface), and read the rest."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model

from .models import Account, Leg, Payout, Transfer
from .payments import provider
from .services import payout_settle


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Account)
class AccountAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "kind", "balance")
    list_filter = ("kind",)
    search_fields = ("user__username",)

    def has_add_permission(self, request):
        return False


class LegInline(admin.TabularInline):
    model = Leg
    fields = ("account", "amount")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class TopUpForm(forms.ModelForm):
    """Adding a transfer in the admin is a top-up of a user's wallet."""

    # only a buyer has a wallet to fund (market.accounts.roles)
    user = forms.ModelChoiceField(queryset=get_user_model().objects.filter(is_buyer=True).order_by("username"))
    amount = forms.DecimalField(max_digits=18, decimal_places=2, min_value=0.01)

    class Meta:
        model = Transfer
        fields = ("memo", "reference")


@admin.register(Transfer)
class TransferAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "kind", "memo", "purchase", "created_at")
    list_filter = ("kind",)
    search_fields = ("=public_id", "=reference", "memo")
    inlines = [LegInline]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = TopUpForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ("user", "amount", "memo", "reference") if obj is None else ("public_id", "kind", "memo", "purchase", "reference", "created_at")

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.get_fields(request, obj)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        transfer = provider().fund(
            user=data["user"], amount=data["amount"], reference=data["reference"] or None,
            memo=data["memo"] or f"top-up by {request.user.username}",
        )
        obj.pk = transfer.pk  # the admin redirects to what was made
        messages.success(request, f"Added {data['amount']} credits to {data['user']}'s wallet.")

    def save_related(self, request, form, formsets, change):
        pass


@admin.register(Payout)
class PayoutAdmin(ReadOnlyAdmin):
    """Owners' payouts: staff pay a requested one outside the marketplace, then mark it paid here."""

    list_display = ("user", "amount", "status", "created_at", "paid_at")
    list_filter = ("status",)
    search_fields = ("user__username",)
    actions = ["mark_paid"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Mark the selected payouts paid (after paying them)")
    def mark_paid(self, request, queryset):
        for payout in queryset.filter(status=Payout.Status.REQUESTED):
            payout_settle(payout_id=payout.pk)
        messages.success(request, "Marked paid.")
