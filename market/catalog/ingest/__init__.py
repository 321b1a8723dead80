"""Reading an owner's uploaded table (CSV or Parquet) into Parquet files, in one pass over its rows.

The processing task gives :func:`read_upload` the upload (local files: ``market.catalog.files``
decrypts and seals them) and two paths. The upload is read in batches of text (:mod:`.reading`: CSV
with its delimiter and quoting detected, UTF-8 with or without a byte order mark, Latin-1 when the
bytes are not UTF-8, gzip-compressed or not; or Parquet, its values turned into text), checking the
whole-file limits and reporting progress; what it holds in memory and how large the table may be once
uncompressed are bounded by :class:`~.bounded.Limits`. Each batch, in the same pass (:mod:`.scan`):

* is written to the *raw* Parquet file, its columns the cells' text, when a path is given for it
  (the processing task gives none: it keeps the sealed upload instead, and a change of column types
  later reads the upload again into a raw file and rebuilds the typed file from that);
* has its cells classified and counted per column: missing (and by which marker), for each type
  whether it fits, formula-like; the first row and text of each (for the owner's messages);
* is written to the *typed* Parquet file the statistics read (the layout of
  ``market.catalog.spec.columns``: BIGINT, DOUBLE, VARCHAR, BOOLEAN, DATE, TIMESTAMP; missing is NULL)
  with the types its first rows suggest; a later misfit has it written again from the raw file
  (made then from the upload when the pass wrote none).

Then each column's inferred type, missing count and markers, and for each type how many present
values would not fit it (with the first) are known, and the summaries for the owner (min/max, distinct
values, the most frequent categories) are read from the typed file (:mod:`.summaries`).

:func:`infer` and :func:`write_typed` do the same from a raw file already written (a change of
columns; :func:`check_columns` judges an owner's choice of types and missing policies, one reason per
column). Whole-file problems raise :class:`IngestError` with the reasons in words an owner can act
on. This package is plain Python, pyarrow and DuckDB; it does not import Django.
"""

from __future__ import annotations

import functools
import os
import tempfile
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq

from .columns import check_columns, markers_text, write_typed
from .reading import (
    FORMULA_STARTS,
    MAX_NAME_LENGTH,
    RESERVED_NAMES,
    GroupWriter,
    IngestError,
    Limits,
    NotUtf8,
    Progress,
    Upload,
    detect_format,
    open_upload,
)
from .scan import PROBE_ROWS, Scan
from .sql import MISSING_MARKERS, _connect
from .summaries import TOP_CATEGORIES, aggregates_sql, described, summarize

__all__ = [
    "FORMULA_STARTS", "MAX_NAME_LENGTH", "MISSING_MARKERS", "RESERVED_NAMES", "TOP_CATEGORIES", "IngestError",
    "Limits", "Upload", "check_columns", "detect_format", "infer", "markers_text", "read_upload", "write_typed",
]

#: The rows read before the typed file's types are chosen (a first misfit beyond them is still found).
_PREFIX_ROWS = PROBE_ROWS


def read_upload(
    path: str, raw_path: str | None, *, max_rows: int, max_columns: int, progress: Progress | None = None,
    batch_rows: int = 65_536, limits: Limits | None = None, typed_path: str | None = None,
    tmpdir: str | None = None,
) -> Upload:
    """Stream the upload at ``path`` into ``raw_path``: a Parquet file of text columns (the cells as
    written, an empty cell as ""; a Parquet upload's values as text, null as null). With
    ``typed_path``, in the same pass, also infer the columns (``Upload.columns``: as :func:`infer`)
    and write the typed file of their inferred types (as :func:`write_typed`); ``raw_path`` may then
    be None (no raw file: the caller keeps the upload). ``progress(rows_read, percent_of_bytes)`` is
    called every few batches. A gzip-compressed file is expanded beside ``path`` first (and removed
    after)."""
    if raw_path is None and typed_path is None:
        raise ValueError("read_upload writes a raw file, a typed file or both")
    limits = limits or Limits()
    with _arrow_memory():
        return _read_upload(path, raw_path, max_rows=max_rows, max_columns=max_columns, progress=progress,
                            batch_rows=batch_rows, limits=limits, typed_path=typed_path, tmpdir=tmpdir)


