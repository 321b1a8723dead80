"""Owners' writes to datasets: an upload becomes a dataset, its columns' types and its budget change."""

from __future__ import annotations

import io
import logging
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from market.core import ids, visibility
from market.core.errors import Conflict, InvalidInput, NotFound
from market.core.levels import level_text, parse_delta, parse_level

from releases.engine.mechanisms import mechanism as mechanism_named

from .. import chunks, composition, files, ingest, uploads
from ..locks import dataset_lock, dataset_lock_any, listing_lock
from ..models import Dataset, DatasetBudgetChange, Listing, UploadSession
from ..processing import dataset_queue, new_job
from ..selectors import ceilings_needed, counted_listings
from .common import _require_owner, _text

log = logging.getLogger(__name__)


RECORD_NAME_MAX = 60


def _plural(one: str) -> str:
    """The plural of a record's name when the owner gives none: the name with an s, or the name
    as it is when an s would not fit."""
    return f"{one}s" if len(one) < RECORD_NAME_MAX else one


def _relation(value) -> str:
    if value in (None, ""):
        return Dataset.Relation.PRIVATE_SIZE
    if value not in Dataset.Relation.values:
        raise InvalidInput(
            f"relation must be one of {', '.join(Dataset.Relation.values)}, got {value!r}",
            fields={"relation": ["Choose private_size or public_size."]},
        )
    return value


def _upload_stream(upload):
    """A readable binary file from what was uploaded: a Django ``UploadedFile``, any binary
    file object, or bytes (tests, the demo)."""
    if isinstance(upload, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(upload))
    if upload is None or not hasattr(upload, "read"):
        raise InvalidInput("a file is required", fields={"file": ["Choose a CSV or Parquet file."]})
    if hasattr(upload, "seek"):
        try:
            upload.seek(0)
        except (OSError, ValueError):
            pass
    return upload


def dataset_create(
    *,
    owner,
    name: str,
    upload=None,
    total_budget,
    description: str = "",
    relation: str = Dataset.Relation.PRIVATE_SIZE,
    source: str = "",
    licence: str = "",
    record_name: str = "",
    record_name_plural: str = "",
    data=None,
    upload_id: str | None = None,
) -> Dataset:
    """Store an owner's uploaded table (CSV or Parquet) and queue its processing.

    The form fields are checked first (nothing is stored if one is wrong);
    then ``upload`` (a file object, or bytes; ``data`` is its older name) is
    streamed, sealed, into storage (``market.catalog.files``), at most
    ``UPLOAD_MAX_BYTES``, and the dataset is created with ``status
    "processing"``. On commit a task reads the file (``dataset_process``):
    it becomes ``ready`` with its inferred columns, or ``failed`` with the
    reasons. ``total_budget`` is required (the most its listings' ceilings
    may add up to, ``market.catalog.budget``).

    ``relation`` is whom its releases protect (``Dataset.Relation``): with
    ``private_size`` (the default) any one record, whether or not it is in the
    data, and the number of records is never shown; with ``public_size`` any
    one record's values, and the number of records is published exactly.
    ``record_name`` / ``record_name_plural`` name what one record is about.

    The returned dataset's ``same_content_as`` lists the owner's earlier
    datasets with the same content hash (sha256 of the uploaded bytes: the
    same people, whose budgets add up).

    With ``upload_id`` (a complete resumable upload, ``market.catalog.chunks``) in place of
    ``upload``, no byte is read here: the task joins the parts, then hashes them (so
    ``same_content_as`` is empty until then; GET datasets/{id}/ shows it once processed).
    """
    _require_owner(owner)
    name = _text(name, "name", max_length=200)
    description = _text(description, "description", max_length=5000, required=False)
    source = _text(source, "source", max_length=500, required=False)
    licence = _text(licence, "licence", max_length=200, required=False)
    relation = _relation(relation)
    one = _text(record_name, "record_name", max_length=RECORD_NAME_MAX, required=False) or "record"
    many = _text(record_name_plural, "record_name_plural", max_length=RECORD_NAME_MAX, required=False) or _plural(one)
    budget = parse_level(total_budget, field="total_budget")
    uploads.processing_check(owner=owner)  # before anything is stored (and again under the owner's lock)
    fields = dict(owner=owner, name=name, description=description, source=source, licence=licence,
                  total_budget=budget, relation=relation, record_name=one, record_name_plural=many)
    if upload_id is not None:
        return _dataset_from_upload(upload_id=upload_id, fields=fields)
    stream = _upload_stream(upload if upload is not None else data)
    public_id = ids.new_dataset_id()
    limit = settings.UPLOAD_MAX_BYTES
    try:
        stored, digest, size = files.seal_into_storage(stream, files.new_name(public_id, "upload", ""), limit=limit)
    except files.TooLarge:
        raise InvalidInput(
            f"the file is larger than the limit of {limit:,} bytes",
            fields={"file": [f"At most {limit:,} bytes."]},
        ) from None
    if size == 0:
        files.delete(stored)
        raise InvalidInput("the file is empty", fields={"file": ["The file is empty."]})
    try:
        with transaction.atomic():
            uploads.processing_check(owner=owner, lock=True)
            job = new_job()
            same = list(
                visibility.owned_datasets(owner).filter(content_hash=digest).order_by("created_at", "id")
                .only("public_id", "name")
            )
            dataset = _processing(job=job, public_id=public_id, upload_file=stored, upload_size=size,
                                  content_hash=digest, **fields)
            _queue_on_commit(dataset.pk, job)
    except BaseException:
        files.delete(stored)
        raise
    dataset.same_content_as = same
    return dataset


