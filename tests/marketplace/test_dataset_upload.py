"""Uploading real tables through the API: 202, processing by the task, progress, columns PATCH, limits.

Tasks run eagerly where they are queued, on the commit of the request
(``django_capture_on_commit_callbacks(execute=True)`` with ``eager_celery``).
"""

import os
from pathlib import Path

import palmerpenguins
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from market.catalog import files, processing, services
from market.core.errors import InvalidInput
from market.catalog.models import Dataset
from market.catalog.services import dataset_process, listing_create
from tests.datasets import ready_dataset

pytestmark = pytest.mark.queued_datasets

PENGUINS = (Path(palmerpenguins.__file__).parent / "data" / "penguins.csv").read_bytes()


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}


@pytest.fixture
def upload(api, owner, eager_celery, django_capture_on_commit_callbacks):
    def post(content: bytes, name="penguins.csv", who=None, **fields):
        form = {"name": "Penguins", "budget": "10", "file": SimpleUploadedFile(name, content), **fields}
        with django_capture_on_commit_callbacks(execute=True):
            answer = api(who or owner).post("/api/v1/datasets/", form, format="multipart")
        return answer

    return post


def test_penguins_upload_is_accepted_then_ready_with_columns(upload, api, owner, users, tmp_path):
    answer = upload(PENGUINS, source="palmerpenguins 0.1.4", licence="CC0-1.0", record_name="penguin")
    assert answer.status_code == 202 and answer.json()["status"] == "processing" and answer.json()["progress"] is not None
    body = api(owner).get(f"/api/v1/datasets/{answer.json()['id']}/").json()
    assert body["status"] == "ready" and body["progress"] is None and body["row_count"] == 344
    assert body["source"] == "palmerpenguins 0.1.4" and body["licence"] == "CC0-1.0" and body["format"] == "csv"
    sex = next(c for c in body["columns"] if c["name"] == "sex")
    assert sex["type"] == sex["inferred"] == "categorical" and sex["missing"] == "exclude" and sex["missing_count"] == 11
    assert sex["markers"] == ["NA"] and {c["value"] for c in sex["categories"]} == {"male", "female"}
    # the files are sealed in storage: the upload, kept as the dataset's source, and the typed file;
    # no raw text file (a change of types reads the upload again); nothing in the row
    dataset = Dataset.objects.get()
    assert dataset.upload_file and dataset.typed_file and not dataset.raw_file
    stored = sorted(p.name for p in (tmp_path / "media").rglob("*") if p.is_file())
    assert len(stored) == 2 and sum(name.endswith(".parquet.sealed") for name in stored) == 1
    with files.dataset_table_path(dataset) as path:
        import pyarrow.parquet as pq

        assert pq.read_table(path).num_rows == 344
    assert not Path(path).exists() and not Path(path).parent.exists()  # the decrypted copy is gone
    # another owner does not see it
    assert api(users("rival", owner=True)).get(f"/api/v1/datasets/{dataset.public_id}/").status_code == 404


