from django.contrib.auth.models import AbstractUser
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from . import keys


class User(AbstractUser):
    """A person on the marketplace: an owner, a buyer, or both."""

    is_owner = models.BooleanField(default=False, help_text="May upload datasets and list them.")
    is_buyer = models.BooleanField(default=True, help_text="May buy releases.")

    # A new password (from any path: the password page, the admin, set_password + save, a
    # management command) revokes every API key of the user. The hash as loaded is kept to
    # see the change; a rehash of the same password at sign-in (a hasher upgrade) is not one.
    _password_as_loaded: str | None = None
    _rehashing = False

    @classmethod
    def from_db(cls, db, field_names, values):
        user = super().from_db(db, field_names, values)
        user._password_as_loaded = user.__dict__.get("password")
        return user

    def refresh_from_db(self, *args, **kwargs):
        super().refresh_from_db(*args, **kwargs)
        fields = kwargs.get("fields", args[1] if len(args) > 1 else None)
        if fields is None or "password" in fields:
            self._password_as_loaded = self.__dict__.get("password")

    def check_password(self, raw_password):
        self._rehashing = True
        try:
            return super().check_password(raw_password)
        finally:
            self._rehashing = False

    async def acheck_password(self, raw_password):
        self._rehashing = True
        try:
            return await super().acheck_password(raw_password)
        finally:
            self._rehashing = False

    def save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        changed = (
            self._password_as_loaded is not None
            and self.password != self._password_as_loaded
            and not self._rehashing
            and (update_fields is None or "password" in update_fields)
        )
        with transaction.atomic():
            super().save(*args, **kwargs)
            if changed:
                from .services import api_keys_revoke_all

                api_keys_revoke_all(user=self)
        if update_fields is None or "password" in update_fields:
            self._password_as_loaded = self.password


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
