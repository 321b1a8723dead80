"""Listings over large tables, prepared by a task (``catalog.listing_prepare``, on the ingest queue):
``listing_create`` reserves such a listing under its dataset's lock and makes it ``preparing``
(:func:`preparing`, :func:`queue`); :func:`listing_prepare` computes and stores its answer, or fails
it; :func:`listings_prepare_sweep` hands out again a preparation whose task was lost."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from market.core import queueing
from market.core.errors import Conflict, InvalidInput
from market.webhooks.events import emit as webhook_emit

from .. import microdata, sizes
from ..compute import DuckDBBackend, compute
from ..locks import dataset_lock_pk, listing_prepare_lock
from ..models import Dataset, Listing
from ..spec import SpecError, build_plan
from ..spec.columns import columns_from
from .common import _changed, _checkpoint, _computed

log = logging.getLogger(__name__)


def preparing(dataset: Dataset) -> dict:
    """A new listing's fields while a task computes its answer: closed to buyers, judged at the dataset's
    version, handed to a worker now (for the sweeper)."""
    return {"status": Listing.Status.PREPARING, "is_open": False, "prepared_from": dataset.version,
            "prepare_attempts": 1, "prepare_at": timezone.now()}


def queue(*, listing_pk: int) -> None:
    """Queue ``listing_prepare`` for the listing; a broker that cannot be reached leaves it to the
    sweeper (``listings_prepare_sweep``), never fails the owner's request."""
    try:
        queueing.task("catalog.listing_prepare").delay(listing_pk)
    except Exception:  # the broker is down: the sweeper hands the listing out later
        log.warning("listing %s: its preparation could not be queued; the sweeper will", listing_pk, exc_info=True)


#: what a preparing listing's owner reads when its dataset moved before its answer was stored
PREPARE_CHANGED = ("the dataset changed while the listing was being prepared (a new file, other columns or another "
                   "budget); it was not made and holds no budget: create it again")


def listing_prepare(*, listing_id: int) -> str:
    """Compute a preparing listing's answer and open it to buyers (``catalog.listing_prepare``, on the
    ingest queue): the dataset read by its compute backend outside every lock, then, under the
    dataset's lock and the listing's, the answer sealed and its size release drawn and stored, if the
    listing is still preparing and its dataset still at the version it was judged on. Otherwise the
    listing fails with the reason (its budget given back, ``counted_in_budget`` cleared) and its
    owner hears ``listing.failed``; on success, ``listing.ready``.

    Idempotent: a listing no longer preparing (ready, failed, or prepared by a copy of this task
    delivered twice) is left as it is. Returns ``"ready"``, ``"failed"`` or ``"skipped"``."""
    listing = Listing.objects.select_related("dataset").defer("answer").filter(
        pk=listing_id, status=Listing.Status.PREPARING).first()  # the task's own read: no user asks
    if listing is None:
        return "skipped"
    seen = listing.dataset
    if _moved(seen, listing) or not seen.is_ready:
        return listing_prepare_fail(listing_id=listing_id, reason=PREPARE_CHANGED)
    try:
        seal, size_release = _prepared(listing, seen)
    except Conflict:
        return listing_prepare_fail(listing_id=listing_id, reason=PREPARE_CHANGED)
    except (InvalidInput, SpecError) as exc:
        return listing_prepare_fail(listing_id=listing_id, reason=getattr(exc, "message", str(exc)))
    _checkpoint("prepared")
    with transaction.atomic():
        dataset = dataset_lock_pk(pk=seen.pk)  # the lock order: the dataset, then the listing
        listing = listing_prepare_lock(pk=listing_id)
        if listing is None or listing.status != Listing.Status.PREPARING:
            return "skipped"  # prepared (or failed) by another delivery meanwhile: its answer stands
        if _moved(dataset, listing):
            _mark_failed(listing, PREPARE_CHANGED, owner_id=dataset.owner_id)
            return "failed"
        seal(listing)
        listing.size_release = size_release
        listing.status = Listing.Status.READY
        listing.is_open = not listing.closed_reason  # closed by its owner while it was prepared: stays closed
        listing.prepared_from = None
        listing.save(update_fields=["answer", "size_release", "status", "is_open", "prepared_from"])
        webhook_emit(("listing.ready", listing.pk, dataset.owner_id))
    return "ready"


def _moved(dataset: Dataset, listing: Listing) -> bool:
    """Whether ``dataset`` changed (or was removed) since the preparing ``listing`` was judged on it."""
    return dataset.version != listing.prepared_from or dataset.removed_at is not None


