"""Celery tasks of the catalogue: thin, loaded by id, idempotent, acknowledged late."""

from celery import shared_task


@shared_task(name="catalog.dataset_process", acks_late=True)
def dataset_process_task(dataset_pk: int) -> None:
    """Read an uploaded dataset's file, or rebuild its typed file (``dataset_process``)."""
    from .services import dataset_process

    dataset_process(dataset_id=dataset_pk)
