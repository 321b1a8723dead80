from django.apps import AppConfig


class TradingConfig(AppConfig):
    name = "market.trading"
    label = "trading"
