"""A real Celery worker process with an injected fault, for the fault tests.

    FAULT=sleep:SECONDS          stop SECONDS at the point after the noise step, inside
                                 the release transaction (the test kills the process there)
    FAULT=refuse-while:PATH      while PATH exists, make the database refuse a write at that
                                 point (a CHECK constraint), so the release transaction fails
    FAULT=slow-read:SECONDS      an uploaded dataset's read takes SECONDS (ingest worker)
    SWEEP_EVERY=SECONDS          with --beat: run the beat's sweepers every SECONDS (not every minute)

Extra arguments go to ``celery worker`` (default ``--pool=solo``).

Its arguments go to Celery's worker: ``--queues=celery`` (releases, the default),
``--queues=ingest`` (uploaded datasets) or ``--queues=webhooks``, as in production.

The fault is installed by replacing ``releases.services._checkpoint`` (or
``market.catalog.ingest.read_upload``) in this process only; the product code has no fault switch of its own.
"""

import os
import sys
import time
from pathlib import Path


def install_fault(spec: str) -> None:
    import releases.services

    kind, _, arg = spec.partition(":")
    if kind == "slow-read":
        from market.catalog import ingest

        def slow_read(*args, **kwargs):
            time.sleep(float(arg))  # Python code: the task's soft time limit interrupts it
            raise AssertionError("the soft time limit did not stop the read")

        ingest.read_upload = slow_read
        return

    def checkpoint(name: str) -> None:
        if name != "after_noise":
            return
        if kind == "sleep":
            time.sleep(float(arg))
        elif kind == "refuse-while" and Path(arg).exists():
            from django.db.models import F

            from market.trading.models import Holding

            # released above purchased: the database's CHECK refuses it
            Holding.objects.filter(released__gte=0).update(released=F("purchased") + 1)

    releases.services._checkpoint = checkpoint


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
    import django

    django.setup()
    if os.environ.get("FAULT"):
        install_fault(os.environ["FAULT"])
    from market.celery import app

    if os.environ.get("SWEEP_EVERY"):  # the beat's sweepers every N seconds rather than every minute
        every = float(os.environ["SWEEP_EVERY"])
        app.conf.beat_schedule = {name: {**entry, "schedule": every} for name, entry in app.conf.beat_schedule.items()}
    given = sys.argv[1:]
    pool = [] if any(arg.startswith(("--pool", "-P")) for arg in given) else ["--pool=solo"]
    app.worker_main(["worker", *pool, "--loglevel=INFO", "--without-mingle", "--without-gossip", *given])


if __name__ == "__main__":
    main()
