"""Uploaded datasets are read by the ingest worker only, with real worker processes on Redis: the
release worker serves its queue and leaves the upload's task where it is."""

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from market.catalog.models import Dataset
from market.trading.models import Purchase

from .conftest import make_csv, needs_services, wait_for

pytestmark = [needs_services, pytest.mark.django_db(transaction=True), pytest.mark.queued_datasets]


def test_an_upload_waits_for_the_ingest_worker_while_releases_go_on(
    api, owner, listing, buyer, fund, workers, broker, settings, tmp_path, monkeypatch,
):
    media = tmp_path / "media"  # the workers' storage and this process's
    monkeypatch.setenv("MEDIA_ROOT", str(media))
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(media)}}}
    fund(buyer, 100)
    workers()  # the release worker: the default queue only
    form = {"name": "Visits", "budget": "10", "file": SimpleUploadedFile("visits.csv", make_csv(40))}
    answer = api(owner).post("/api/v1/datasets/", form, format="multipart")
    assert answer.status_code == 202
    dataset = Dataset.objects.get(public_id=answer.json()["id"])

    bought = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json")
    wait_for(lambda: Purchase.objects.filter(pk=bought.json()["id"], status="released").exists(), 60,
             "the release worker to release a purchase")
    assert broker.llen("ingest") == 1  # the upload's task, untouched by the release worker
    assert Dataset.objects.get(pk=dataset.pk).status == "processing"

    workers(queues="ingest")
    wait_for(lambda: Dataset.objects.get(pk=dataset.pk).status == "ready", 60, "the ingest worker to read the upload")
    assert broker.llen("ingest") == 0


def test_a_read_past_the_time_limit_is_stopped_by_the_worker_and_the_dataset_failed(
    api, owner, workers, settings, tmp_path, monkeypatch,
):
    """A real (prefork) ingest worker with INGEST_TIME_LIMIT=2: Celery's soft time limit interrupts
    a read that takes 60 s, and the dataset is failed with the reason, its upload deleted."""
    media = tmp_path / "media"
    monkeypatch.setenv("MEDIA_ROOT", str(media))
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(media)}}}
    from market.catalog.tasks import dataset_process_task

    # the limits travel in the task's message, set by the process that sends it (here, this one)
    monkeypatch.setattr(dataset_process_task, "soft_time_limit", 2)
    monkeypatch.setattr(dataset_process_task, "time_limit", 62)
    monkeypatch.setattr(dataset_process_task, "_exec_options", None)  # Celery caches them at the first send
    workers("slow-read:60", queues="ingest", args=["--pool=prefork", "--concurrency=1"], INGEST_TIME_LIMIT="2")
    form = {"name": "Visits", "budget": "10", "file": SimpleUploadedFile("visits.csv", make_csv(40))}
    answer = api(owner).post("/api/v1/datasets/", form, format="multipart")
    assert answer.status_code == 202
    dataset = Dataset.objects.get(public_id=answer.json()["id"])
    wait_for(lambda: Dataset.objects.get(pk=dataset.pk).status != "processing", 40, "the time limit to end the read")
    failed = Dataset.objects.get(pk=dataset.pk)
    assert failed.status == "failed" and failed.failure == [
        "reading the file took longer than 2 seconds, the most one file may take; upload a smaller file (fewer rows "
        "or columns), or split it"
    ]
    assert not failed.upload_file
    assert not [name for _, _, names in os.walk(media) for name in names]
