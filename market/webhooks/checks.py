"""System check of webhooks: production does not send to private addresses."""

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def webhooks_private_addresses_refused(app_configs, **kwargs):
    if getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False):
        return [
            checks.Warning(
                "Webhook endpoints may be on private, loopback or link-local addresses: a user could make the "
                "server send requests into its own network.",
                hint="Unset WEBHOOKS_ALLOW_PRIVATE (or set it to 0) in production.",
                id="gradual.W101",
            )
        ]
    return []
