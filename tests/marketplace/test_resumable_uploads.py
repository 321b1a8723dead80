"""Resumable uploads (``/api/v1/uploads/``, ``market.catalog.chunks``): a file in parts becomes a dataset.

Tasks run eagerly on the commit of the request (``queued_datasets``), as in
``test_dataset_upload.py``; storage is a private media folder per test.
"""

from datetime import timedelta
from pathlib import Path

import palmerpenguins
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from market.catalog.chunks import uploads_sweep
from market.catalog.models import Dataset, UploadSession

pytestmark = pytest.mark.queued_datasets

PENGUINS = (Path(palmerpenguins.__file__).parent / "data" / "penguins.csv").read_bytes()
PART = 4096


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}
    settings.UPLOAD_PART_MAX_BYTES = PART


def stored(tmp_path) -> list[Path]:
    return sorted(p for p in (tmp_path / "media").rglob("*") if p.is_file())


def open_upload(client, size: int):
    answer = client.post("/api/v1/uploads/", {"size": size, "filename": "penguins.csv"}, format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()


def put(client, upload_id: str, data: bytes, start: int, total: int):
    return client.put(f"/api/v1/uploads/{upload_id}/", data, content_type="application/octet-stream",
                      HTTP_CONTENT_RANGE=f"bytes {start}-{start + len(data) - 1}/{total}")


def send_all(client, upload_id: str, content: bytes):
    for start in range(0, len(content), PART):
        answer = put(client, upload_id, content[start:start + PART], start, len(content))
        assert answer.status_code == 200, answer.json()
    return answer.json()


def test_a_file_in_parts_becomes_the_same_ready_dataset_as_in_one_request(
        api, owner, eager_celery, django_capture_on_commit_callbacks, tmp_path):
    client = api(owner)
    with django_capture_on_commit_callbacks(execute=True):
        single = client.post("/api/v1/datasets/", {"name": "one", "budget": "10",
                                                   "file": SimpleUploadedFile("p.csv", PENGUINS)}, format="multipart")
    assert single.status_code == 202
    session = open_upload(client, len(PENGUINS))
    assert session["received"] == 0 and session["part_max_bytes"] == PART and session["size"] == len(PENGUINS)
    state = send_all(client, session["id"], PENGUINS)
    assert state["received"] == len(PENGUINS)
    assert len(UploadSession.objects.get().parts) == -(-len(PENGUINS) // PART)
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(f"/api/v1/uploads/{session['id']}/dataset/", {"name": "parts", "total_budget": "10",
                                                                         "source": "palmerpenguins"}, format="json")
    assert made.status_code == 202, made.json()
    assert made.json()["status"] == "processing" and made.json()["same_content_as"] == []
    one = client.get(f"/api/v1/datasets/{single.json()['id']}/").json()
    parts = client.get(f"/api/v1/datasets/{made.json()['id']}/").json()
    assert parts["status"] == "ready" and parts["source"] == "palmerpenguins"
    assert parts["columns"] == one["columns"] and parts["row_count"] == one["row_count"] == 344
    # the content hash was computed by the task: the notice appears once processed
    assert parts["same_content_as"] == [one["id"]] and "same content" in parts["notice"]
    dataset = Dataset.objects.get(public_id=parts["id"])
    assert dataset.upload_size == len(PENGUINS) and dataset.upload_file and not dataset.raw_file
    # the session and its parts are gone; only the two datasets' uploads (their parts joined: kept as
    # the source) and typed files remain
    assert not UploadSession.objects.exists()
    names = sorted(p.name for p in stored(tmp_path))
    assert len(names) == 4 and sum(n.endswith(".parquet.sealed") for n in names) == 2
    assert client.get(f"/api/v1/uploads/{session['id']}/").status_code == 404


def test_a_wrong_offset_is_409_with_where_to_resume(api, owner):
    client = api(owner)
    session = open_upload(client, 3 * PART)
    assert put(client, session["id"], b"a" * PART, 0, 3 * PART).status_code == 200
    for start in (0 + PART * 2, 1):  # ahead, and inside what was received
        wrong = put(client, session["id"], b"b" * PART, start, 3 * PART)
        assert wrong.status_code == 409
        error = wrong.json()["error"]
        assert error["code"] == "offset_mismatch" and error["received"] == PART
    assert client.get(f"/api/v1/uploads/{session['id']}/").json()["received"] == PART
    # the Content-Range must name the session's size and match the body
    assert put(client, session["id"], b"b" * PART, PART, 5 * PART).status_code == 400
    bad = client.put(f"/api/v1/uploads/{session['id']}/", b"b" * 10, content_type="application/octet-stream",
                     HTTP_CONTENT_RANGE=f"bytes {PART}-{PART + 20}/{3 * PART}")
    assert bad.status_code == 400
    assert client.put(f"/api/v1/uploads/{session['id']}/", b"b", content_type="application/octet-stream").status_code == 400


def test_the_last_part_sent_again_is_answered_with_the_state_as_it_is(api, owner, tmp_path):
    client = api(owner)
    session = open_upload(client, 2 * PART)
    first = put(client, session["id"], b"a" * PART, 0, 2 * PART)
    again = put(client, session["id"], b"a" * PART, 0, 2 * PART)
    assert first.status_code == again.status_code == 200 and again.json() == first.json()
    assert again.json()["received"] == PART and len(UploadSession.objects.get().parts) == 1
    assert len(stored(tmp_path)) == 1
    # the same place with other bytes is not a repeat
    assert put(client, session["id"], b"z" * PART, 0, 2 * PART).status_code == 409


def test_an_oversized_part_is_413(api, owner):
    client = api(owner)
    session = open_upload(client, 3 * PART)
    answer = put(client, session["id"], b"a" * (PART + 1), 0, 3 * PART)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "payload_too_large"
    assert UploadSession.objects.get().received == 0


def test_another_owners_upload_does_not_exist_and_a_buyer_cannot_open_one(api, owner, users, buyer):
    session = open_upload(api(owner), 2 * PART)
    rival = api(users("rival", owner=True))
    assert rival.get(f"/api/v1/uploads/{session['id']}/").status_code == 404
    assert put(rival, session["id"], b"a" * PART, 0, 2 * PART).status_code == 404
    assert rival.delete(f"/api/v1/uploads/{session['id']}/").status_code == 404
    taken = rival.post(f"/api/v1/uploads/{session['id']}/dataset/", {"name": "x", "budget": "1"}, format="json")
    assert taken.status_code == 404
    assert api(buyer).post("/api/v1/uploads/", {"size": 10}, format="json").status_code == 403
    assert UploadSession.objects.get().received == 0


def test_the_open_sessions_per_owner_are_limited(api, owner, settings):
    settings.UPLOAD_SESSIONS_PER_OWNER = 2
    client = api(owner)
    first = open_upload(client, 10)
    open_upload(client, 10)
    refused = client.post("/api/v1/uploads/", {"size": 10}, format="json")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_uploads"
    assert refused["Retry-After"]
    assert client.delete(f"/api/v1/uploads/{first['id']}/").status_code == 204
    open_upload(client, 10)
    too_big = client.post("/api/v1/uploads/", {"size": settings.UPLOAD_MAX_BYTES + 1}, format="json")
    assert too_big.status_code == 400


def test_abandoned_and_expired_sessions_lose_their_parts(api, owner, tmp_path, django_capture_on_commit_callbacks):
    client = api(owner)
    old = open_upload(client, 2 * PART)
    fresh = open_upload(client, 2 * PART)
    with django_capture_on_commit_callbacks(execute=True):
        put(client, old["id"], b"a" * PART, 0, 2 * PART)
        put(client, fresh["id"], b"b" * PART, 0, 2 * PART)
    assert len(stored(tmp_path)) == 2
    UploadSession.objects.filter(public_id=old["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(f"/api/v1/uploads/{old['id']}/").status_code == 404  # expired: gone for its owner at once
    with django_capture_on_commit_callbacks(execute=True):
        assert uploads_sweep() == 1
    assert list(UploadSession.objects.values_list("public_id", flat=True)) == [fresh["id"]]
    assert len(stored(tmp_path)) == 1 and fresh["id"] in str(stored(tmp_path)[0])
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/v1/uploads/{fresh['id']}/").status_code == 204
    assert stored(tmp_path) == [] and not UploadSession.objects.exists()


def test_a_dataset_from_an_incomplete_upload_is_400_and_nothing_is_made(api, owner):
    client = api(owner)
    session = open_upload(client, 2 * PART)
    put(client, session["id"], b"a" * PART, 0, 2 * PART)
    answer = client.post(f"/api/v1/uploads/{session['id']}/dataset/", {"name": "x", "budget": "1"}, format="json")
    assert answer.status_code == 400 and "incomplete" in answer.json()["error"]["message"]
    assert not Dataset.objects.exists() and UploadSession.objects.get().dataset is None
    # a made dataset closes the upload to more parts
    put(client, session["id"], b"a" * PART, PART, 2 * PART)
    assert client.post(f"/api/v1/uploads/{session['id']}/dataset/", {"name": "x", "budget": "1"},
                       format="json").status_code == 202
    assert put(client, session["id"], b"a" * PART, PART, 2 * PART).status_code == 404


def test_a_part_gets_a_deadline_that_fits_it_at_the_minimum_rate(settings):
    from market.core.bodies import timeout_for

    assert timeout_for({"CONTENT_TYPE": "application/json"}) == settings.REQUEST_BODY_TIMEOUT
    part = timeout_for({"CONTENT_TYPE": "application/octet-stream"})
    assert part == settings.UPLOAD_PART_BODY_TIMEOUT
    assert part >= settings.BODY_RATE_GRACE + 8 * 1024**2 / settings.BODY_MIN_RATE > settings.REQUEST_BODY_TIMEOUT
