from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "market.api"
    label = "api"
    verbose_name = "API"

    def ready(self):
        from . import webhook_payloads  # noqa: F401  (what a webhook carries: what this API shows its user)
