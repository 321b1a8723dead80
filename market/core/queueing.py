"""Queueing a Celery task by its registered name.

A service that queues work on commit names the task (``"trading.release_purchase"``) instead of
importing its app's ``tasks`` module: the tasks import the services they call, and nothing imports
the tasks, so the two never form an import cycle. The tasks modules are found by Celery's
autodiscovery; in a process that has not loaded them yet (a web process) they are loaded on the
first send, by one thread: Celery's autodiscovery runs once, and a thread that asked while another
was still importing the modules found no task (the first purchases of a new web worker, sent at
once, were left to the sweeper).
"""

import threading

from celery import current_app

_loading = threading.Lock()


def task(name: str):
    """The task registered as ``name`` (its ``delay``/``apply_async`` queue it)."""
    tasks = current_app.tasks
    if name not in tasks:
        with _loading:  # the others wait for the modules the first is importing
            if name not in tasks:
                current_app.loader.import_default_modules()
    return tasks[name]
