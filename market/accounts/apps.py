from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "market.accounts"
    label = "accounts"

    def ready(self):
        from . import signals  # noqa: F401 - connects the receivers
