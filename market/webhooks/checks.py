"""System check of webhooks: production does not send to private addresses."""

from django.conf import settings
from django.core import checks

MESSAGE = ("Webhook endpoints may be on private, loopback or link-local addresses: a user could make the server "
           "send requests into its own network (its cloud metadata service, its database, its admin pages).")


@checks.register(checks.Tags.security, deploy=True)
def webhooks_private_addresses_refused(app_configs, **kwargs):
    """WEBHOOKS_ALLOW_PRIVATE is an error in production (DJANGO_ENV=production), a warning elsewhere."""
    if not getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False):
        return []
    if getattr(settings, "PRODUCTION", False):
        return [checks.Error(MESSAGE, hint="Unset WEBHOOKS_ALLOW_PRIVATE (or set it to 0) where DJANGO_ENV=production.",
                             id="gradual.E101")]
    return [checks.Warning(MESSAGE, hint="Unset WEBHOOKS_ALLOW_PRIVATE (or set it to 0) in production.",
                           id="gradual.W101")]
