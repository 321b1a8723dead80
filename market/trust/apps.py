from django.apps import AppConfig


class TrustConfig(AppConfig):
    name = "market.trust"
    label = "trust"
    verbose_name = "trust tiers and networks"
