"""Celery tasks of the catalogue: thin, loaded by id, idempotent, acknowledged late."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from .chunks import uploads_sweep
from .processing import dataset_process, datasets_sweep
from .services import listing_prepare, listing_prepare_fail, listings_prepare_sweep


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


@shared_task(
    name="catalog.listing_prepare", acks_late=True,
    soft_time_limit=settings.INGEST_TIME_LIMIT, time_limit=settings.INGEST_TIME_LIMIT + settings.INGEST_HARD_LIMIT_AFTER,
)
def listing_prepare_task(listing_pk: int) -> str:
    """Compute a preparing listing's answer and open it (``listing_prepare``; idempotent). A run the
    hard limit ends, or a worker's death, leaves the listing to the sweeper; past the soft limit it fails."""
    try:
        return listing_prepare(listing_id=listing_pk)
    except SoftTimeLimitExceeded:
        minutes = settings.INGEST_TIME_LIMIT // 60
        return listing_prepare_fail(listing_id=listing_pk, reason=f"computing its answer took longer than {minutes} "
                                    "minutes, the limit; it holds no budget: list fewer statistics, or ask support")


@shared_task(name="catalog.sweep_preparing")
def sweep_preparing() -> dict:
    """Hand out again listings whose preparation stood still (a lost task); fail those tried too often."""
    return listings_prepare_sweep()
