from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "market.core"
    label = "core"

    def ready(self):
        # Configure the Celery app whenever Django starts, so that tasks queued
        # from web requests use the project's broker.
        from market import celery  # noqa: F401

        from . import checks  # noqa: F401  (encryption keys)