def _processing(*, job: str, **fields) -> Dataset:
    """A new dataset, processing as the run ``job`` (the caller queues its task on commit)."""
    return Dataset.objects.create(
        columns=[], status=Dataset.Status.PROCESSING, progress={"job": job, "phase": "queued", "rows": 0, "percent": 0},
        **fields,
    )


def _dataset_from_upload(*, upload_id: str, fields: dict) -> Dataset:
    """``dataset_create`` from a complete resumable upload: the session is bound to the new dataset
    (no more parts), whose task joins and hashes the parts (``chunks.upload_join``)."""
    with transaction.atomic():
        uploads.processing_check(owner=fields["owner"], lock=True)
        session = chunks.upload_take(owner=fields["owner"], upload_id=upload_id)
        job = new_job()
        dataset = _processing(job=job, upload_file="", upload_size=session.size, content_hash="", **fields)
        session.dataset = dataset
        session.save(update_fields=["dataset"])
        _queue_on_commit(dataset.pk, job)
    dataset.same_content_as = []
    return dataset


def _queue_on_commit(pk: int, job: str) -> None:
    """Queue the dataset's processing (its run ``job``) once the transaction commits (tests may run it at once)."""
    transaction.on_commit(lambda: dataset_queue(dataset_pk=pk, job=job))


def dataset_columns_set(*, owner, dataset_id: str, columns) -> Dataset:
    """Confirm or change a ready dataset's column types and missing-value policies:
    ``columns`` is ``[{"name", "type", "missing"}]``; the columns not named keep theirs.

    Refused with one reason per column (400): a type its values do not fit, ``missing:
    "none"`` on a column with missing values, an unknown name; refused once the dataset
    has listings (their statistics read the columns as they are). Otherwise the typed
    file is rebuilt by the processing task (status ``processing``, then ``ready``);
    a change that changes nothing leaves the dataset as it is.
    """
    _require_owner(owner)
    with transaction.atomic():
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id)
        if dataset is None:
            raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
        if dataset.status != Dataset.Status.READY:
            state = "is still being processed" if dataset.status == Dataset.Status.PROCESSING else "failed to process"
            raise InvalidInput(
                f"the dataset {state}; its columns can be set once it is ready",
                fields={"columns": [f"The dataset {state}."]},
            )
        if Listing.objects.filter(dataset=dataset).exists():
            raise InvalidInput(
                "the dataset has listings, so its columns are fixed (their statistics read them as they are)",
                fields={"columns": ["Columns are fixed once the dataset has listings."]},
            )
        updated, problems = ingest.check_columns(dataset.columns, columns)
        if problems:
            messages = list(problems.values())
            raise InvalidInput(
                "the columns were not changed: " + "; ".join(messages), fields={"columns": messages}
            )
        if [(c["type"], c["missing"]) for c in updated] == [(c["type"], c["missing"]) for c in dataset.columns]:
            return dataset
        dataset.columns = updated
        dataset.status = Dataset.Status.PROCESSING
        job = new_job()
        dataset.progress = {"job": job, "phase": "queued", "rows": dataset.row_count or 0, "percent": 100}
        dataset.progress_at, dataset.attempts, dataset.starts = timezone.now(), 1, 0
        dataset.version += 1  # under the lock: a listing computed on the old columns is refused
        dataset.save(update_fields=["columns", "status", "progress", "progress_at", "attempts", "starts", "version"])
        _queue_on_commit(dataset.pk, job)
    return dataset


