"""Hostile uploads, through both doors: the API (``POST /api/v1/datasets/``, multipart)
and the owner's page (``/owner/datasets/new/``).

Each bad file is refused with a message that names the problem (and its line and
column where there is one): at once (413 past the byte limit, 400 for an empty
file), or by the processing task, which marks the dataset ``failed`` with the
reasons and keeps none of its files (tests process uploads at once: tests/conftest.py).
The limits are read at call time, so the tests lower them with ``settings`` (e.g.
``UPLOAD_MAX_BYTES = 2000``); a file exactly at each limit is accepted through
both doors, so the refusals are the limits', not something else's.
"""

from __future__ import annotations

import gzip
import html
import io
import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from market.catalog.models import Dataset, Listing

pytestmark = pytest.mark.django_db

API = "/api/v1/datasets/"
PAGE = "/owner/datasets/new/"
CHANNELS = ("api", "page")


def _binary_junk() -> bytes:
    """A CSV start, then random bytes with NUL bytes among them (the first NUL on line 3)."""
    rng = np.random.default_rng(20261121)
    junk = bytearray(rng.integers(1, 256, 400, dtype=np.uint8).tobytes().replace(b"\n", b" "))
    junk[37] = junk[200] = 0
    return b"a,b\n1,2\n" + bytes(junk)


def _latin1_junk() -> bytes:
    """Random bytes above 0x7F, without NUL: not UTF-8 from the first byte of line 2."""
    rng = np.random.default_rng(7)
    return b"a,b\n" + rng.integers(0x80, 0x100, 300, dtype=np.uint8).tobytes()


def _repeats() -> bytes:
    out = io.BytesIO()
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(2000, dtype=np.int32)), pa.array(["r" * 1000]))
    pq.write_table(pa.table({"text": column}), out, store_schema=False)
    return out.getvalue()


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    expect: tuple[str, ...]  # what the messages say, each somewhere among them
    limits: dict = field(default_factory=dict)


