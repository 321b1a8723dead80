"""The bounds of reading an upload: the memory one ingest process may use, and how large a table may
be once uncompressed, judged before the bytes are expanded (``market.catalog.ingest`` reads with
them; ``market.catalog.uploads`` makes :class:`Limits` from the settings).

* A Parquet file's footer says how large each row group is uncompressed: a row group, or a
  file, past the limits is refused before a value is read (:func:`parquet_footer_problem`).
* The footer can understate what the values decode to: dictionary and run-length encoding keep
  2 million copies of one 500-character text in 100 KB, so the text is also counted as it is
  decoded, in batches of a bounded size (:func:`batch_rows`). Text columns are read as
  dictionaries and measured before they are expanded (:func:`text_bytes`), reading stops as
  soon as the count passes a limit (:class:`Tally`), and a batch is expanded a slice at a time
  (:func:`slices`).
* A gzip-compressed CSV is expanded chunk by chunk to a private file, counted, and stopped
  past the limit (:func:`gunzip`).

Each check returns the reason in a sentence an owner can act on, or None. Plain Python and
pyarrow; no Django.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

MiB = 1 << 20
_CHUNK = MiB
_SMALLER_GROUPS = "write the file with smaller row groups (for example 100,000 rows each)"


@dataclass(frozen=True)
class Limits:
    """``memory``: the bytes one ingest process may use, itself included (Python, Django, pyarrow and
    DuckDB loaded take about 245 MB
    resident, the shared libraries' pages included): DuckDB gets a quarter, a batch of decoded text a 32nd;
    ``row_group``: a Parquet row group's size uncompressed and decoded;
    ``uncompressed``: the whole table's, as text; ``threads``: DuckDB's."""

    memory: int = 512 * MiB
    row_group: int = 256 * MiB
    uncompressed: int = 2048 * MiB
    threads: int = 1

    @property
    def batch_bytes(self) -> int:
        """The decoded text held at once: one batch, and the raw file's row group being written."""
        return max(MiB, self.memory // 32)

    @property
    def duckdb_memory(self) -> int:
        return max(64 * MiB, self.memory // 4)


def size(n: int) -> str:
    """``n`` bytes in words: 794 KB, 1.2 GB."""
    for unit, scale in (("GB", 1 << 30), ("MB", MiB), ("KB", 1 << 10)):
        if n >= scale:
            figure = n / scale
            return f"{figure:.1f} {unit}" if figure < 10 else f"{figure:,.0f} {unit}"
    return f"{n} bytes"


# --------------------------------------------------------------------------- Parquet


def parquet_footer_problem(meta, limits: Limits) -> str | None:
    """Why the file is refused from its footer alone (``pyarrow.parquet.FileMetaData``), or None."""
    total = 0
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        uncompressed = sum(group.column(j).total_uncompressed_size for j in range(group.num_columns))
        if uncompressed > limits.row_group:
            return (f"row group {i + 1} of the Parquet file is {size(uncompressed)} uncompressed; the limit is "
                    f"{size(limits.row_group)} a row group: {_SMALLER_GROUPS}")
        total += uncompressed
    if total > limits.uncompressed:
        return f"the Parquet file is {size(total)} uncompressed; the limit is {size(limits.uncompressed)}"
    return None


def batch_rows(meta, limits: Limits, *, most: int = 65_536) -> int:
    """Rows read at once: about ``limits.batch_bytes`` of values by the footer's sizes (plain
    values; dictionary-encoded text is measured before it is expanded, and expanded in slices)."""
    width = 32 * max(meta.num_columns, 1)  # a number or a date as text
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        if group.num_rows:
            stored = sum(group.column(j).total_uncompressed_size for j in range(group.num_columns))
            width = max(width, -(-stored // group.num_rows))
    return max(1, min(most, limits.batch_bytes // width))


def dictionary_columns(source) -> list[str]:
    """The text columns of a ``pyarrow.parquet.ParquetFile`` stored with a dictionary in some row group
    (read as dictionaries they are measured before they are expanded; reading plain text so would
    only cost a hash table)."""
    meta, found = source.metadata, set()
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            if chunk.has_dictionary_page or any("DICTIONARY" in e for e in chunk.encodings):
                found.add(chunk.path_in_schema)
    return [f.name for f in source.schema_arrow
            if f.name in found and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))]


def as_text(column: pa.Array) -> pa.Array:
    """A column as text: a string array, or a dictionary array of strings (not expanded)."""
    if pa.types.is_dictionary(column.type):
        return pa.DictionaryArray.from_arrays(column.indices, column.dictionary.cast(pa.string()))
    return column.cast(pa.string())


def text_bytes(column: pa.Array) -> int:
    """The bytes of a column of :func:`as_text` once expanded (its text and offsets), computed
    without expanding a dictionary."""
    if pa.types.is_dictionary(column.type):
        lengths = pc.take(pc.binary_length(column.dictionary), column.indices)
        return (pc.sum(lengths).as_py() or 0) + 4 * len(column)
    return column.nbytes


def slices(rows: int, text: int, limits: Limits):
    """(offset, length) slices of a batch of ``rows`` rows and ``text`` bytes of expanded text, each
    about ``limits.batch_bytes`` at most."""
    count = max(1, -(-text // limits.batch_bytes))
    step = max(1, -(-rows // count))
    for offset in range(0, rows, step):
        yield offset, min(step, rows - offset)


class Tally:
    """The decoded text counted so far, by row group and in all; :meth:`add` says why reading
    stops once a count passes its limit."""

    def __init__(self, limits: Limits, file_size: int):
        self.limits, self.file_size = limits, file_size
        self.total = self.in_group = 0
        self.group = -1

    def add(self, group: int, n: int) -> str | None:
        if group != self.group:
            self.group, self.in_group = group, 0
        self.in_group += n
        self.total += n
        limits = self.limits
        if self.in_group > limits.row_group:
            return (f"row group {group + 1} of the Parquet file holds more than {size(limits.row_group)} of values "
                    f"once decoded (the file is {size(self.file_size)}: its values repeat); the limit is "
                    f"{size(limits.row_group)} a row group: {_SMALLER_GROUPS}")
        if self.total > limits.uncompressed:
            return (f"the table holds more than {size(limits.uncompressed)} of values once decoded (from a file of "
                    f"{size(self.file_size)}); the limit is {size(limits.uncompressed)}")
        return None


# --------------------------------------------------------------------------- gzip


def gunzip(path: str, out_path: str, *, limit: int) -> str | None:
    """Expand the gzip file at ``path`` into ``out_path``, a chunk at a time; stop (the reason)
    as soon as more than ``limit`` bytes have come out, or the file is damaged."""
    written = 0
    try:
        with gzip.open(path, "rb") as source, open(out_path, "wb") as out:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > limit:
                    return (f"the file expands to more than {size(limit)} once uncompressed (from "
                            f"{size(os.path.getsize(path))} of gzip); the limit is {size(limit)}")
                out.write(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        return f"the gzip file is damaged or cut short ({str(exc)[:200]})"
    return None