def same_content_notice(earlier) -> str:
    """What an owner is told when an upload has the same content as their ``earlier`` datasets."""
    names = ", ".join(f"“{d.name}” ({d.public_id})" for d in earlier)
    return (
        f"This file has the same content as your dataset{'s' if len(earlier) > 1 else ''} {names}. "
        "It was uploaded all the same, but the records are the same people: listings on both are independent "
        "releases about them, so what they reveal adds up - the people's privacy loss is the sum of both datasets' "
        "budgets, not either one."
    )


#: The largest delta a dataset may have.
MAX_DELTA = Decimal("1e-6")
#: ``dataset_budget_set``'s ``delta`` when the dataset's delta stays as it is.
KEEP = object()


def _delta_budget(value) -> Decimal | None:
    """A dataset's delta as given: None (none), or a number above 0 and at most 1e-6 (400 otherwise)."""
    return None if value is None else parse_delta(value, at_most=MAX_DELTA, what="the dataset's δ")


def dataset_budget_set(*, actor, dataset_id: str, budget, reason: str, delta=KEEP) -> Dataset:
    """Change a dataset's budget (staff, or the dataset's owner) and record who, what and why.

    ``delta`` (left out: as it is): the dataset's delta, at most 1e-6, or None for none. Without a
    delta the listings' ceilings add up to at most the budget, and every listing is pure eps-DP;
    with one they compose by privacy-loss distributions (``market.catalog.composition``) and must be
    ``(budget, delta)``-DP together at their ceilings. Refused (400, naming the figure) when the
    listings would not fit the new budget that way (point listings aside, ``market.catalog.budget``),
    or a listing states a delta of its own and the dataset would have none; the dataset's row lock
    keeps a listing from being created meanwhile. Writes one append-only ``DatasetBudgetChange``
    row. The database refuses a budget below the ceilings by itself as well (``market.catalog.triggers``).
    """
    budget = parse_level(budget, field="total_budget")
    reason = _text(reason, "reason", max_length=500)
    new_delta = KEEP if delta is KEEP else _delta_budget(delta)
    with transaction.atomic():
        dataset = dataset_lock_any(dataset_id=dataset_id)
        if dataset is None or not (actor.is_staff or dataset.owner_id == actor.pk):
            raise NotFound("no such dataset", fields={"dataset": ["No dataset has this id."]})
        if new_delta is KEEP:
            new_delta = dataset.delta_budget
        if new_delta is None:
            if any(mechanism_named(row.mechanism).states_delta for row in counted_listings(dataset_pk=dataset.pk)):
                raise InvalidInput("a listing on this dataset states a δ of its own (the Skellam path), so the dataset "
                                   "keeps a δ", fields={"delta": ["A listing needs the dataset's δ."]})
            need = ceilings_needed(dataset_pk=dataset.pk)
            if budget < need:
                raise InvalidInput(
                    f"the listings on this dataset have ceilings adding up to {level_text(need)}; its budget cannot be below that",
                    fields={"total_budget": [f"At least {level_text(need)} (the listings' ceilings)."]},
                )
        else:
            listings = list(counted_listings(dataset_pk=dataset.pk))
            top = max((row.ceiling + row.size_level for row in listings), default=Decimal(0))
            if budget < top:
                raise InvalidInput(f"a listing on this dataset has a ceiling of {level_text(top)}; the budget cannot be below it",
                                   fields={"total_budget": [f"At least {level_text(top)}."]})
            together = composition.composed(composition.dataset_plds(listings), eps=budget, delta=new_delta)
            if listings and not together.fits:
                raise InvalidInput(
                    f"the listings on this dataset, composed, spend δ {together.delta_text} at ε {level_text(budget)}: "
                    f"above δ {composition.delta_text(new_delta)}; choose a larger budget or δ",
                    fields={"total_budget": ["Too low for the listings, composed at this δ."]},
                )
        old, old_delta = dataset.total_budget, dataset.delta_budget
        if budget != old or new_delta != old_delta:
            dataset.total_budget, dataset.delta_budget = budget, new_delta
            dataset.version += 1  # under the lock
            Dataset.objects.filter(pk=dataset.pk).update(total_budget=budget, delta_budget=new_delta,
                                                         version=dataset.version)
            DatasetBudgetChange.objects.create(dataset=dataset, old=old, new=budget, old_delta=old_delta,
                                               new_delta=new_delta, actor=actor, reason=reason)
    return dataset