CASES = [
    Case(
        "oversize",
        b"a,b\n" + b"1,2\n" * 600,  # 2,404 bytes
        ("The file is larger than the limit of 2,000 bytes.",),
        {"UPLOAD_MAX_BYTES": 2000},
    ),
    Case("too-many-rows", b"a,b\n" + b"1,2\n" * 6, ("the file has more than 5 rows (the limit)",), {"UPLOAD_MAX_ROWS": 5}),
    Case(
        "too-many-columns",
        b"a,b,c,d,e\n1,2,3,4,5\n",
        ("the file has 5 columns; the limit is 4",),
        {"UPLOAD_MAX_COLUMNS": 4},
    ),
    Case("binary-junk-with-NULs", _binary_junk(), ("this is a binary file, not CSV text or Parquet (it contains NUL bytes",)),
    Case("binary-junk-without-NULs", _latin1_junk(), ("line 2: has 1 cells but the header has 2",)),
    Case(
        "formula-cells",
        b"a,b\n=SUM(A1),1\n2,@cmd\n+cmd,3\n4,-cmd\n5, =1+1\n",
        (
            "column 'a': 1 cell looks like a spreadsheet formula (starting with = or @), first at line 2 ('=SUM(A1)')",
            "column 'b': 2 cells look like spreadsheet formulas (starting with = or @), first at line 3 ('@cmd')",
        ),
    ),
    Case(
        "utf-16",
        "age,income\n30,1000\n".encode("utf-16"),
        ("this is a binary file", "text saved as UTF-16 looks like this too: save it as UTF-8"),
    ),
    Case("zip-archive", b"PK\x03\x04" + bytes(200), ("this is a ZIP archive, not a CSV or Parquet file",)),
    Case("gzip-bomb-start", b"\x1f\x8b\x08\x00" + bytes(200), ("the gzip file is damaged or cut short",)),
    Case(  # a gzip CSV is read, expanded a chunk at a time and stopped past the limit
        "gzip-bomb", gzip.compress(b"a,b\n" + b"1,2\n" * 1_000_000, 9),
        ("the file expands to more than 1.0 MB once uncompressed (from 3.8 KB of gzip); the limit is 1.0 MB",),
        {"UPLOAD_MAX_UNCOMPRESSED_BYTES": 1 << 20},
    ),
    Case(  # 2,000 repeats of a 1,000-character text: a dictionary of one entry in the file, 2 MB decoded
        "parquet-repeats", _repeats(),
        ("row group 1 of the Parquet file holds more than 1.0 MB of values once decoded",),
        {"INGEST_MAX_ROW_GROUP_BYTES": 1 << 20},
    ),
    Case("fake-parquet", b"PAR1" + b"x" * 100, ("this is not a readable Parquet file",)),
    # a file of zero bytes is refused by the upload field itself, before the reader
    Case("empty-file", b"", ("The submitted file is empty.",)),
    Case("blank-file", b" \r\n\n  \n", ("the file is empty",)),
    Case("header-only", b"age,income\n", ("the file has a header but no data rows",)),
    Case("header-only-then-blank-lines", b"age,income\n\n\n", ("the file has a header but no data rows",)),
    Case(
        "very-long-line",
        b"a,b\n1,2\n" + b"1," * 100_000 + b"1\n",
        ("line 3: has 100001 cells but the header has 2",),
    ),
    Case("numeric-header", b"1,2\n3,4\n", ("line 1: the first line must be a header of column names",)),
    Case(
        "header-name-with-a-control-character",
        b"a,b\x1bc\n1,2\n",
        ("line 1: the name of column 2 contains a character that cannot be printed",),
    ),
    Case("duplicate-names", b"a,a\n1,2\n", ("line 1: column 2 has the same name as column 1",)),
]
#: Files the old numeric-only reader refused that are real data now: read, with their types.
ACCEPTED = [
    "âge,café\n1,2\n".encode("latin-1"),  # Latin-1
    b"a,b\n1,2\n3,\xb5\n",  # Latin-1 text in a cell
    b"a,b\n1,NaN\ninf,2\n3,-Infinity\nnan,+inf\n",  # NaN is missing; infinities are text
    b"a,b\n1,1e308\n2,1e16\n-1e400,3\n",  # large numbers (statistics clamp to declared bounds)
    gzip.compress(b"a,b\n1,2\n3,4\n", mtime=0),  # a gzip-compressed CSV
]


def post(channel, client, data: bytes):
    upload = SimpleUploadedFile("hostile.csv", data, content_type="text/csv")
    if channel == "api":
        return client.post(API, {"name": "hostile", "description": "", "total_budget": "100", "file": upload}, format="multipart")
    return client.post(PAGE, {"name": "hostile", "description": "", "total_budget": "100", "file": upload})


@pytest.fixture
def door(api, client, owner):
    """The owner's client for a channel: an API client or a signed-in browser."""

    def door(channel):
        if channel == "api":
            return api(owner)
        client.force_login(owner)
        return client

    return door


def refusal(channel, response) -> list[str]:
    """The messages of a refused upload, as the owner reads them: at once (400, 413), or as the
    reasons of the failed dataset (whose files are all gone)."""
    if channel == "api":
        if response.status_code == 202:
            return _failed(Dataset.objects.get(public_id=response.json()["id"]))
        assert response.status_code in (400, 413), response.content[:500]
        error = response.json()["error"]
        assert set(error) == {"status", "code", "message", "fields"} and error["status"] == response.status_code
        messages = error["fields"].get("file") or [error["message"]]
        return messages
    if response.status_code == 302:
        return _failed(Dataset.objects.order_by("-pk").first())
    assert response.status_code in (200, 413)  # the form again, with its errors
    page = response.content.decode()
    shown = re.search(r'<ul class="errorlist" id="id_file_error">(.*?)</ul>', page, re.S)
    assert shown, "no error at the file input"
    assert 'aria-invalid="true"' in page
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", shown.group(1), re.S)]


