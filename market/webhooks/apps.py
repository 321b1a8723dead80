from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "market.webhooks"
    label = "webhooks"
    verbose_name = "webhooks"
