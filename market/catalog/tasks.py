"""Celery tasks of the catalogue: thin, loaded by id, idempotent, acknowledged late."""

from celery import shared_task


@shared_task(name="catalog.dataset_process", acks_late=True)
def dataset_process_task(dataset_pk: int) -> None:
    """Read an uploaded dataset's file, or rebuild its typed file (``dataset_process``)."""
    from .services import dataset_process

    dataset_process(dataset_id=dataset_pk)


@shared_task(name="catalog.uploads_sweep", acks_late=True)
def uploads_sweep_task() -> int:
    """Delete resumable uploads past their expiry, with their parts (``chunks.uploads_sweep``; periodic)."""
    from .chunks import uploads_sweep

    return uploads_sweep()
