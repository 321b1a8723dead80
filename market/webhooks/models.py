"""Webhooks: endpoints a user registers, events that happen to them, deliveries of events to
endpoints and every attempt at one.

An :class:`Event` is unique per (type, object, user): a task that records it twice makes one.
A :class:`Delivery` is unique per (event, endpoint); each try is an :class:`Attempt` row
(append-only), the delivery keeps the last one's outcome and when to try next.
"""

from django.conf import settings
from django.db import models

from market.core import crypto

from .ids import new_delivery_id, new_endpoint_id, new_event_id


def secret_context(endpoint_id: str) -> bytes:
    """``Endpoint.secret``: sealed, bound to its row."""
    return b"webhook-endpoint:" + str(endpoint_id).encode()


class Endpoint(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_endpoint_id, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    #: the signing secret, sealed (``market.core.crypto``): shown once when made or rolled
    secret = models.BinaryField()
    description = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def set_secret(self, secret: str) -> None:
        self.secret = crypto.seal(secret.encode(), context=secret_context(self.pk))

    def signing_secret(self) -> str:
        return crypto.unseal(bytes(self.secret), context=secret_context(self.pk)).decode()

    def __str__(self) -> str:
        return f"{self.pk} {self.url}"


class Outbox(models.Model):
    """An event noted in the transaction of the change it reports (the outbox): it commits or rolls
    back with that change, so an event is never lost between a commit and the broker. The webhook
    worker turns it into an :class:`Event` and deletes it; the sweeper does so for any note whose
    task was lost."""

    type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    user_id = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        # the clearing of recorded notes (``services._outbox_clear``) looks each up by (object, type, user):
        # without it every event scanned the whole outbox (0.3 to 0.9 s per event at a 12k backlog)
        indexes = [models.Index(fields=["object_id", "type", "user_id"], name="webhooks_outbox_note")]


class Event(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_event_id, editable=False)
    type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_events")
    #: the body sent: what the API shows this user of the object, rendered once
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["type", "object_id", "user"], name="one_webhook_event_per_object_and_user"),
        ]


class Delivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_delivery_id, editable=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True)
    last_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="one_webhook_delivery_per_event_and_endpoint"),
        ]


class Attempt(models.Model):
    """One try at a delivery, as it went (append-only)."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    succeeded = models.BooleanField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery", "number"]
