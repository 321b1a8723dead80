"""Celery tasks of the catalogue: thin, loaded by id, idempotent, acknowledged late."""

from celery import shared_task
from django.conf import settings

from .chunks import uploads_sweep
from .processing import dataset_process, datasets_sweep


@shared_task(
    name="catalog.dataset_process", acks_late=True,
    soft_time_limit=settings.INGEST_TIME_LIMIT, time_limit=settings.INGEST_TIME_LIMIT + settings.INGEST_HARD_LIMIT_AFTER,
)
def dataset_process_task(dataset_pk: int, job: str | None = None) -> None:
    """Read an uploaded dataset's file, or rebuild its typed file (``dataset_process``): the run
    ``job`` only (None, from a message sent before jobs were sent: the dataset's current run).
    Past ``INGEST_TIME_LIMIT`` seconds (the soft limit) the dataset is marked failed; ``INGEST_HARD_LIMIT_AFTER``
    (60) s later (the hard limit) the worker's child is ended and the sweeper takes over."""
    dataset_process(dataset_id=dataset_pk, job=job)


@shared_task(name="catalog.sweep_processing")
def sweep_processing() -> dict:
    """Re-queue datasets whose processing stood still (a lost task); fail those tried too often."""
    return datasets_sweep()


@shared_task(name="catalog.uploads_sweep", acks_late=True)
def uploads_sweep_task() -> int:
    """Delete resumable uploads past their expiry, with their parts (``chunks.uploads_sweep``; periodic)."""
    return uploads_sweep()
