from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "market.webhooks"
    label = "webhooks"
    verbose_name = "webhooks"

    def ready(self):
        from . import checks  # noqa: F401  (the deploy check on private addresses)
