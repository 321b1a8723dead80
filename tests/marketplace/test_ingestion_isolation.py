"""Ingestion is isolated from releases: its own Celery queue (served by its own worker), and at most
INGEST_MAX_PROCESSING_PER_OWNER datasets of one owner being read at once."""

from __future__ import annotations

import html
import os
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from market.catalog import services
from market.catalog.models import Dataset
from tests.fixtures.market import make_csv


@pytest.fixture
def sent(monkeypatch):
    """The (task name, queue) of each message the app sends (none is published)."""
    from market.celery import app

    messages = []

    def send_task_message(producer, name, message, **options):
        messages.append((name, options["queue"].name))

    monkeypatch.setattr(app.conf, "task_always_eager", False)
    monkeypatch.setattr(app.amqp, "send_task_message", send_task_message)
    return messages


def test_a_dataset_is_read_on_the_ingest_queue_and_a_release_on_the_default_one(sent):
    from market.catalog.services import dataset_queue
    from market.trading.services import purchase_queue

    assert dataset_queue(dataset_pk=123) is True
    assert purchase_queue(purchase_id=uuid.uuid4()) is True
    assert sent == [("catalog.dataset_process", "ingest"), ("trading.release_purchase", "celery")]


# --- at most INGEST_MAX_PROCESSING_PER_OWNER datasets of one owner being read at once


@pytest.fixture
def media(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}
    settings.INGEST_MAX_PROCESSING_PER_OWNER = 2
    return tmp_path / "media"


def stored(media) -> int:
    return sum(len(names) for _, _, names in os.walk(media))


def post(api, who, name="Visits"):
    """An upload through the API; its processing is queued on a commit that never comes (the test's
    transaction), so the dataset stays processing."""
    form = {"name": name, "budget": "10", "file": SimpleUploadedFile("visits.csv", make_csv(30))}
    return api(who).post("/api/v1/datasets/", form, format="multipart")


@pytest.mark.queued_datasets
def test_an_upload_past_the_owners_datasets_being_read_is_429_and_stores_nothing(api, owner, users, media):
    assert [post(api, owner, f"Visits {i}").status_code for i in (1, 2)] == [202, 202]
    refused = post(api, owner, "Visits 3")
    assert refused.status_code == 429 and refused["Retry-After"] == "30"
    assert refused.json() == {"error": {
        "status": 429, "code": "too_many_processing", "fields": {},
        "message": "you already have 2 datasets being read, the most at once; upload this one when one of them is "
                   "ready or has failed",
    }}
    assert Dataset.objects.filter(owner=owner).count() == 2 and stored(media) == 2
    # another owner is not held up; and once one of the two is read, the owner may upload again
    assert post(api, users("oscar", owner=True)).status_code == 202
    services.dataset_process(dataset_id=Dataset.objects.filter(owner=owner).earliest("created_at").pk)
    assert post(api, owner, "Visits 3").status_code == 202


@pytest.mark.queued_datasets
def test_the_upload_page_says_so_too(api, owner, client, media):
    for i in (1, 2):
        post(api, owner, f"Visits {i}")
    client.force_login(owner)
    form = {"name": "Clinic", "total_budget": "10", "relation": "private_size",
            "file": SimpleUploadedFile("clinic.csv", make_csv(30), content_type="text/csv")}
    page = client.post(reverse("web:owner-dataset-new"), form)
    assert page.status_code == 429 and page["Retry-After"] == "30"
    assert "you already have 2 datasets being read, the most at once" in html.unescape(page.content.decode())
    assert Dataset.objects.filter(owner=owner).count() == 2 and stored(media) == 2


@pytest.mark.queued_datasets
def test_an_upload_that_raced_another_is_counted_under_the_owners_lock(api, owner, media, monkeypatch):
    """Both passed the first count while their files streamed in; the second to lock the owner's row
    sees the first and is refused, its file deleted."""
    post(api, owner, "Visits 1")
    seal = services.datasets.files.seal_into_storage

    def meanwhile(*args, **kwargs):
        sealed = seal(*args, **kwargs)
        monkeypatch.setattr(services.datasets.files, "seal_into_storage", seal)
        assert post(api, owner, "Visits 2").status_code == 202  # another upload of the owner's commits
        return sealed

    monkeypatch.setattr(services.datasets.files, "seal_into_storage", meanwhile)
    refused = post(api, owner, "Visits 3")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_processing"
    assert sorted(Dataset.objects.values_list("name", flat=True)) == ["Visits 1", "Visits 2"] and stored(media) == 2