def test_columns_patch_rules(upload, api, owner):
    ds = upload(PENGUINS).json()["id"]
    client = api(owner)

    def patch(columns):
        return client.patch(f"/api/v1/datasets/{ds}/", {"columns": columns}, format="json")

    wrong = patch([{"name": "island", "type": "integer"}, {"name": "sex", "missing": "none"}, {"name": "nope"}])
    assert wrong.status_code == 400
    reasons = wrong.json()["error"]["fields"]["columns"]
    assert len(reasons) == 3
    assert any("column 'island': 344 values are not whole numbers, first at line 2" in r for r in reasons)
    assert any("column 'sex': 11 cells missing (NA), first at line 5" in r for r in reasons)
    assert any("no column 'nope'" in r for r in reasons)
    assert patch([{"name": "island", "type": "date", "extra": 1}]).status_code == 400
    assert Dataset.objects.get().status == "ready"  # nothing changed
    typed_before = Dataset.objects.get().typed_file
    # a good change: ignored drops a column; the typed file is rebuilt by the task
    ok = patch([{"name": "year", "type": "ignored"}, {"name": "sex", "missing": "category"}])
    assert ok.status_code == 200, ok.content
    dataset = Dataset.objects.get()
    assert dataset.status in ("processing", "ready")
    dataset_process(dataset_id=dataset.pk)  # (on commit in production; the test's transaction never commits)
    dataset.refresh_from_db()
    assert dataset.status == "ready" and dataset.typed_file != typed_before
    with files.dataset_table_path(dataset) as path:
        import pyarrow.parquet as pq

        assert "year" not in pq.read_schema(path).names
    # once listed, columns are fixed
    ds = upload(b"a,b\n1,x\n2,y\n").json()["id"]
    listing_create(owner=owner, dataset_id=ds, title="count", ceiling="1", price_per_epsilon="1",
                   statistics=[{"kind": "count"}])
    fixed = patch([{"name": "b", "type": "ignored"}])
    assert fixed.status_code == 400 and "listings" in fixed.json()["error"]["message"]


def test_processing_is_idempotent_and_progress_is_reported(owner, settings, monkeypatch):
    settings.DATASET_PROGRESS_EVERY = 0
    seen = []
    real = processing._progress
    monkeypatch.setattr(processing, "_progress", lambda pk, job, **f: (seen.append(f), real(pk, job, **f)))
    text = "a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(200_000))
    dataset = services.dataset_create(owner=owner, name="big", upload=text.encode(), total_budget="5")
    assert dataset.status == "processing" and dataset.upload_file
    first = dataset_process(dataset_id=dataset.pk)
    reading = [f for f in seen if f["phase"] == "reading"]
    assert len(reading) >= 2 and reading[-1]["rows"] == 200_000 and reading[0]["rows"] < 200_000
    again = dataset_process(dataset_id=dataset.pk)
    assert (again.typed_file, again.upload_file) == (first.typed_file, first.upload_file) and again.row_count == 200_000


def test_limits_bytes_413_and_rows_failed(upload, api, owner, settings):
    settings.UPLOAD_MAX_BYTES = 1000
    big = upload(b"a\n" + b"1\n" * 2000)
    assert big.status_code == 413 and big.json()["error"]["status"] == 413
    assert not Dataset.objects.exists()
    settings.UPLOAD_MAX_BYTES = 10**6
    settings.UPLOAD_MAX_ROWS = 100
    many = upload(b"a\n" + b"1\n" * 101)
    body = api(owner).get(f"/api/v1/datasets/{many.json()['id']}/").json()
    assert body["status"] == "failed" and body["failure"] == ["the file has more than 100 rows (the limit)"]


def test_a_dataset_not_ready_cannot_be_listed(owner):
    dataset = services.dataset_create(owner=owner, name="later", upload=b"a\n1\n2\n", total_budget="5")
    with pytest.raises(InvalidInput, match="only a ready dataset can be listed"):
        listing_create(owner=owner, dataset_id=dataset.public_id, title="t", ceiling="1", price_per_epsilon="1",
                       statistics=[{"kind": "count"}])


def test_the_owner_summary_reads_stored_figures(owner):
    from market.trading.dashboard import dataset_summary

    dataset = ready_dataset(owner=owner, name="p", data=PENGUINS, total_budget="5")
    summary = dataset_summary(user=owner, dataset_id=dataset.public_id)
    mass = next(c for c in summary["columns"] if c["name"] == "body_mass_g")
    assert (mass["min"], mass["max"], mass["type"]) == (2700, 6300, "integer")