def _failed(dataset) -> list[str]:
    assert dataset.status == "failed", dataset.status
    assert not (dataset.upload_file or dataset.raw_file or dataset.typed_file)  # nothing of the file is kept
    return list(dataset.failure)


def _not_stored() -> bool:
    return not Dataset.objects.exclude(status="failed").exists()


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_file_is_refused_with_its_reason_and_nothing_is_stored(case, channel, door, settings):
    for name, value in case.limits.items():
        setattr(settings, name, value)
    messages = refusal(channel, post(channel, door(channel), case.data))
    for expected in case.expect:
        assert any(expected in message for message in messages), (expected, messages)
    assert _not_stored() and not Listing.objects.exists()


@pytest.mark.parametrize("data", ACCEPTED)
def test_real_data_the_old_reader_refused_is_read(data, door):
    answer = post("api", door("api"), data)
    assert answer.status_code == 202
    assert Dataset.objects.get().status == "ready", Dataset.objects.get().failure


@pytest.mark.parametrize("channel", CHANNELS)
def test_files_at_the_limits_are_accepted(channel, door, settings):
    """One byte, row or column less than the cases above: the same doors store the file."""
    settings.UPLOAD_MAX_BYTES, settings.UPLOAD_MAX_ROWS, settings.UPLOAD_MAX_COLUMNS = 2000, 999, 4
    client = door(channel)
    exactly = b"a\n" + b"1\n" * 999  # 2,000 bytes, 999 rows
    assert len(exactly) == 2000
    for data in (exactly, b"a,b,c,d\n1,2,3,4\n"):
        answer = post(channel, client, data)
        assert answer.status_code == (202 if channel == "api" else 302), answer.content[:500]
    assert list(Dataset.objects.values_list("status", flat=True)) == ["ready", "ready"]
    # and one over each limit is refused
    for data in (exactly + b"1\n"[:1], b"a\n" + b"1\n" * 1000, b"a,b,c,d,e\n1,2,3,4,5\n"):
        assert refusal(channel, post(channel, client, data))
    assert Dataset.objects.filter(status="ready").count() == 2


def test_the_page_reads_no_more_than_the_limit(door, settings, tmp_path):
    """A file far over the limit is stopped at the limit while it streams in (413), never stored."""
    settings.UPLOAD_MAX_BYTES = 2000
    for channel in CHANNELS:
        answer = post(channel, door(channel), b"a\n" + b"1\n" * 500_000)
        assert answer.status_code == 413
        messages = refusal(channel, answer)
        assert any("larger than the limit of 2,000 bytes" in m for m in messages), messages
    assert not Dataset.objects.exists()


FORMULA_HEADERS = ["=SUM(A1)", "@cmd", "+cmd", "-cmd", '=HYPERLINK("http://evil.example","x")']


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("name", FORMULA_HEADERS)
def test_csv_injection_in_a_header_name_is_refused(name, channel, door):
    quoted = '"' + name.replace('"', '""') + '"'
    answer = post(channel, door(channel), f"{quoted},b\n1,2\n".encode())
    assert _not_stored(), f"stored a dataset with a column named {name!r}"
    messages = refusal(channel, answer)
    assert any("line 1" in m and "formula" in m for m in messages), messages


def test_a_release_download_never_starts_a_cell_with_a_formula(
    owner, buyer, fund, client, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    import csv
    import io

    from market.catalog.services import listing_create
    from market.trading.services import purchase_create



    # a dataset stored before uploads refused formula-looking names (defence in depth)
    from tests.datasets import stored_dataset

    evil = '=HYPERLINK("http://evil.example","x")'
    dataset = stored_dataset(owner=owner, name="innocent", table={evil: [i % 10 for i in range(200)], "b": list(range(200))})
    listing = listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Histogram", ceiling="5", price_per_epsilon="1",
        statistics=[{"kind": "histogram", "column": evil, "bins": [0, 5, 10]}],
    )
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    purchase.refresh_from_db()
    client.force_login(buyer)
    download = client.get(f"/library/releases/{purchase.release.public_id}.csv")
    assert download.status_code == 200
    cells = [cell for row in csv.reader(io.StringIO(download.content.decode())) for cell in row]
    assert len(cells) == 5 * 3
    dangerous = [cell for cell in cells if cell[:1] in ("=", "+", "-", "@") and not re.fullmatch(r"-?[\d.e-]+", cell)]
    assert not dangerous, dangerous


