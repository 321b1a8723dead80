from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "market.catalog"
    label = "catalog"
