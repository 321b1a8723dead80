"""Imported by the Celery worker of ``bench.load --profile`` (``--include
bench.load_celery``): profiles every task (``bench.load_profile``)."""

from bench.load_profile import install_celery

install_celery()
