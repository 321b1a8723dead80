"""Imported by the Celery worker of ``bench.load --profile`` (``--include
bench.load.celery_profile``): profiles every task (``bench.load.server_profile``)."""

from bench.load.server_profile import install_celery

install_celery()