#: what buyers read on a listing closed because its dataset was removed
CLOSED_DATASET_REMOVED = ("Closed: its owner removed the dataset it was built on, so nothing more is sold. "
                          "Releases already bought stay readable.")


def dataset_remove(*, owner, dataset_id: str) -> None:
    """Remove one of the owner's datasets (404 if it is not theirs; removing it again changes nothing).

    Its open listings are closed, with a reason buyers see (:data:`CLOSED_DATASET_REMOVED`), and
    cannot be reopened; no listing can be made on it. Everything spent and released stays on record:
    the dataset's row (``removed_at`` set; the owner's pages and the API no longer show it), its
    listings with their noise paths and sealed answers (every release is read off those, never off the
    dataset's files), the purchases, releases and ledger rows, and the budget's history. Its stored
    files (the upload, the text and typed tables, an upload's parts) are deleted once the removal
    commits: no release needs them.

    A dataset that failed to process, with no budget history, is removed outright (row and files):
    nothing was ever listed or released on it. A dataset still being processed is refused (409):
    it is removed once it is ready or has failed. Anyone's but the owner's is not found (404), as for
    every other write on a dataset; an owner who has since dropped the role may still remove theirs."""
    with transaction.atomic():
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id, removed=True)
        if dataset is None:
            raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
        if dataset.removed_at is not None:
            return
        if dataset.status == Dataset.Status.PROCESSING:
            raise Conflict(
                "the dataset is still being processed: remove it once it is ready or has failed",
                code="still_processing", fields={"dataset": ["Still being processed."]},
            )
        stored = [dataset.upload_file, dataset.raw_file, dataset.typed_file]
        session = UploadSession.objects.filter(dataset=dataset).first()
        stored += [part["name"] for part in session.parts] if session else []
        outright = (dataset.status == Dataset.Status.FAILED and not Listing.objects.filter(dataset=dataset).exists()
                    and not DatasetBudgetChange.objects.filter(dataset=dataset).exists())
        if outright:
            dataset.delete()  # its upload session goes with it
        else:
            for pk in Listing.objects.filter(dataset=dataset, is_open=True).order_by("pk").values_list("pk", flat=True):
                listing = listing_lock(owner=owner, listing_id=pk)  # after the dataset's: the lock order
                listing.is_open, listing.closed_reason = False, CLOSED_DATASET_REMOVED
                listing.save(update_fields=["is_open", "closed_reason"])
            dataset.removed_at = timezone.now()
            dataset.upload_file = dataset.raw_file = dataset.typed_file = ""
            dataset.version += 1  # what a listing computed outside the lock read is gone
            dataset.save(update_fields=["removed_at", "upload_file", "raw_file", "typed_file", "version"])
        transaction.on_commit(lambda: files.delete(*stored))
