"""``gradual-client`` uploads a large file in parts and resumes after a failure.

The client talks to the real application in process (httpx's WSGI transport, the test's database
transaction), through a transport that loses chosen requests: before the server sees them, or after
(the part stored, its answer lost). The dataset is processed at once (tests/conftest.py)."""

import httpx
import pytest
from django.core import signals
from django.db import close_old_connections

from gradual_client import Client, ConflictError
from market.catalog.models import Dataset, UploadSession
from market.wsgi import application
from tests.fixtures.market import make_csv

PART = 1024


@pytest.fixture
def in_process(settings, tmp_path):
    settings.UPLOAD_PART_MAX_BYTES = PART
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


class Flaky(httpx.BaseTransport):
    """The application, but the PUTs numbered in ``lose_before`` never reach it and those in
    ``lose_after`` reach it and lose their answer (a connection error either way)."""

    def __init__(self, *, lose_before=(), lose_after=()):
        self.app = httpx.WSGITransport(app=application)
        self.lose_before, self.lose_after, self.puts, self.sent = set(lose_before), set(lose_after), 0, []

    def handle_request(self, request):
        self.sent.append((request.method, request.headers.get("Content-Range")))
        if request.method == "PUT":
            self.puts += 1
            if self.puts in self.lose_before:
                raise httpx.ConnectError("connection reset", request=request)
            answer = self.app.handle_request(request)
            if self.puts in self.lose_after:
                answer.read()
                raise httpx.ReadError("connection reset", request=request)
            return answer
        return self.app.handle_request(request)


def _client(owner, transport):
    from market.accounts.services import api_key_create

    return Client("http://testserver", api_key_create(user=owner, name="t")[1], transport=transport, max_retry_wait=0)


def test_a_chunked_upload_resumes_after_lost_parts_and_becomes_the_dataset(db, in_process, owner, tmp_path):
    content = make_csv(400)
    assert len(content) > 4 * PART
    path = tmp_path / "visits.csv"
    path.write_bytes(content)
    flaky = Flaky(lose_before={2}, lose_after={4})
    client = _client(owner, flaky)

    dataset = client.upload(path, budget="10", name="Visits", chunked=True)
    assert Dataset.objects.get(public_id=dataset.id).status == "ready"
    assert client.dataset(dataset.id).column_names == ["age", "income", "visits"]
    assert Dataset.objects.get().upload_size == len(content) and not UploadSession.objects.exists()
    puts = [place for method, place in flaky.sent if method == "PUT"]
    parts = -(-len(content) // PART)
    # each lost part is sent again (one before the server saw it, one after: then the server's GET says so)
    assert len(puts) == parts + 1 and puts[1] == puts[2] and ("GET", None) in flaky.sent


def test_a_small_file_goes_in_one_request_and_resumes_are_bounded(db, in_process, owner, tmp_path):
    path = tmp_path / "small.csv"
    path.write_bytes(make_csv(20))
    flaky = Flaky()
    _client(owner, flaky).upload(path, budget="1")
    assert [method for method, _ in flaky.sent] == ["POST"]  # multipart: under CHUNKED_THRESHOLD

    path.write_bytes(make_csv(400))
    always = Flaky(lose_before=set(range(1, 100)))
    with pytest.raises(Exception) as lost:
        _client(owner, always).upload_parts(path, resumes=3)
    assert lost.value.code == "network" and always.puts == 4


def test_an_offset_mismatch_resumes_from_the_servers_received():
    sent = []

    def handle(request):
        sent.append((request.method, request.headers.get("Content-Range")))
        if request.method == "POST":
            return httpx.Response(201, json={"id": "up_x", "received": 0, "size": 10, "part_max_bytes": 4})
        if sent[-1][1] == "bytes 0-3/10":  # the server already has 8 bytes (an earlier run)
            return httpx.Response(409, json={"error": {"status": 409, "code": "offset_mismatch", "message": "m",
                                                       "fields": {}, "received": 8}})
        return httpx.Response(200, json={"id": "up_x", "received": 10, "size": 10, "part_max_bytes": 4})

    client = Client("http://gradual.test", "k", transport=httpx.MockTransport(handle), max_retry_wait=0)
    import tempfile

    with tempfile.NamedTemporaryFile() as f:
        f.write(b"0123456789")
        f.flush()
        assert client.upload_parts(f.name) == "up_x"
    assert [p for m, p in sent if m == "PUT"] == ["bytes 0-3/10", "bytes 8-9/10"]

    def refuse(request):
        if request.method == "POST":
            return httpx.Response(201, json={"id": "up_x", "received": 0, "size": 10, "part_max_bytes": 4})
        return httpx.Response(409, json={"error": {"status": 409, "code": "conflict", "message": "m", "fields": {}}})

    client = Client("http://gradual.test", "k", transport=httpx.MockTransport(refuse), max_retry_wait=0)
    with tempfile.NamedTemporaryFile() as f, pytest.raises(ConflictError):
        f.write(b"0123456789")
        f.flush()
        client.upload_parts(f.name)
