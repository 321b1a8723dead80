"""Uploaded datasets are read by the ingest worker only, with real worker processes on Redis: the
release worker serves its queue and leaves the upload's task where it is."""

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
