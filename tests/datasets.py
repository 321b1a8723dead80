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


def stored_dataset(*, owner, name: str, table: dict, total_budget=100, **fields):
    """A ready dataset written straight to storage, bypassing the upload's checks (for tests of
    defence in depth): ``table`` maps column names to lists of floats (typed ``decimal``)."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from market.catalog import files
    from market.catalog.models import Dataset
    from market.core import ids

    public_id = ids.new_dataset_id()
    with files.private_dir() as tmp:
        path = os.path.join(tmp, "typed.parquet")
        pq.write_table(pa.table({k: pa.array(v, pa.float64()) for k, v in table.items()}), path)
        typed = files.seal_path(path, files.new_name(public_id, "typed"))
    columns = [{"name": k, "type": "decimal", "missing": "none", "missing_count": 0} for k in table]
    return Dataset.objects.create(
        public_id=public_id, owner=owner, name=name, columns=columns, row_count=len(next(iter(table.values()))),
        status="ready", typed_file=typed, total_budget=total_budget, content_hash="0" * 64, **fields,
    )


def as_before_size_releases(listing):
    """``listing`` as if made before size releases (``market.catalog.sizes``): no size release, its whole
    ceiling for sale (the database row changed in place; nothing is drawn). Its means' quotes then
    assume a number of records per cell, as they did."""
    from django.db.models import F

    from market.catalog.models import Listing

    Listing.objects.filter(pk=listing.pk).update(ceiling=F("ceiling") + F("size_level"), size_level=0,
                                                 size_release=None)
    return Listing.objects.get(pk=listing.pk)
