"""The Celery app: configured from Django's settings (``CELERY_*``)."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

app = Celery("market")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

if str(app.conf.broker_url).startswith("filesystem://"):
    # the embedded broker: a folder of messages shared by the web server and the worker
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        Path(app.conf.broker_transport_options[key]).mkdir(parents=True, exist_ok=True)
