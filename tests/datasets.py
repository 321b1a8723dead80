"""Datasets made ready at once for tests: ``dataset_create`` then the processing task's body
(``dataset_process``), run in place. Inside a test's transaction ``on_commit`` never fires, so
the task would not run by itself; where it does fire later (live-server tests) it finds the
dataset ready and does nothing (the task is idempotent)."""

from market.catalog.services import dataset_create, dataset_process


def ready_dataset(**kwargs):
    """``dataset_create(**kwargs)`` (``data=`` or ``upload=``), processed; refreshed from the database
    with ``same_content_as`` kept."""
    dataset = dataset_create(**kwargs)
    dataset_process(dataset_id=dataset.pk)
    same = dataset.same_content_as
    dataset.refresh_from_db()
    dataset.same_content_as = same
    return dataset
