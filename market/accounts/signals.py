"""A user saved in any way (the admin, a password change, a sign-in's stamp) or an API key saved
or deleted: the keys remembered for requests (``keycache``) are forgotten, so that no remembered
key outlives a change to whom it signs in, or whether it still does."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .keycache import keys_forget
from .models import ApiKey, User


@receiver(post_save, sender=User, dispatch_uid="accounts-user-saved-forget-keys")
def user_saved(sender, instance, created, **kwargs):
    if not created:
        keys_forget(user_id=instance.pk)


@receiver(post_save, sender=ApiKey, dispatch_uid="accounts-key-saved-forget")
@receiver(post_delete, sender=ApiKey, dispatch_uid="accounts-key-deleted-forget")
def key_changed(sender, instance, created=False, **kwargs):
    if instance.secret_hash and not created:  # a new key has nothing remembered yet
        keys_forget(digests=[instance.secret_hash])