def test_files_are_sealed_and_re_sealed_on_key_rotation(owner, settings, tmp_path):
    from market.core import crypto

    old, new = crypto.new_key_entry("old1"), crypto.new_key_entry("new1")
    settings.GRADUAL_ENCRYPTION_KEYS = old
    dataset = ready_dataset(owner=owner, name="p", data=PENGUINS, total_budget="5")
    sealed = (tmp_path / "media" / dataset.typed_file).read_bytes()
    assert b"Adelie" not in sealed and crypto.key_id_of(sealed) == "old1"  # encrypted at rest
    settings.GRADUAL_ENCRYPTION_KEYS = f"{new},{old}"
    first = files.files_reseal()
    assert first.resealed == 2 and first.damaged == 0
    dataset.refresh_from_db()
    assert crypto.key_id_of((tmp_path / "media" / dataset.typed_file).read_bytes()) == "new1"
    assert files.files_reseal().resealed == 0  # idempotent
    settings.GRADUAL_ENCRYPTION_KEYS = new  # the old key gone: the files still open
    with files.dataset_table_path(dataset) as path:
        import pyarrow.parquet as pq

        assert pq.read_table(path).num_rows == 344


def test_the_admin_shows_column_types_never_summaries(client, owner, users):
    staff = users("stella")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    dataset = ready_dataset(owner=owner, name="p", data=PENGUINS, total_budget="5")
    client.force_login(staff)
    page = client.get(f"/admin/catalog/dataset/{dataset.pk}/change/").content.decode()
    assert "species (categorical, missing none)" in page
    assert "Adelie" not in page and "2700" not in page and dataset.typed_file not in page


def test_a_change_of_types_reads_the_kept_upload_again(owner, tmp_path, django_capture_on_commit_callbacks):
    """The upload is kept (sealed) as the dataset's source: a change of column types rebuilds the typed
    file from it, and only the old typed file is deleted. A dataset read before the upload was kept
    (a raw text file, no upload) is rebuilt from its raw file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from market.catalog import ingest
    from market.catalog.services import dataset_columns_set

    text = "code,n\n" + "".join(f"{i % 7},{i}\n" for i in range(300))
    dataset = services.dataset_create(owner=owner, name="codes", upload=text.encode(), total_budget="5")
    dataset = dataset_process(dataset_id=dataset.pk)
    assert dataset.status == "ready" and dataset.upload_file and not dataset.raw_file
    assert {c["name"]: c["type"] for c in dataset.columns}["code"] == "integer"
    upload, first_typed = dataset.upload_file, dataset.typed_file

    def retyped(d):
        d = dataset_columns_set(owner=owner, dataset_id=d.public_id, columns=[{"name": "code", "type": "categorical"}])
        with django_capture_on_commit_callbacks(execute=True):  # the old typed file is deleted on commit
            d = dataset_process(dataset_id=d.pk)
        assert d.status == "ready", d.failure
        with files.dataset_table_path(d) as path:
            table = pq.read_table(path)
        kind = table.schema.field("code").type
        assert pa.types.is_string(kind) or pa.types.is_string(getattr(kind, "value_type", None) or pa.int8())
        assert sorted(set(table.column("code").to_pylist())) == [str(k) for k in range(7)]
        assert table.column("n").to_pylist() == list(range(300))
        return d

    dataset = retyped(dataset)
    assert dataset.upload_file == upload and dataset.typed_file != first_typed and not dataset.raw_file
    assert not files.storage().exists(first_typed) and files.storage().exists(upload)

    # an older dataset: its raw text file and no upload
    with files.private_dir() as tmp:
        kept = os.path.join(tmp, "upload")
        files.unseal_to(upload, kept)
        raw = os.path.join(tmp, "raw.parquet")
        ingest.read_upload(kept, raw, max_rows=10**6, max_columns=10)
        raw_name = files.seal_path(raw, files.new_name(dataset.public_id, "raw"))
    Dataset.objects.filter(pk=dataset.pk).update(raw_file=raw_name, upload_file="")
    files.delete(upload)
    dataset.refresh_from_db()
    dataset = dataset_columns_set(owner=owner, dataset_id=dataset.public_id, columns=[{"name": "code", "type": "integer"}])
    dataset = dataset_process(dataset_id=dataset.pk)
    assert dataset.status == "ready" and dataset.raw_file == raw_name and not dataset.upload_file
    assert {c["name"]: c["type"] for c in dataset.columns}["code"] == "integer"
