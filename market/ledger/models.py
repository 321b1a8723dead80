"""The money ledger: double entry, append-only, exact (django-hordak style).

The database itself enforces (see the migration ``0002_ledger_triggers``):

* a leg's insert adds its amount to its account's balance (balances are never
  written by code);
* a user's account balance is never negative (CHECK);
* legs and transfers are never updated or deleted;
* on PostgreSQL, at commit, every transfer's legs sum to zero and a transfer
  has at least two legs;
* a payout is positive and is one transfer (see :class:`Payout`), so an owner is
  never paid more than their earnings (their accounts cannot go below zero).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from market.core import ids
from market.core.fields import MoneyField


class Account(models.Model):
    class Kind(models.TextChoices):
        WALLET = "wallet", "buyer wallet"
        EARNINGS = "earnings", "owner earnings"
        FUNDING = "funding", "funding (money entering the marketplace)"
        PAYOUTS = "payouts", "payouts (money leaving the marketplace to owners)"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="accounts"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # an owner's earnings are kept per listing, so that sales of different listings do not all wait
    # for one balance row; their sum is the owner's earnings (accounts made before: no listing)
    listing = models.ForeignKey(
        "catalog.Listing", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="earnings only: the listing whose sales this account collects",
    )
    balance = MoneyField(default=0, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "kind"], condition=Q(listing__isnull=True), name="one_account_per_user_and_kind"
            ),
            models.UniqueConstraint(
                fields=["user", "kind", "listing"], condition=Q(listing__isnull=False),
                name="one_account_per_user_kind_and_listing",
            ),
            models.CheckConstraint(
                condition=Q(listing__isnull=True) | Q(kind="earnings"), name="only_earnings_are_per_listing"
            ),
            models.UniqueConstraint(
                fields=["kind"], condition=Q(user__isnull=True), name="one_system_account_per_kind"
            ),
            models.CheckConstraint(
                condition=Q(user__isnull=True) | Q(balance__gte=0), name="user_balance_never_negative"
            ),
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(kind__in=["funding", "payouts"]),
                name="only_funding_and_payouts_are_system_accounts",
            ),
        ]

    def __str__(self):
        return f"{self.get_kind_display()} of {self.user or 'the marketplace'}"


class Transfer(models.Model):
    class Kind(models.TextChoices):
        TOP_UP = "top_up", "top-up"
        PURCHASE = "purchase", "purchase"
        REFUND = "refund", "refund"
        PAYOUT = "payout", "payout"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    public_id = models.CharField(
        max_length=ids.MAX_LENGTH, unique=True, editable=False, default=ids.new_transfer_id,
        help_text="the opaque id URLs and answers use (tr_...); the integer pk stays internal",
    )
    memo = models.CharField(max_length=200, blank=True)
    purchase = models.ForeignKey(
        "trading.Purchase", null=True, blank=True, on_delete=models.PROTECT, related_name="transfers"
    )
    reference = models.CharField(
        max_length=100, null=True, blank=True, help_text="an external payment reference, unique if given"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["reference"], name="transfer_reference_unique"),
            models.UniqueConstraint(
                fields=["purchase", "kind"], condition=Q(purchase__isnull=False), name="one_transfer_per_purchase_and_kind"
            ),
        ]

    def __str__(self):
        return f"{self.get_kind_display()} {self.public_id}"


class Leg(models.Model):
    transfer = models.ForeignKey(Transfer, on_delete=models.PROTECT, related_name="legs")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="legs")
    amount = MoneyField(help_text="positive: into the account; negative: out of it")

    class Meta:
        ordering = ["-transfer__created_at", "-id"]
        constraints = [models.CheckConstraint(condition=~Q(amount=0), name="leg_amount_nonzero")]


class Payout(models.Model):
    """An owner's request to be paid their earnings, and its one ledger transfer.

    The money leaves the owner's earnings accounts for the marketplace's payouts
    account when the payout is asked for (so it cannot be asked for twice, and
    never beyond the balance: earnings accounts never go below zero); ``status``
    says whether it has been paid out of the marketplace yet (at once in demo
    mode, by staff otherwise). Only ``status`` and ``paid_at`` ever change.
    """

    class Status(models.TextChoices):
        REQUESTED = "requested", "requested (staff pay it)"
        PAID = "paid", "paid"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="payouts")
    amount = MoneyField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    transfer = models.OneToOneField(Transfer, on_delete=models.PROTECT, related_name="payout")
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payout_amount_positive"),
            models.CheckConstraint(
                condition=Q(status="requested", paid_at__isnull=True) | Q(status="paid", paid_at__isnull=False),
                name="payout_paid_when_and_only_when_paid_at",
            ),
            models.UniqueConstraint(
                fields=["user", "idempotency_key"], condition=Q(idempotency_key__isnull=False),
                name="payout_idempotency_key_unique",
            ),
        ]

    def __str__(self):
        return f"payout of {self.amount} to {self.user} ({self.status})"