HOSTILE_NAME = "<script>alert('col')</script>"
HOSTILE_TITLE = "<img src=x onerror=alert('title')>"


def test_hostile_names_are_escaped_on_every_page(
    owner, buyer, fund, client, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    """Markup in a column name, a dataset name and a listing title is shown as text, never run."""
    from market.catalog.services import listing_create
    from tests.datasets import ready_dataset
    from market.trading.services import purchase_create

    quoted = '"' + HOSTILE_NAME + '"'
    data = f"{quoted},b\n".encode() + b"".join(b"%d,%d\n" % (i % 10, i) for i in range(200))
    dataset = ready_dataset(owner=owner, name=HOSTILE_TITLE, data=data, total_budget="100")
    assert dataset.column_names == [HOSTILE_NAME, "b"]
    listing = listing_create(
        owner=owner, dataset_id=dataset.public_id, title=HOSTILE_TITLE, description=HOSTILE_NAME, ceiling="5",
        price_per_epsilon="1",
        statistics=[{"kind": "count"}, {"kind": "histogram", "column": HOSTILE_NAME, "bins": [0, 5, 10]},
                    {"kind": "mean", "column": HOSTILE_NAME, "lower": 0, "upper": 10}],
    )
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    client.force_login(buyer)
    pages = {
        url: client.get(url)
        for url in ("/", f"/listings/{listing.pk}/", f"/listings/{listing.pk}/?epsilon=2", f"/purchases/{purchase.pk}/",
                    f"/purchases/{purchase.pk}/status/", "/library/")
    }
    client.force_login(owner)
    pages.update(
        {url: client.get(url) for url in ("/owner/", "/owner/listings/new/", f"/owner/listings/{listing.pk}/", "/owner/trust/")}
    )
    for url, answer in pages.items():
        assert answer.status_code == 200, url
        page = answer.content.decode()
        for raw in (HOSTILE_NAME, HOSTILE_TITLE, "<script>alert", "<img src=x"):
            assert raw not in page, (url, raw)
    # and the name is there, as text
    assert "&lt;script&gt;alert(&#x27;col&#x27;)&lt;/script&gt;" in pages[f"/listings/{listing.pk}/"].content.decode()


@pytest.mark.django_db
def test_hostile_numbers_in_levels_amounts_prices_and_searches(client, owner, buyer):
    """Found by probing beside the fuzzer: each is a clear 400 (or an empty result), never a 500."""
    from decimal import Decimal

    from market.catalog.services import listing_create
    from tests.datasets import ready_dataset
    from market.core.errors import InvalidInput
    from market.core.levels import parse_level
    from market.ledger.services import money

    with pytest.raises(InvalidInput, match="digits 0-9"):
        parse_level("٣")  # an Arabic-Indic three: Decimal would read it as 3
    with pytest.raises(InvalidInput, match="below"):
        money("1e26")
    dataset = ready_dataset(owner=owner, name="d", data=b"a,b\n1,2\n3,4\n", total_budget="100")
    with pytest.raises(InvalidInput, match="too large|below"):
        listing_create(
            owner=owner, dataset_id=dataset.public_id, title="t", statistics=[{"kind": "count"}], ceiling="100",
            price_curve={"kind": "power", "c": "99999999999999.00", "p": "2"},
        )
    client.force_login(buyer)
    assert client.get("/?q=a%00b").status_code == 200
    assert Decimal("1") == parse_level("1")
