"""What buyers hold and what they bought.

Per (buyer, listing) a :class:`Holding` keeps the purchased level and the
released level: ``0 <= released <= purchased <= listing ceiling`` is checked by
the database (CHECK, and a trigger for the ceiling). A :class:`Purchase` is one
step "up to eps"; at most one per (buyer, listing) is in flight at a time.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from market.core.fields import LevelField, MoneyField


class Holding(models.Model):
    buyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="holdings")
    listing = models.ForeignKey("catalog.Listing", on_delete=models.PROTECT, related_name="holdings")
    purchased = LevelField(default=0)
    released = LevelField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["buyer", "listing"], name="one_holding_per_buyer_and_listing"),
            models.CheckConstraint(condition=Q(released__gte=0), name="holding_released_nonnegative"),
            models.CheckConstraint(condition=Q(released__lte=F("purchased")), name="holding_released_within_purchased"),
        ]


class Purchase(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        COMPUTING = "computing", "computing"
        RELEASED = "released", "released"
        FAILED = "failed", "failed"

    IN_FLIGHT = (Status.QUEUED, Status.COMPUTING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    buyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="purchases")
    listing = models.ForeignKey("catalog.Listing", on_delete=models.PROTECT, related_name="purchases")
    level_from = LevelField()
    level_to = LevelField()
    price = MoneyField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    failure_reason = models.CharField(max_length=500, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    unsent = models.BooleanField(
        default=False, help_text="its release task could not be handed to the broker: the next sweep sends it",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [  # the sweeper's (market.trading.release_queue.purchases_sweep): lost tasks, and unsent ones
            models.Index(fields=["status", "updated_at"]),
            models.Index(fields=["updated_at"], condition=Q(unsent=True), name="purchase_unsent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["buyer", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="purchase_idempotency_key_unique",
            ),
            models.UniqueConstraint(
                fields=["buyer", "listing"],
                condition=Q(status__in=["queued", "computing"]),
                name="one_purchase_in_flight_per_buyer_and_listing",
            ),
            models.CheckConstraint(condition=Q(level_to__gt=F("level_from")), name="purchase_goes_up"),
            models.CheckConstraint(condition=Q(level_from__gte=0), name="purchase_level_from_nonnegative"),
            models.CheckConstraint(condition=Q(price__gte=0), name="purchase_price_nonnegative"),
        ]

    @property
    def in_flight(self) -> bool:
        return self.status in self.IN_FLIGHT
