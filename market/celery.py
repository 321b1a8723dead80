"""The Celery app: configured from Django's settings (``CELERY_*``)."""

import os
from pathlib import Path

from celery import Celery
from celery.signals import task_prerun

from market.core import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

broker.install()  # a lost broker connection never ends a worker (market/core/broker.py)

app = Celery("market")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Celery's Django fix-up closes the database connection around every task unless told to reuse it:
# a worker keeps its connection (as the web processes do), closed every 2 x this many tasks;
# a task first drops a connection that is broken or past CONN_MAX_AGE (market.trading.tasks)
app.conf.CELERY_DB_REUSE_MAX = int(os.environ.get("CELERY_DB_REUSE_MAX", "500"))

if str(app.conf.broker_url).startswith("filesystem://"):
    # the embedded broker: a folder of messages shared by the web server and the worker
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        Path(app.conf.broker_transport_options[key]).mkdir(parents=True, exist_ok=True)


@task_prerun.connect
def _usable_connection(task=None, **_) -> None:
    """Before every task on a worker: drop a database connection that broke or aged (the worker keeps
    its connection between tasks, see above). With ``CONN_HEALTH_CHECKS`` the next query first checks
    the connection and opens a new one if the server ended it (a restart, a failover, an operator's
    ``pg_terminate_backend``); without this, every later task of that process (a sweeper's, an
    upload's) would fail on the dead connection until the process was replaced."""
    if task is not None and not task.request.is_eager:
        from django.db import close_old_connections

        close_old_connections()
