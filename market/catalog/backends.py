"""Which compute backend computes a dataset's listings, and the records as that backend reads them
(docs/operations.md, "Compute backends").

``COMPUTE_BACKEND`` (``duckdb``, the default, or ``spark``) is the deployment's choice for every
dataset; with ``COMPUTE_SPARK_FROM_ROWS`` set, a dataset of at least that many records is computed by
Spark and smaller ones by DuckDB (the choice per dataset, by its size). ``SPARK_MASTER`` names the
cluster (``local[2]``: Spark in this process, for tests and one machine).

* DuckDB reads a decrypted copy of the dataset's typed file in a private folder of this process,
  removed as soon as the computation ends (``market.catalog.files.dataset_table_path``).
* Spark reads the sealed file where it is stored: each executor fetches the byte ranges of its row
  groups and decrypts them in memory (``market.catalog.spark.SealedParquet``). The job carries the
  one key that sealed the file and the store's credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings

from market.core import crypto

from . import files
from .compute import Backend, DuckDBBackend, ParquetTable

DUCKDB, SPARK = "duckdb", "spark"


def backend_name_for(dataset) -> str:
    """The backend that computes ``dataset``'s listings (its size decides when the deployment says so)."""
    chosen = getattr(settings, "COMPUTE_BACKEND", DUCKDB)
    from_rows = getattr(settings, "COMPUTE_SPARK_FROM_ROWS", None)
    if chosen == DUCKDB and from_rows is not None and (dataset.row_count or 0) >= from_rows:
        return SPARK
    return chosen


def prepared_later(dataset, *, backend: str | None = None) -> bool:
    """Whether a new listing on ``dataset`` is computed by a task (the listing preparing meanwhile)
    rather than in the owner's request: always on Spark (a job's start alone takes seconds), and on
    DuckDB above ``LISTING_PREPARE_INLINE_ROWS`` records. ``backend``: the one that will compute it,
    if not the dataset's (microdata is read by DuckDB on any deployment)."""
    if (backend or backend_name_for(dataset)) == SPARK:
        return True
    return (dataset.row_count or 0) > settings.LISTING_PREPARE_INLINE_ROWS


def backend_for(dataset) -> Backend:
    if backend_name_for(dataset) == SPARK:
        from .spark import SparkBackend

        return SparkBackend(master=settings.SPARK_MASTER, conf=dict(getattr(settings, "SPARK_CONF", {}) or {}))
    return DuckDBBackend()


def _store_of(name: str) -> dict:
    """Where the executors read the sealed file ``name``: the S3-compatible bucket and key, or its path
    on a disk every executor sees (the media folder)."""
    storage = files.storage()
    bucket = getattr(storage, "bucket_name", None)
    if bucket:
        from storages.utils import clean_name

        return {"kind": "s3", "bucket": bucket, "key": storage._normalize_name(clean_name(name)),
                "endpoint_url": getattr(storage, "endpoint_url", None), "region_name": getattr(storage, "region_name", None),
                "access_key": getattr(storage, "access_key", None) or None,
                "secret_key": getattr(storage, "secret_key", None) or None}
    return {"kind": "file", "path": storage.path(name)}


def _sealing_key(name: str) -> tuple[str, bytes]:
    """The one key (id, bytes) that sealed the stored file ``name``: all the job is given of the ring."""
    with files.storage().open(name, "rb") as f:
        key_id = crypto.key_id_of(f.read(64))
    for known, key in crypto.keyring().keys:
        if known == key_id:
            return known, key
    raise crypto.UnknownKeyError(f"the file was sealed with key '{key_id}', which is not configured")


@contextlib.contextmanager
def dataset_source(dataset, backend: Backend) -> Iterator[object]:
    """``dataset``'s records as ``backend`` reads them, for the time of the ``with`` block."""
    if backend.name == SPARK:
        from .spark import SealedParquet

        if not dataset.typed_file:
            raise ValueError(f"dataset {dataset.public_id} has no typed file (status {dataset.status})")
        name = dataset.typed_file
        yield SealedParquet(store=_store_of(name), context=files.file_context(name), key=_sealing_key(name))
        return
    with files.dataset_table_path(dataset) as path:
        yield ParquetTable(path)