def _prepared(listing: Listing, dataset: Dataset):
    """A preparing listing's answer computed over ``dataset`` (outside every lock): ``(seal, size_release)``,
    ``seal(listing)`` writing the sealed answer into the row. Bit-report microdata: the records' true
    bits, shuffled, read by DuckDB (its stored spec and salt, as ``listing_create_microdata`` judged them).
    Statistics: laid out again as ``listing_create`` laid them out (the same statistics, dataset version
    and mechanism), computed by the dataset's backend, with the size release drawn from them."""
    if listing.release_mechanism.sells_records:
        md = listing.microdata()
        truth = _computed(dataset, "microdata", lambda table, _: microdata.truth(md, table), backend=DuckDBBackend())
        return (lambda row: row.set_truth_bits(truth)), None
    plan = build_plan(listing.statistics, columns_from(dataset.columns), neighbours=dataset.neighbours(),
                      mechanism=listing.mechanism)
    if list(plan.labels) != list(listing.labels):  # pragma: no cover - the dataset is at the version judged
        raise _changed()
    answer = _computed(dataset, "statistics", lambda table, backend: compute(plan, table, backend=backend))
    size_release = sizes.draw(plan, answer, listing.size_level) if listing.size_level > 0 else None
    return (lambda row: row.set_true_answer(answer)), size_release


def listing_prepare_fail(*, listing_id: int, reason: str) -> str:
    """Fail the preparing listing ``listing_id`` with ``reason`` (its task ran out of time), unless it
    is no longer preparing: ``"failed"`` or ``"skipped"``."""
    with transaction.atomic():
        dataset_pk = Listing.objects.filter(pk=listing_id).values_list("dataset_id", flat=True).first()
        if dataset_pk is None:
            return "skipped"
        dataset = dataset_lock_pk(pk=dataset_pk)
        found = listing_prepare_lock(pk=listing_id)
        if found is None or found.status != Listing.Status.PREPARING:
            return "skipped"
        _mark_failed(found, reason, owner_id=dataset.owner_id)
    return "failed"


def _mark_failed(listing: Listing, reason: str, *, owner_id: int) -> None:
    """The preparing ``listing`` (locked) failed with ``reason``: never sold, holding no budget; its
    owner (``owner_id``, read from its locked dataset) hears ``listing.failed``."""
    log.warning("listing %s: its preparation failed: %s", listing.pk, reason)
    listing.status, listing.failure = Listing.Status.FAILED, reason
    listing.counted_in_budget, listing.is_open, listing.prepared_from = False, False, None
    listing.save(update_fields=["status", "failure", "counted_in_budget", "is_open", "prepared_from"])
    webhook_emit(("listing.failed", listing.pk, owner_id))


def listings_prepare_sweep(*, older_than: timedelta | None = None) -> dict[str, int]:
    """Hand out again each listing still preparing ``older_than`` (``LISTING_PREPARE_SWEEP_AFTER``
    seconds) after it was last handed to a worker: its task was lost (the broker was down when it
    was sent, or the worker died with it). One handed out ``LISTING_PREPARE_MAX_ATTEMPTS`` times is
    failed instead, its budget given back. Returns how many were ``requeued``, ``failed`` and
    ``skipped`` (finished meanwhile)."""
    age = older_than if older_than is not None else timedelta(seconds=settings.LISTING_PREPARE_SWEEP_AFTER)
    cutoff = timezone.now() - age
    stuck = list(Listing.objects.filter(status=Listing.Status.PREPARING, prepare_at__lt=cutoff)
                 .order_by("prepare_at").values_list("pk", "dataset_id")[:100])
    done = {"requeued": 0, "failed": 0, "skipped": 0}
    for pk, dataset_pk in stuck:
        with transaction.atomic():
            dataset = dataset_lock_pk(pk=dataset_pk)
            listing = listing_prepare_lock(pk=pk)
            if listing is None or listing.status != Listing.Status.PREPARING or listing.prepare_at >= cutoff:
                done["skipped"] += 1
                continue
            if listing.prepare_attempts >= settings.LISTING_PREPARE_MAX_ATTEMPTS:
                _mark_failed(listing, f"its answer could not be computed: the work stopped {listing.prepare_attempts} "
                                      "times without finishing; it holds no budget: create it again, or ask support",
                             owner_id=dataset.owner_id)
                done["failed"] += 1
                continue
            listing.prepare_attempts, listing.prepare_at = listing.prepare_attempts + 1, timezone.now()
            listing.save(update_fields=["prepare_attempts", "prepare_at"])
            transaction.on_commit(lambda pk=pk: queue(listing_pk=pk))
            done["requeued"] += 1
    return done
