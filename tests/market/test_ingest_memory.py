"""An ingest worker's memory stays within INGEST_MEMORY_BUDGET_MB: the issue's hostile Parquet file
(2 million rows of a 500-character text in one zstd row group, about 1 GB once decoded) and its
dictionary-encoded variants are refused within a second with the reason, and a large legitimate
file is read whole, all in one process (``tests/market/ingest_probe.py``) whose peak resident
memory is measured. No database is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MB = 512  # the default

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc (Linux)")

ROWS = 2_000_000

# PLAIN pages (the footer says 1 GB), written by DuckDB in a process of its own (it holds the row
# group while it writes it); and a large legitimate table
MAKE = """
import sys, duckdb
out = sys.argv[1]
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f\"\"\"COPY (SELECT repeat('x', 500) AS s FROM range({ROWS})) TO '{out}/plain.parquet'
    (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROWS}, STRING_DICTIONARY_PAGE_SIZE_LIMIT 1)\"\"\")
con.execute(f\"\"\"COPY (SELECT i AS id, i * 0.25 AS amount, DATE '2020-01-01' + (i % 1000)::INT AS day,
    'city ' || (i % 12)::VARCHAR AS city, repeat(md5(i::VARCHAR), 4) AS note FROM range(250000) t(i))
    TO '{out}/legitimate.parquet' (FORMAT parquet, COMPRESSION zstd)\"\"\")
""".replace("{ROWS}", str(ROWS))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    subprocess.run([sys.executable, "-c", MAKE, str(folder)], check=True, timeout=120)
    # as pyarrow writes pa.array(["x" * 500] * 2_000_000) (a dictionary: the footer says 100 KB), and
    # 1,000 different texts repeated; made from their dictionaries (quick), with no Arrow schema stored
    varied = [f"{i:03d}" + "y" * 497 for i in range(1000)]
    for name, values in (("identical.parquet", ["x" * 500]), ("varied.parquet", varied)):
        indices = pa.array(np.arange(ROWS, dtype=np.int32) % len(values))
        table = pa.table({"s": pa.DictionaryArray.from_arrays(indices, pa.array(values))})
        pq.write_table(table, folder / name, compression="zstd", row_group_size=ROWS, store_schema=False)
    return folder


def test_hostile_parquet_is_refused_at_once_and_a_large_file_read_within_the_budget(files, tmp_path):
    names = ["plain.parquet", "identical.parquet", "varied.parquet", "legitimate.parquet"]
    assert max(os.path.getsize(files / n) for n in names[:3]) < 800_000  # sub-megabyte files
    env = {**os.environ, "INGEST_MEMORY_BUDGET_MB": str(BUDGET_MB), "DJANGO_SETTINGS_MODULE": "market.settings"}
    probe = [sys.executable, "-m", "tests.market.ingest_probe", str(tmp_path), *(str(files / n) for n in names)]
    done = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(found, indent=1))  # the figures, with -s
    outcome = found["files"]
    assert outcome["plain.parquet"]["refused"] == [
        "row group 1 of the Parquet file is 961 MB uncompressed; the limit is 256 MB a row group: write the file "
        "with smaller row groups (for example 100,000 rows each)"
    ]
    for name in ("identical.parquet", "varied.parquet"):
        assert outcome[name]["refused"][0].startswith(
            "row group 1 of the Parquet file holds more than 256 MB of values once decoded"), outcome[name]
    assert all(outcome[n]["seconds"] < 5 for n in names[:3]), outcome  # reading them whole takes minutes
    assert outcome["legitimate.parquet"] == {"rows": 250_000, "seconds": outcome["legitimate.parquet"]["seconds"]}
    assert found["peak_mb"] < BUDGET_MB, found


def test_a_refused_file_leaves_no_read_waiting(files, tmp_path):
    """The one pass over a hostile file (refused while its first row group is decoded, after the
    summaries' query began reading the typed batches) leaves no thread waiting for a batch: one did,
    for ever, and kept the process from exiting (the probe above timed out). A read still waiting
    once the query is over now ends within a tenth of a second."""
    import threading
    import time
    import traceback

    from market.catalog import ingest

    def waiting() -> list[str]:
        main = threading.main_thread().ident
        return [line for ident, frame in sys._current_frames().items() if ident != main
                for line in traceback.format_stack(frame) if "in _batches" in line]

    for name in ("identical.parquet", "varied.parquet"):
        with pytest.raises(ingest.IngestError):
            ingest.read_upload(str(files / name), None, max_rows=10**7, max_columns=100,
                               typed_path=str(tmp_path / "typed.parquet"), tmpdir=str(tmp_path))
        deadline = time.monotonic() + 2
        while waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting() == [], f"{name}: a read still waits for a batch"
