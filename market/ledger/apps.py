from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "market.ledger"
    label = "ledger"
