from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from . import keys


class User(AbstractUser):
    """A person on the marketplace: an owner, a buyer, or both."""

    is_owner = models.BooleanField(default=False, help_text="May upload datasets and list them.")
    is_buyer = models.BooleanField(default=True, help_text="May buy releases.")


#: what a key can be, as the API reports it
KEY_STATUSES = [("active", "active"), ("rotating", "rotating"), ("expired", "expired"), ("revoked", "revoked")]


class ApiKey(models.Model):
    """A secret that signs API requests in as its user. Only a hash of the secret is kept;
    the secret itself is shown once, when the key is created (or rotated)."""

    id = models.CharField(primary_key=True, max_length=32, default=keys.new_id, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The first characters of the secret, to tell keys apart.")
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    from_sign_in = models.BooleanField(default=False, help_text="Made by a username/password exchange.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    #: when the key stops working; in the future while a rotated key's grace period runs
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="apikey_user_created")]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def usable_q(now=None):
        """The keys that still sign requests in: not revoked (or in their grace period), not expired."""
        now = now or timezone.now()
        return (Q(revoked_at__isnull=True) | Q(revoked_at__gt=now)) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    def status(self, now=None) -> str:
        now = now or timezone.now()
        if self.revoked_at is not None and self.revoked_at <= now:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        if self.revoked_at is not None:
            return "rotating"  # replaced; works until revoked_at
        return "active"

    @property
    def current_status(self) -> str:
        return self.status()