def _read_upload(path, raw_path, *, max_rows, max_columns, progress, batch_rows, limits, typed_path, tmpdir,
                 encoding=None) -> Upload:
    reader = open_upload(path, max_rows=max_rows, max_columns=max_columns, progress=progress,
                         batch_rows=batch_rows, limits=limits, encoding=encoding)
    try:
        if typed_path is None:
            with GroupWriter(raw_path, reader.schema, limits.batch_bytes) as out:  # (the raw file alone)
                for batch in reader.batches:
                    out.write(batch)
            return reader.upload()
        again = {"max_rows": max_rows, "max_columns": max_columns, "progress": None, "batch_rows": batch_rows,
                 "limits": limits, "typed_path": None, "tmpdir": tmpdir, "encoding": reader.encoding}
        columns = _scan(reader.batches, reader.schema, raw_path=raw_path, typed_path=typed_path,
                        line_offset=2 if reader.format == "csv" else 1, tmpdir=tmpdir, limits=limits,
                        raw_source=raw_path or functools.partial(_raw_again, path, again))
        return reader.upload(columns)
    except NotUtf8:  # bytes past the first 64 KB are not UTF-8: the whole file is Latin-1 text
        reader.close()
        return _read_upload(path, raw_path, max_rows=max_rows, max_columns=max_columns, progress=progress,
                            batch_rows=batch_rows, limits=limits, typed_path=typed_path, tmpdir=tmpdir,
                            encoding="latin-1")
    finally:
        reader.close()


@contextmanager
def _raw_again(path: str, again: dict):
    """A raw file of the upload at ``path``, read again (a cell misfit its type after the first rows,
    and the pass wrote no raw file), in a temporary folder removed on leaving."""
    with tempfile.TemporaryDirectory(dir=again["tmpdir"]) as folder:
        made = os.path.join(folder, "raw.parquet")
        _read_upload(path, made, **again)
        yield made


def infer(
    raw_path: str, *, line_offset: int = 2, tmpdir: str | None = None, limits: Limits | None = None,
) -> list[dict]:
    """Each column of the raw file: ``{"name", "type", "inferred", "missing", "missing_count",
    "present", "missing_line", "markers", "fits": {type: null | {"bad", "line", "example"}},
    "min", "max", "distinct", "categories", "distinct_exact"}``. ``line_offset`` turns a row index into
    a line number (2 for a CSV with its header; 1 for Parquet rows). One pass over the raw file (and a
    typed file written to a temporary folder for the summaries)."""
    limits = limits or Limits()
    source = pq.ParquetFile(raw_path)
    with _arrow_memory(), tempfile.TemporaryDirectory(dir=tmpdir) as folder:
        batches = source.iter_batches(batch_size=65_536, use_threads=False)
        return _scan(batches, source.schema_arrow, raw_path=None, typed_path=os.path.join(folder, "typed.parquet"),
                     line_offset=line_offset, tmpdir=tmpdir, limits=limits, raw_source=raw_path)


@contextmanager
def _arrow_memory():
    """Arrow allocates from jemalloc while a file is read (the system's allocator where pyarrow is built
    without it): the default, mimalloc, keeps much of what the reading, writing and classifying threads
    free (a 250,000-row file peaked 85 MB higher with it). Given back at the end."""
    previous = pa.default_memory_pool()
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(30)  # freed pages go back within 30 ms (each thread frees into arenas of its own)
    except NotImplementedError:
        pool = pa.system_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
        pool.release_unused()


def _scan(batches, schema, *, raw_path, typed_path, line_offset, tmpdir, limits: Limits,
          raw_source=None) -> list[dict]:
    """``raw_source``: the raw file a misfit's typed file is written from, or a function making it (a
    context manager giving its path)."""
    con = _connect(tmpdir, limits)
    try:
        scan = Scan(con, schema, raw_path=raw_path, typed_path=typed_path, batch_bytes=limits.batch_bytes,
                    summaries=aggregates_sql)
        try:
            for batch in batches:
                scan.add(batch)
            held = scan.finish()
        except BaseException:
            scan.abort()
            raise
        columns = described(scan.columns, line_offset=line_offset)
        if not held:  # a cell past the first rows misfit the type chosen: the typed file from the raw one
            if callable(raw_source):  # made now from the upload
                with raw_source() as source:
                    write_typed(source, typed_path, columns, tmpdir=tmpdir, limits=limits)
            else:
                write_typed(raw_source or raw_path, typed_path, columns, tmpdir=tmpdir, limits=limits)
        summarize(con, typed_path, columns, scan.columns, scan.aggregates if held else None)
        return columns
    finally:
        con.close()
