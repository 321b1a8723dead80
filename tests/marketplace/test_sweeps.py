"""The sweepers: a dataset whose processing task was lost is queued again (and failed, with a plain
reason, once tried too often); a dataset read past the ingest task's time limit is failed; a purchase
whose release task could not be handed to the broker is sent by the next sweep, not minutes later."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings as django_settings
from django.utils import timezone

from market.catalog import ingest, processing, services, uploads
from market.catalog.models import Dataset
from market.trading.models import Purchase
from market.trading.services import purchase_create, purchases_sweep
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.queued_datasets  # uploads are queued on commit, as in production


@pytest.fixture
def media(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}
    return tmp_path / "media"


def stored(media) -> int:
    return sum(len(names) for _, _, names in os.walk(media))


def lost_upload(owner, capture, name="Visits") -> Dataset:
    """An upload whose processing task never reached a worker (its on-commit queuing is dropped)."""
    with capture(execute=False):
        dataset = services.dataset_create(owner=owner, name=name, upload=make_csv(30), total_budget="5")
    return dataset


def stand_still(dataset, seconds):
    Dataset.objects.filter(pk=dataset.pk).update(progress_at=timezone.now() - timedelta(seconds=seconds))


def job_of(dataset) -> str:
    return Dataset.objects.get(pk=dataset.pk).progress["job"]


def test_a_dataset_whose_task_was_lost_is_queued_again_as_a_new_run_and_becomes_ready(
    owner, media, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.DATASET_SWEEP_AFTER = 600
    dataset = lost_upload(owner, django_capture_on_commit_callbacks)
    lost_job = job_of(dataset)
    assert processing.datasets_sweep() == {"requeued": 0, "failed": 0, "skipped": 0}  # not standing still yet
    stand_still(dataset, 601)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert processing.datasets_sweep() == {"requeued": 1, "failed": 0, "skipped": 0}
    assert len(queued) == 1
    swept = Dataset.objects.get(pk=dataset.pk)
    assert swept.status == "processing" and swept.attempts == 2 and swept.progress["phase"] == "queued"
    assert swept.progress["job"] != lost_job and timezone.now() - swept.progress_at < timedelta(seconds=60)
    # the lost run turns up late: its job was replaced, it writes nothing
    processing.dataset_process(dataset_id=dataset.pk, job=lost_job)
    assert Dataset.objects.get(pk=dataset.pk).progress == swept.progress
    queued[0]()  # the new run's task (run where it is queued: eager)
    ready = Dataset.objects.get(pk=dataset.pk)
    assert ready.status == "ready" and ready.row_count == 30 and ready.upload_file  # kept: its source
    assert processing.datasets_sweep(older_than=timedelta(0)) == {"requeued": 0, "failed": 0, "skipped": 0}


def test_the_third_time_a_dataset_stands_still_it_is_failed_with_a_reason_and_frees_the_owners_quota(
    owner, api, media, settings, django_capture_on_commit_callbacks
):
    settings.INGEST_MAX_PROCESSING_PER_OWNER = 1
    dataset = lost_upload(owner, django_capture_on_commit_callbacks)
    assert stored(media) == 1
    for attempts in (2, 3):  # each run is lost again
        with django_capture_on_commit_callbacks(execute=False):
            assert processing.datasets_sweep(older_than=timedelta(0))["requeued"] == 1
        assert Dataset.objects.get(pk=dataset.pk).attempts == attempts
        with pytest.raises(Exception, match="datasets being read"):  # still counts against the owner's limit
            uploads.processing_check(owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        assert processing.datasets_sweep(older_than=timedelta(0)) == {"requeued": 0, "failed": 1, "skipped": 0}
    failed = api(owner).get(f"/api/v1/datasets/{dataset.public_id}/").json()
    assert failed["status"] == "failed"
    assert failed["failure"] == [
        "the file could not be read: processing stopped without finishing 3 times (the worker reading it stopped or "
        "lost the task); upload it again, and if this happens again split it into smaller files"
    ]
    assert stored(media) == 0  # the upload's file is deleted
    uploads.processing_check(owner=owner)  # the owner may upload again


def test_a_file_whose_runs_keep_ending_their_worker_is_failed_when_delivered_once_too_often(
    owner, api, media, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """A run killed mid-read (say for its memory) is delivered again when its worker is replaced,
    with progress each time, so the sweeper never sees it stand still: the runs that begin count."""
    settings.INGEST_MAX_PROCESSING_PER_OWNER = 1
    dataset = lost_upload(owner, django_capture_on_commit_callbacks)
    job = job_of(dataset)

    def killed(*args, **kwargs):
        raise SystemExit("the worker was killed mid-read")

    monkeypatch.setattr(ingest, "read_upload", killed)
    for began in range(1, settings.DATASET_MAX_ATTEMPTS + 1):  # the same task, delivered again and again
        with pytest.raises(SystemExit):
            processing.dataset_process(dataset_id=dataset.pk, job=job)
        assert Dataset.objects.get(pk=dataset.pk).starts == began
    with django_capture_on_commit_callbacks(execute=True):
        processing.dataset_process(dataset_id=dataset.pk, job=job)  # once more: it does not begin
    failed = api(owner).get(f"/api/v1/datasets/{dataset.public_id}/").json()
    assert failed["status"] == "failed"
    assert failed["failure"][0].startswith(
        f"the file could not be read: processing stopped without finishing {settings.DATASET_MAX_ATTEMPTS} times")
    assert stored(media) == 0
    uploads.processing_check(owner=owner)  # the owner may upload again


def test_a_dataset_read_past_the_time_limit_is_failed_with_a_reason_and_its_files_removed(
    owner, media, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from market.catalog.tasks import dataset_process_task

    settings.INGEST_TIME_LIMIT = 1800
    temp = tmp_path / "temp"
    temp.mkdir()
    settings.DATASET_TEMP_DIR = str(temp)
    seen = []

    def slow_reader(upload, raw, **kwargs):
        seen.append(sorted(os.listdir(os.path.dirname(upload))))
        raise SoftTimeLimitExceeded()  # what Celery raises in the task at its soft time limit

    monkeypatch.setattr(ingest, "read_upload", slow_reader)
    dataset = lost_upload(owner, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        dataset_process_task(dataset.pk, job_of(dataset))
    assert seen == [["upload"]]  # it was reading from the temporary folder...
    assert os.listdir(temp) == []  # ... which is removed
    failed = Dataset.objects.get(pk=dataset.pk)
    assert failed.status == "failed" and failed.failure == [
        "reading the file took longer than 30 minutes, the most one file may take; upload a smaller file (fewer "
        "rows or columns), or split it"
    ]
    assert not failed.upload_file and stored(media) == 0
    # the task declares the limits (read from the settings when it is defined)
    assert dataset_process_task.soft_time_limit == django_settings.INGEST_TIME_LIMIT > 0
    assert dataset_process_task.time_limit == django_settings.INGEST_TIME_LIMIT + django_settings.INGEST_HARD_LIMIT_AFTER


def test_the_sweeper_and_the_tasks_are_scheduled_on_their_queues(settings):
    from market.celery import app

    schedule = {entry["task"]: entry for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["trading.sweep_pending"]["schedule"] == settings.RELEASE_SWEEP_EVERY == 10
    assert schedule["catalog.sweep_processing"]["schedule"] == 60
    route = app.amqp.router.route({}, "catalog.sweep_processing", args=(), kwargs={})
    assert route["queue"].name == "ingest"


# --- a purchase whose release task could not be sent


@pytest.fixture
def broker_down(monkeypatch):
    from market.trading.tasks import purchase_release_task

    def refuse(*args, **kwargs):
        raise ConnectionError("the broker cannot be reached")

    monkeypatch.setattr(purchase_release_task, "delay", refuse)
    return monkeypatch


def test_a_purchase_whose_task_could_not_be_sent_is_sent_by_the_next_sweep(
    listing, buyer, fund, eager_celery, broker_down, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, _, queued = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    unsent = Purchase.objects.get(pk=purchase.pk)
    assert unsent.status == "queued" and unsent.unsent
    assert purchases_sweep() == 0  # the broker is still down: it stays unsent
    assert Purchase.objects.get(pk=purchase.pk).unsent
    broker_down.undo()  # the broker is back: the next sweep sends it, not RELEASE_SWEEP_AFTER later
    assert purchases_sweep() == 1
    released = Purchase.objects.get(pk=purchase.pk)
    assert released.status == "released" and not released.unsent
    assert purchases_sweep() == 0


def test_a_swept_purchase_whose_task_is_lost_again_waits_for_the_older_path(
    listing, buyer, fund, broker_down, django_capture_on_commit_callbacks, monkeypatch
):
    """Sent by a sweep and lost again (no worker takes it): it is not sent by every sweep (every
    10 s) but after RELEASE_SWEEP_AFTER, as any lost task."""
    from market.trading import release_queue

    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    broker_down.undo()
    sent = []
    monkeypatch.setattr(release_queue, "purchase_queue", lambda **kw: sent.append(kw) or True)
    assert purchases_sweep() == 1 and sent == [{"purchase_id": purchase.pk, "listing_id": listing.pk}]
    assert purchases_sweep() == 0  # lost again: left to the older path
    assert purchases_sweep(older_than=timedelta(0)) == 1


@pytest.mark.skipif(not django_settings.REDIS_URL, reason="the release flag is kept in Redis")
def test_purchases_left_unsent_by_an_outage_are_sent_as_one_task_per_listing(
    listing, users, fund, broker_down, django_capture_on_commit_callbacks
):
    """The broker comes back to one task per listing, not one per purchase (a task releases all of
    its listing's purchases in flight)."""
    from market.trading.services import _release_flag_lower
    from market.trading.tasks import purchase_release_task

    buyers = [users(f"buyer{i}") for i in range(5)]
    for buyer in buyers:
        fund(buyer, 100)
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    assert Purchase.objects.filter(unsent=True).count() == 5
    published = []
    broker_down.setattr(purchase_release_task, "delay", lambda *args: published.append(args))
    try:
        assert purchases_sweep() == 5
    finally:
        _release_flag_lower(listing.pk)
    assert len(published) == 1 and published[0][1] == listing.pk
    assert Purchase.objects.filter(unsent=True).count() == 0
