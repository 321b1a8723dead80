from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "market.catalog"
    label = "catalog"

    def ready(self):
        from . import files  # noqa: F401  (registers the dataset files' key rotator)
        from . import roles  # noqa: F401  (registers what keeps an owner's role)
