from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "market.accounts"
    label = "accounts"
