"""Uploads are refused by their uncompressed size before they are expanded (market.catalog.bounded):
Parquet row groups by their footer and, since a footer understates repeated values, by the text
counted as it is decoded; gzip-compressed CSV by the bytes that come out of it. Small limits stand
in for the settings' (the full-size hostile file: test_ingest_memory.py)."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from market.catalog import bounded, ingest
from market.catalog.bounded import MiB, Limits

SMALL = Limits(memory=32 * MiB, row_group=MiB, uncompressed=4 * MiB)


def read(tmp_path, path, limits=SMALL):
    return ingest.read_upload(str(path), str(tmp_path / "raw.parquet"), max_rows=10**7, max_columns=100,
                              limits=limits)


def repeated(tmp_path, values: list[str], rows: int, **options) -> str:
    """A Parquet file (as any writer makes it: the Arrow schema not stored) of ``rows`` rows, cycling
    through ``values``, in one row group."""
    column = pa.DictionaryArray.from_arrays(pa.array(np.arange(rows, dtype=np.int32) % len(values)), pa.array(values))
    path = tmp_path / "repeated.parquet"
    pq.write_table(pa.table({"s": column}), path, compression="zstd", row_group_size=rows, store_schema=False,
                   **options)
    return path


def footer_size(path) -> int:
    meta = pq.ParquetFile(path).metadata
    return sum(meta.row_group(0).column(j).total_uncompressed_size for j in range(meta.num_columns))


def test_a_row_group_too_large_uncompressed_is_refused_from_the_footer(tmp_path):
    path = repeated(tmp_path, ["x" * 500], 10_000, use_dictionary=False)  # 5 MB of text, plain
    with pytest.raises(ingest.IngestError) as refused:
        read(tmp_path, path)
    assert refused.value.reasons == [
        "row group 1 of the Parquet file is 4.8 MB uncompressed; the limit is 1.0 MB a row group: write the file "
        "with smaller row groups (for example 100,000 rows each)"
    ]
    assert not (tmp_path / "raw.parquet").exists()  # refused before a value was read


@pytest.mark.parametrize("values", [["x" * 500], [f"{i:03d}" + "y" * 497 for i in range(100)]],
                         ids=["identical", "varied"])
def test_repeats_the_footer_understates_are_counted_as_they_are_decoded(tmp_path, values):
    path = repeated(tmp_path, values, 20_000)  # 10 MB of text once decoded
    assert footer_size(path) < SMALL.row_group  # dictionary encoding: the footer says little
    with pytest.raises(ingest.IngestError) as refused:
        read(tmp_path, path)
    assert refused.value.reasons == [
        f"row group 1 of the Parquet file holds more than 1.0 MB of values once decoded (the file is "
        f"{bounded.size(os.path.getsize(path))}: its values repeat); the limit is 1.0 MB a row group: write the "
        "file with smaller row groups (for example 100,000 rows each)"
    ]


def test_the_whole_table_is_bounded_too(tmp_path):
    path = tmp_path / "groups.parquet"
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(12_000, dtype=np.int32)), pa.array(["z" * 500]))
    pq.write_table(pa.table({"s": column}), path, row_group_size=1_500, store_schema=False)  # 8 x 0.7 MB
    with pytest.raises(ingest.IngestError, match=r"^the table holds more than 4\.0 MB of values once decoded"):
        read(tmp_path, path)
    assert read(tmp_path, path, Limits(memory=32 * MiB, row_group=MiB, uncompressed=8 * MiB)).rows == 12_000


def test_dictionary_text_is_expanded_a_slice_at_a_time_and_kept_exact(tmp_path):
    rows = 60_000
    values = [f"category {i} " + "v" * 90 for i in range(7)]
    indices = pa.array([None if i % 11 == 0 else i % 7 for i in range(rows)], pa.int32())
    table = pa.table({"c": pa.DictionaryArray.from_arrays(indices, pa.array(values)), "n": np.arange(rows)})
    path = tmp_path / "cats.parquet"
    pq.write_table(table, path, store_schema=False)
    limits = Limits(memory=32 * MiB, row_group=64 * MiB, uncompressed=64 * MiB)  # 1 MB slices: 6 MB of text
    assert len(list(bounded.slices(rows, 6 * MiB, limits))) >= 6
    found = read(tmp_path, path, limits)
    raw = pq.read_table(tmp_path / "raw.parquet")
    assert found.rows == rows and raw.column("c").to_pylist() == table.column("c").cast(pa.string()).to_pylist()
    assert raw.column("n").to_pylist() == [str(i) for i in range(rows)]


def test_a_gzip_compressed_csv_is_read_like_the_csv(tmp_path):
    text = "city,income\n" + "".join(f"{c},{i}\n" for i, c in enumerate(["Oslo", "Bergen", "Tromsø"] * 1000))
    (tmp_path / "plain.csv").write_text(text)
    (tmp_path / "packed.csv.gz").write_bytes(gzip.compress(text.encode()))
    plain = read(tmp_path, tmp_path / "plain.csv")
    plain_raw = pq.read_table(tmp_path / "raw.parquet")
    packed = read(tmp_path, tmp_path / "packed.csv.gz")
    assert packed == plain and packed.rows == 3000 and pq.read_table(tmp_path / "raw.parquet").equals(plain_raw)
    assert sorted(os.listdir(tmp_path)) == ["packed.csv.gz", "plain.csv", "raw.parquet"]  # the expanded copy removed


def test_a_gzip_bomb_is_stopped_once_past_the_limit(tmp_path):
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb") as f:
        f.write(b"a,b\n")
        for _ in range(64):
            f.write(b"1,2\n" * (256 * 1024))  # 64 MB of text, 64 KB of gzip
    with pytest.raises(ingest.IngestError) as refused:
        read(tmp_path, bomb)
    assert refused.value.reasons == [
        f"the file expands to more than 4.0 MB once uncompressed (from {bounded.size(os.path.getsize(bomb))} of "
        "gzip); the limit is 4.0 MB"
    ]
    assert sorted(os.listdir(tmp_path)) == ["bomb.csv.gz"]
    out = tmp_path / "out"
    assert bounded.gunzip(str(bomb), str(out), limit=4 * MiB) is not None
    assert os.path.getsize(out) <= 4 * MiB  # stopped there, never expanded whole


@pytest.mark.parametrize(
    "content,message",
    [
        (gzip.compress(b"a,b\n1,2\n", mtime=0)[:-6], "the gzip file is damaged or cut short"),
        (gzip.compress(gzip.compress(b"a,b\n1,2\n", mtime=0), mtime=0), "holds something other than CSV text"),
        (gzip.compress(b"PAR1 and more", mtime=0), "holds something other than CSV text"),
    ],
)
def test_gzip_that_is_not_a_csv_is_refused_with_its_reason(tmp_path, content, message):
    path = tmp_path / "upload"
    path.write_bytes(content)
    with pytest.raises(ingest.IngestError, match=message):
        read(tmp_path, path)
