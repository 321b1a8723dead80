"""The baseline's Celery application: ``celery -A bench.load.baseline.celery_app:app worker --queues releases``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.load.baseline.settings")

app = Celery("baseline", include=["bench.load.baseline.tasks"])
app.config_from_object("django.conf:settings", namespace="CELERY")
