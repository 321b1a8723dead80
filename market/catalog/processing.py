"""Reading uploaded datasets: queuing a processing run, the run itself (``dataset_process``, the
ingest task's body), and the sweeper that re-queues a run that was lost (``datasets_sweep``).

Each run of a processing dataset has a ``job`` id (in ``Dataset.progress``, and in the task's
message): a run only writes while the dataset is processing under its own job, so a run the
sweeper replaced (a new job) and that turns up late, or a message delivered twice, writes
nothing. ``progress_at`` is when the run last moved (queued, or a progress step); ``attempts``
how many runs were handed out for this processing (the upload's, and each re-queue).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from market.core import queueing
from market.webhooks.events import emit as webhook_emit

from . import chunks, files, ingest, uploads
from .locks import dataset_lock_pk
from .models import Dataset

log = logging.getLogger(__name__)


def new_job() -> str:
    return uuid.uuid4().hex


def dataset_queue(*, dataset_pk: int, job: str | None = None) -> bool:
    """Send the dataset's processing task (for its run ``job``) to the broker (called on commit). A
    broker that cannot be reached leaves the dataset processing: the sweeper (``datasets_sweep``)
    sends it again once its progress has stood still for ``DATASET_SWEEP_AFTER`` seconds."""
    try:
        queueing.task("catalog.dataset_process").delay(dataset_pk, job)
        return True
    except Exception:
        log.exception("could not queue the processing of dataset %s", dataset_pk)
        return False


class _Throttled:
    """Calls ``_progress`` at most every ``every`` seconds (the owner's page polls each second)."""

    def __init__(self, pk: int, job: str, every: float = 0.5):
        self.pk, self.job, self.every, self.last = pk, job, every, 0.0

    def __call__(self, rows: int, percent: float) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            _progress(self.pk, self.job, phase="reading", rows=rows, percent=round(percent, 1))


def _progress(pk: int, job: str, **figures) -> None:
    Dataset.objects.filter(pk=pk, status=Dataset.Status.PROCESSING, progress__job=job).update(
        progress={"job": job, **figures}, progress_at=timezone.now(),
    )


def time_limit_reason() -> str:
    limit = settings.INGEST_TIME_LIMIT
    took = f"{round(limit / 60)} minutes" if limit >= 120 else f"{limit} seconds"
    return (
        f"reading the file took longer than {took}, the most one file may take; upload a smaller "
        "file (fewer rows or columns), or split it"
    )


def dataset_process(*, dataset_id: int, job: str | None = None) -> Dataset | None:
    """Read a processing dataset's files (the task's body; idempotent: a dataset that is not
    processing, or whose job has moved on from ``job``, is left alone).

    A fresh upload is decrypted to a private temporary file and read in one
    pass, in batches, into the raw text Parquet, its columns inferred and the
    typed Parquet written (``progress`` says how far); both are sealed into
    storage and the upload deleted. After a change of columns only the typed file is
    rebuilt. Whole-file problems make it ``failed`` with the reasons, and so does a
    run past the task's soft time limit (``INGEST_TIME_LIMIT``).
    """
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None or dataset.status != Dataset.Status.PROCESSING:
        return dataset
    current_job = (dataset.progress or {}).get("job", "")
    if job is not None and job != current_job:
        return dataset  # a run the sweeper replaced: the new run does the work
    job = current_job
    if not _run_begins(dataset, job):
        return Dataset.objects.filter(pk=dataset_id).first()
    # read for the first time (no row count yet), or again for new column types: from the raw file of
    # a dataset read before the upload was kept, else from the sealed upload, kept as its source
    fresh = _fresh(dataset)
    new_files: list[str] = []
    limits = uploads.ingest_limits()  # memory and uncompressed sizes (a worker's budget)
    try:
        with files.private_dir() as tmp:
            raw = os.path.join(tmp, "raw.parquet")
            typed = os.path.join(tmp, "typed.parquet")
            if fresh:
                upload = os.path.join(tmp, "upload")
                if dataset.upload_file:
                    files.unseal_to(dataset.upload_file, upload)
                else:  # made from a resumable upload: its parts joined (and stored as the upload) here
                    chunks.upload_join(dataset=dataset, path=upload)
                _progress(dataset.pk, job, phase="reading", rows=0, percent=0)
                found = ingest.read_upload(  # one pass: the columns inferred and the typed file
                    upload, None, max_rows=settings.UPLOAD_MAX_ROWS, max_columns=settings.UPLOAD_MAX_COLUMNS,
                    progress=_Throttled(dataset.pk, job, every=settings.DATASET_PROGRESS_EVERY), limits=limits,
                    typed_path=typed, tmpdir=tmp,
                )
                os.remove(upload)
                columns, row_count, fmt = found.columns, found.rows, found.format
            else:
                columns, row_count, fmt = dataset.columns, dataset.row_count, dataset.format
                _progress(dataset.pk, job, phase="typing", rows=row_count, percent=100)
                if dataset.raw_file:
                    files.unseal_to(dataset.raw_file, raw)
                else:  # the cells' text read again from the upload (only the typed file is kept from it)
                    upload = os.path.join(tmp, "upload")
                    files.unseal_to(dataset.upload_file, upload)
                    ingest.read_upload(upload, raw, max_rows=settings.UPLOAD_MAX_ROWS,
                                       max_columns=settings.UPLOAD_MAX_COLUMNS, limits=limits, tmpdir=tmp)
                    os.remove(upload)
                ingest.write_typed(raw, typed, columns, tmpdir=tmp, limits=limits)
            new_files.append(files.seal_path(typed, files.new_name(dataset.public_id, "typed")))
    except ingest.IngestError as exc:
        files.delete(*new_files)
        return _finish_failed(dataset.pk, job, exc.reasons)
    except SoftTimeLimitExceeded:  # the temporary folder is already removed (private_dir)
        files.delete(*new_files)
        log.warning("processing dataset %s passed its time limit of %s s", dataset.pk, settings.INGEST_TIME_LIMIT)
        return _finish_failed(dataset.pk, job, [time_limit_reason()])
    except Exception:
        files.delete(*new_files)
        log.exception("processing dataset %s failed", dataset.pk)
        return _finish_failed(dataset.pk, job, ["the file could not be processed (an internal error); upload it again"])
    with transaction.atomic():
        current = dataset_lock_pk(pk=dataset.pk)
        if current is None or current.status != Dataset.Status.PROCESSING or (current.progress or {}).get("job") != job:
            transaction.on_commit(lambda: files.delete(*new_files))  # another run finished first
            return current
        old = [current.typed_file]  # the upload (or an older dataset's raw file) is kept: its source
        current.typed_file = new_files[-1]
        current.columns, current.row_count, current.format = columns, row_count, fmt
        current.status, current.progress, current.failure = Dataset.Status.READY, {}, []
        current.version += 1  # under the lock: a listing computed from the old file is refused
        current.save(update_fields=[
            "raw_file", "upload_file", "typed_file", "columns", "row_count", "format", "status", "progress", "failure",
            "version",
        ])
        transaction.on_commit(lambda: files.delete(*old))
        webhook_emit(("dataset.ready", current.public_id, current.owner_id))
    return current


def _fresh(dataset: Dataset) -> bool:
    """Whether ``dataset`` was never read (its upload is read for the first time): no row count yet
    and no raw file (datasets read before the upload was kept have one)."""
    return dataset.row_count is None and not dataset.raw_file


def _run_begins(dataset: Dataset, job: str) -> bool:
    """Count a run that begins; False (the dataset failed with the reason) when more runs began than
    ``DATASET_MAX_ATTEMPTS``. A file that ends its worker mid-run (killed for its memory) has its task
    delivered again when the worker is replaced (late acknowledgement), each time with progress, so
    the sweeper never sees it stand still: counted here, it stops instead of taking the ingest
    worker forever."""
    begun = Dataset.objects.filter(
        pk=dataset.pk, status=Dataset.Status.PROCESSING, starts__lt=settings.DATASET_MAX_ATTEMPTS,
    ).update(starts=F("starts") + 1)
    if begun:
        return True
    log.warning("dataset %s: %s runs began without finishing: failed", dataset.pk, settings.DATASET_MAX_ATTEMPTS)
    _finish_failed(dataset.pk, job, [stuck_reason(settings.DATASET_MAX_ATTEMPTS)])
    return False


def _finish_failed(pk: int, job: str, reasons: list[str]) -> Dataset | None:
    with transaction.atomic():
        current = dataset_lock_pk(pk=pk)
        if current is None or current.status != Dataset.Status.PROCESSING or (current.progress or {}).get("job") != job:
            return current
        _mark_failed(current, reasons)
    return current


def _mark_failed(current: Dataset, reasons: list[str]) -> None:
    """(Under the dataset's lock.) Failed with ``reasons``; a fresh upload's file is deleted on commit."""
    stale = [current.upload_file] if _fresh(current) else []
    current.status, current.failure, current.progress = Dataset.Status.FAILED, list(reasons), {}
    if stale:
        current.upload_file = ""
    current.version += 1
    current.save(update_fields=["status", "failure", "progress", "upload_file", "version"])
    transaction.on_commit(lambda: files.delete(*stale))
    chunks.upload_discard_for(dataset_pk=current.pk)  # a resumable upload's parts, if not joined yet


def stuck_reason(attempts: int) -> str:
    return (
        f"the file could not be read: processing stopped without finishing {attempts} times (the worker reading "
        "it stopped or lost the task); upload it again, and if this happens again split it into smaller files"
    )


#: the most stuck datasets one sweep looks at (the next sweep takes the rest)
SWEEP_BATCH = 100


def datasets_sweep(*, older_than: timedelta | None = None) -> dict[str, int]:
    """Re-queue each dataset still processing whose progress has stood still for ``older_than``
    (``DATASET_SWEEP_AFTER`` seconds): its task was lost (the broker was down when it was sent,
    or the worker died and the message with it). The run gets a new job, so the lost one, should
    it turn up, writes nothing. A dataset already handed out ``DATASET_MAX_ATTEMPTS`` times is
    marked failed instead, with a reason its owner sees (it no longer counts against the owner's
    limit of datasets being read). Returns how many were ``requeued``, ``failed`` and ``skipped``
    (moved or finished meanwhile)."""
    age = older_than if older_than is not None else timedelta(seconds=settings.DATASET_SWEEP_AFTER)
    cutoff = timezone.now() - age
    stuck = list(
        Dataset.objects.filter(status=Dataset.Status.PROCESSING, progress_at__lt=cutoff)
        .order_by("progress_at").values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    done = {"requeued": 0, "failed": 0, "skipped": 0}
    for pk in stuck:
        done[_dataset_requeue(pk=pk, cutoff=cutoff)] += 1
    return done


def _dataset_requeue(*, pk: int, cutoff) -> str:
    with transaction.atomic():
        dataset = dataset_lock_pk(pk=pk)
        if dataset is None or dataset.status != Dataset.Status.PROCESSING or dataset.progress_at >= cutoff:
            return "skipped"  # moved meanwhile, or finished
        if dataset.attempts >= settings.DATASET_MAX_ATTEMPTS:
            log.warning("dataset %s stopped without finishing %s times: failed", pk, dataset.attempts)
            _mark_failed(dataset, [stuck_reason(dataset.attempts)])
            return "failed"
        job = new_job()
        progress = dataset.progress or {}
        dataset.progress = {"job": job, "phase": "queued", "rows": progress.get("rows", 0),
                            "percent": progress.get("percent", 0)}
        log.warning("dataset %s: its processing stood still since %s; queued again (run %s)", pk,
                    dataset.progress_at, dataset.attempts + 1)
        dataset.progress_at, dataset.attempts = timezone.now(), dataset.attempts + 1
        dataset.save(update_fields=["progress", "progress_at", "attempts"])
        transaction.on_commit(lambda: dataset_queue(dataset_pk=pk, job=job))
    return "requeued"
