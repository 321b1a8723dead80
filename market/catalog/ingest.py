"""Reading an owner's uploaded table (CSV or Parquet) into Parquet files, in batches.

Two steps, both on local files (``market.catalog.files`` decrypts and seals them):

* :func:`read_upload` streams the upload (CSV: delimiter and quoting detected,
  UTF-8 with or without a byte order mark, Latin-1 when the bytes are not UTF-8,
  gzip-compressed or not; or Parquet) into a *raw* Parquet file whose columns are
  the cells' text (Parquet columns are turned into text too), checking the
  whole-file limits and reporting progress; what it holds in memory and how large
  the table may be once uncompressed are bounded by :class:`~.bounded.Limits`
  (Parquet footers, decoded text and gzip output counted before they are expanded);
* :func:`infer` reads the raw file with DuckDB (in one scan) and returns, per column, the
  inferred type, the missing-value count and markers, and summaries for the
  owner (min/max, distinct values, the most frequent categories, and for each
  type how many present values would not fit it, with the first);
* :func:`write_typed` writes the *typed* Parquet file the statistics read
  (the layout of ``market.catalog.spec.columns``: BIGINT, DOUBLE, VARCHAR,
  BOOLEAN, DATE, TIMESTAMP; missing is NULL; ignored columns left out).

:func:`check_columns` judges an owner's choice of types and missing policies
against those summaries, with one reason per column.

Whole-file problems raise :class:`IngestError` with the reasons in words an
owner can act on. This module is plain Python, pyarrow and DuckDB; it does
not import Django.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from . import bounded
from .bounded import Limits
from .spec.columns import TYPES

__all__ = [
    "MISSING_MARKERS", "IngestError", "Limits", "Upload", "check_columns", "detect_format", "infer",
    "read_upload", "write_typed",
]

#: Cells that mean "missing" (besides empty ones), compared after trimming spaces.
MISSING_MARKERS = ("NA", "N/A", "NaN", "nan", "null", "NULL", "None", "n/a", "NAN", "Null", "none")
#: The longest column name accepted, in characters.
MAX_NAME_LENGTH = 64
#: How many of a column's most frequent categories are kept, to show the owner only (never a default of what is published).
TOP_CATEGORIES = 50
#: A text cell starting with one of these is a formula in a spreadsheet (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20
_INTEGER_LIMIT = 2**53  # whole numbers beyond this are not exact in a double


class IngestError(ValueError):
    """The file was not accepted; ``reasons`` says why (one line per problem)."""

    def __init__(self, reasons):
        self.reasons = [str(r) for r in reasons]
        super().__init__("; ".join(self.reasons))


@dataclass(frozen=True)
class Upload:
    """What :func:`read_upload` found: the format, the column names and the number of rows."""

    format: str  # "csv" or "parquet"
    names: list[str]
    rows: int
    encoding: str | None = None
    delimiter: str | None = None


def _quoted(text: str, length: int = 30) -> str:
    return repr(text) if len(text) <= length else repr(text[:length]) + "..."


# --------------------------------------------------------------------------- format detection


def detect_format(path: str) -> str:
    """``"parquet"``, ``"gzip"`` (a compressed CSV) or ``"csv"``, from the file's first bytes;
    IngestError for anything else."""
    with open(path, "rb") as f:
        head = f.read(8192)
    if not head.strip(b" \r\n\t" + _BOM):
        raise IngestError(["the file is empty"])
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    for magic, what in ((b"PK\x03\x04", "a ZIP archive"), (b"BZh", "a bzip2 archive"), (b"\xfd7zXZ", "an xz archive"),
                        (b"7z\xbc\xaf", "a 7-Zip archive")):
        if head.startswith(magic):
            raise IngestError([f"this is {what}, not a CSV or Parquet file: upload the table itself, "
                               "or a CSV file compressed with gzip"])
    for magic, what in ((b"%PDF", "a PDF document"), (b"\xd0\xcf\x11\xe0", "an old Excel/Office file")):
        if head.startswith(magic):
            raise IngestError([f"this is {what}, not a CSV or Parquet file: upload the table itself"])
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head:
        raise IngestError([
            "this is a binary file, not CSV text or Parquet (it contains NUL bytes; text saved as UTF-16 looks "
            "like this too: save it as UTF-8)"
        ])
    return "csv"


def _encoding(path: str) -> str:
    """``"utf-8"`` when every byte decodes as UTF-8 (streamed), else ``"latin-1"``;
    IngestError for NUL bytes anywhere (binary garbage)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    utf8 = True
    line = 1
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            nul = chunk.find(b"\x00")
            if nul >= 0:
                at = line + chunk.count(b"\n", 0, nul)
                raise IngestError([f"line {at}: the file contains NUL bytes: it is binary, not CSV text"])
            line += chunk.count(b"\n")
            if utf8:
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError:
                    utf8 = False
        if utf8:
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                utf8 = False
    return "utf-8" if utf8 else "latin-1"


def _sniff(text: str) -> tuple[str, str]:
    """The delimiter and quote character of a CSV text sample: the candidate that splits the
    first lines into the same number (more than one, the most) of fields."""
    lines = text.splitlines()
    if len(text) >= 60_000 and len(lines) > 1:
        lines = lines[:-1]  # the last line of a sample may be cut
    sample = "\n".join(lines[:200])
    best, best_score = ",", (0, 0)
    for delimiter in (",", ";", "\t", "|"):
        for quote in ('"', "'"):
            try:
                rows = [r for r in csv.reader(io.StringIO(sample), delimiter=delimiter, quotechar=quote) if r]
            except csv.Error:
                continue
            if not rows:
                continue
            width = len(rows[0])
            consistent = sum(1 for r in rows if len(r) == width)
            score = (consistent if width > 1 else 0, width if quote == '"' else width - 0.5)
            if score > best_score:
                best, best_score = (delimiter, quote), score
    return best if isinstance(best, tuple) else (",", '"')


#: Names the reader gives its own columns (DuckDB's row number of a Parquet file): not for owners' columns.
RESERVED_NAMES = frozenset({"file_row_number"})


def _check_names(names: list[str], max_columns: int, *, where: str = "line 1") -> None:
    if len(names) > max_columns:
        raise IngestError([f"the file has {len(names)} columns; the limit is {max_columns}"])
    if all(not n.strip() for n in names):
        raise IngestError([f"{where}: the first line is blank; it must be a header of column names"])
    problems, seen = [], {}
    for number, name in enumerate(names, start=1):
        stripped = name.strip()
        if not stripped:
            problems.append(f"{where}: column {number} has no name")
        elif len(stripped) > MAX_NAME_LENGTH:
            problems.append(f"{where}: the name of column {number} is longer than {MAX_NAME_LENGTH} characters")
        elif not stripped.isprintable():
            problems.append(f"{where}: the name of column {number} contains a character that cannot be printed")
        elif stripped[0] in FORMULA_STARTS:
            problems.append(f"{where}: the name of column {number} looks like a spreadsheet formula: {_quoted(stripped)}")
        elif stripped in seen:
            problems.append(f"{where}: column {number} has the same name as column {seen[stripped]} ({_quoted(stripped)})")
        elif stripped.lower() in RESERVED_NAMES:
            problems.append(f"{where}: the name of column {number}, {_quoted(stripped)}, is reserved: rename the column")
        else:
            seen[stripped] = number
    if problems:
        raise IngestError(problems)
    numberish = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
    if all(numberish.fullmatch(n.strip()) for n in names):
        raise IngestError([f"{where}: the first line must be a header of column names, not numbers"])


class _Counting(io.RawIOBase):
    """A file that counts the bytes read from it (for progress)."""

    def __init__(self, f):
        self.f, self.count = f, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self.f.readinto(b)
        self.count += n or 0
        return n


# --------------------------------------------------------------------------- step 1: raw text Parquet

#: The raw file's row groups: this many rows, or fewer when their text passes _GROUP_BYTES.
_GROUP_ROWS = 1 << 17
_GROUP_BYTES = 64 << 20


class _RawWriter:
    """Writes the raw text Parquet file in row groups of about ``_GROUP_ROWS`` rows, or fewer past
    ``group_bytes`` of text (the CSV reader gives small batches; a row group each is slow to write
    and to read), without dictionaries or statistics (the cells are mostly distinct text that
    nothing filters on)."""

    def __init__(self, path: str, schema: pa.Schema, group_bytes: int = _GROUP_BYTES):
        self.out = pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=False, write_statistics=False)
        self.pending: list[pa.RecordBatch] = []
        self.rows = self.bytes = 0
        self.group_bytes = min(group_bytes, _GROUP_BYTES)

    def write(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if self.rows >= _GROUP_ROWS or self.bytes >= self.group_bytes:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.out.write_table(pa.Table.from_batches(self.pending), row_group_size=max(self.rows, 1))
        self.pending, self.rows, self.bytes = [], 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.flush()
        self.out.close()

Progress = Callable[[int, float], None]


def read_upload(
    path: str, raw_path: str, *, max_rows: int, max_columns: int, progress: Progress | None = None,
    batch_rows: int = 65_536, limits: Limits | None = None,
) -> Upload:
    """Stream the upload at ``path`` into ``raw_path``: a Parquet file of text columns (the
    cells as written, an empty cell as ""; a Parquet upload's values as text, null as null).
    ``progress(rows_read, percent_of_bytes)`` is called every few batches. A gzip-compressed
    file is expanded beside ``path`` first (and removed after)."""
    limits = limits or Limits()
    kind = detect_format(path)
    report = progress or (lambda rows, percent: None)
    if kind == "gzip":
        expanded = path + ".expanded"
        try:
            problem = bounded.gunzip(path, expanded, limit=limits.uncompressed)
            if problem:
                raise IngestError([problem])
            if detect_format(expanded) != "csv":
                raise IngestError(["the gzip file holds something other than CSV text: compress only a CSV file"])
            return _read_csv(expanded, raw_path, max_rows=max_rows, max_columns=max_columns, report=report,
                             limits=limits)
        finally:
            if os.path.exists(expanded):
                os.remove(expanded)
    if kind == "parquet":
        return _read_parquet(path, raw_path, max_rows=max_rows, max_columns=max_columns, report=report,
                             batch_rows=batch_rows, limits=limits)
    return _read_csv(path, raw_path, max_rows=max_rows, max_columns=max_columns, report=report, limits=limits)


def _read_parquet(path, raw_path, *, max_rows, max_columns, report, batch_rows, limits: Limits) -> Upload:
    try:
        # read as a stream (not a row group's bytes at once); dictionary-encoded text as dictionaries, to be
        # measured before it is expanded (others are plain: their footer sizes are what they decode to)
        source = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20,
                                read_dictionary=bounded.dictionary_columns(pq.ParquetFile(path)))
    except (pa.ArrowException, OSError) as exc:
        raise IngestError([f"this is not a readable Parquet file ({str(exc)[:200]})"]) from None
    names = list(source.schema_arrow.names)
    _check_names(names, max_columns, where="the Parquet schema")
    meta = source.metadata
    total = meta.num_rows
    if total > max_rows:
        raise IngestError([f"the file has {total:,} rows; the limit is {max_rows:,}"])
    problem = bounded.parquet_footer_problem(meta, limits)
    if problem:
        raise IngestError([problem])
    schema = pa.schema([(n, pa.string()) for n in names])
    tally = bounded.Tally(limits, os.path.getsize(path))
    rows = batches = 0
    try:
        with _RawWriter(raw_path, schema, limits.batch_bytes) as out:
            for group in range(meta.num_row_groups):
                for batch in source.iter_batches(batch_size=bounded.batch_rows(meta, limits, most=batch_rows),
                                                 row_groups=[group], use_threads=False):
                    columns = []
                    for column in batch.columns:
                        if pa.types.is_nested(column.type) or pa.types.is_binary(column.type):
                            raise IngestError([f"a column holds {column.type} values; only plain values can be read"])
                        columns.append(bounded.as_text(column))
                    text = sum(bounded.text_bytes(c) for c in columns)
                    problem = tally.add(group, text)
                    if problem:
                        raise IngestError([problem])
                    for offset, length in bounded.slices(batch.num_rows, text, limits):
                        arrays = [c.slice(offset, length) for c in columns]
                        arrays = [a.dictionary_decode() if pa.types.is_dictionary(a.type) else a for a in arrays]
                        out.write(pa.record_batch(arrays, schema=schema))
                    rows += batch.num_rows
                    batches += 1
                    if batches % 4 == 1:
                        report(rows, min(100.0, 100.0 * rows / max(total, 1)))
    except pa.ArrowException as exc:
        raise IngestError([f"the Parquet file could not be read ({str(exc)[:200]})"]) from None
    if not rows:
        raise IngestError(["the file has no rows"])
    report(rows, 100.0)
    pa.default_memory_pool().release_unused()  # what the batches held goes back before DuckDB reads
    return Upload("parquet", [n.strip() for n in names], rows)


def _read_csv(path, raw_path, *, max_rows, max_columns, report, limits: Limits) -> Upload:
    size = max(os.path.getsize(path), 1)
    if size > limits.uncompressed:  # (a CSV upload is at most UPLOAD_MAX_BYTES, a gzip one expands to at most this)
        raise IngestError([f"the file is {bounded.size(size)}; the limit is {bounded.size(limits.uncompressed)}"])
    encoding = _encoding(path)
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    text = head.decode(encoding, errors="replace")
    delimiter, quote = _sniff(text)
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quote))
    except (StopIteration, csv.Error):
        raise IngestError(["line 1: the first line must be a header of column names"]) from None
    _check_names(header, max_columns)
    names = [n.strip() for n in header]
    schema = pa.schema([(n, pa.string()) for n in names])
    ragged: list = []

    def on_invalid(row):
        if not ragged:
            ragged.append(row)
        return "skip"

    read = pacsv.ReadOptions(
        column_names=names, skip_rows=1, block_size=1 << 20, encoding="utf8" if encoding == "utf-8" else "latin1",
    )
    parse = pacsv.ParseOptions(
        delimiter=delimiter, quote_char=quote, newlines_in_values=True, invalid_row_handler=on_invalid,
    )
    convert = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in names}, strings_can_be_null=False, quoted_strings_can_be_null=False,
        null_values=[],
    )
    rows = 0
    raw = open(path, "rb")
    counting = _Counting(raw)
    try:
        if raw.read(3) != _BOM:
            raw.seek(0)
        reader = pacsv.open_csv(io.BufferedReader(counting, 1 << 20), read_options=read, parse_options=parse,
                                convert_options=convert)
        with _RawWriter(raw_path, schema, limits.batch_bytes) as out:
            for i, batch in enumerate(reader):
                if ragged:
                    break
                rows += batch.num_rows
                if rows > max_rows:
                    raise IngestError([f"the file has more than {max_rows:,} rows (the limit)"])
                out.write(batch)
                report(rows, min(99.0, 100.0 * counting.count / size))
    except pa.ArrowException as exc:
        message = str(exc).split("\n")[0][:200]
        raise IngestError([f"the file is not valid CSV ({message}); check its quotes"]) from None
    finally:
        raw.close()
    if ragged:
        row = ragged[0]
        line = _ragged_line(path, encoding, delimiter, quote, len(names))
        where = f"line {line}" if line else "a line"
        raise IngestError([
            f"{where}: has {row.actual_columns} cells but the header has {row.expected_columns} "
            f"(every line needs one cell per column; a cell with the delimiter {delimiter!r} in it must be quoted)"
        ])
    if not rows:
        raise IngestError(["the file has a header but no data rows"])
    report(rows, 100.0)
    return Upload("csv", names, rows, encoding=encoding, delimiter=delimiter)


def _ragged_line(path, encoding, delimiter, quote, width) -> int | None:
    """The line on which the first record with the wrong number of cells starts (read again, only
    after a failure)."""
    with open(path, encoding=encoding, newline="", errors="replace") as f:
        if f.read(1) != "\ufeff":
            f.seek(0)
        reader = csv.reader(f, delimiter=delimiter, quotechar=quote)
        start = 1
        try:
            for row in reader:
                if row and len(row) != width:
                    return start
                start = reader.line_num + 1
        except csv.Error:
            return start
    return None


# --------------------------------------------------------------------------- step 2: inference

_TRUE, _FALSE = ("true", "yes"), ("false", "no")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _connect(tmpdir: str | None = None, limits: Limits | None = None) -> duckdb.DuckDBPyConnection:
    limits = limits or Limits()
    con = duckdb.connect(config={
        "threads": limits.threads, "memory_limit": f"{limits.duckdb_memory // bounded.MiB}MB",
        "enable_external_access": True,
    })
    if tmpdir:
        con.execute(f"SET temp_directory = {_lit(tmpdir)}")
    return con


def _missing_sql(v: str) -> str:
    """SQL true when the text ``v`` (already trimmed) is missing."""
    markers = ", ".join(_lit(m) for m in MISSING_MARKERS)  # a list, not IN: DuckDB makes a long IN a join
    return (f"({v} IS NULL OR {v} = '' "
            f"OR (CASE WHEN length({v}) <= 4 THEN list_contains([{markers}], {v}) ELSE FALSE END))")


def _number_sql(v: str) -> str:
    """The trimmed text ``v`` as a double, or NULL; a failed cast is slow, so it is tried only on
    text that starts like a number."""
    starts = ", ".join(str(ord(c)) for c in "+-.0123456789")  # ascii() once per cell, not once per comparison
    return f"(CASE WHEN ascii({v}) IN ({starts}) THEN TRY_CAST({v} AS DOUBLE) END)"


_CHECKED = ("integer", "decimal", "boolean", "date", "datetime")
_WHAT = {
    "integer": "not whole numbers", "decimal": "not numbers", "boolean": "not true/false or yes/no",
    "date": "not dates (YYYY-MM-DD)", "datetime": "not dates or times (YYYY-MM-DD HH:MM:SS)",
}


def _typed_sql(kind: str, i: int, *, missing: bool = True) -> str:
    """Column ``i`` of :func:`_layers` as type ``kind`` (a strict cast: the checks said it fits); NULL
    where missing, unless ``missing`` is false (no cell of the column is: the check is left out)."""
    v = f"v{i}"
    if kind == "integer":
        value = f"CAST(CAST({v} AS DOUBLE) AS BIGINT)"
    elif kind == "decimal":
        value = f"CAST({v} AS DOUBLE)"
    elif kind == "boolean":
        value = f"(lower({v}) IN ('true', 'yes'))"
    elif kind == "date":
        value = f"CAST({v} AS DATE)"
    elif kind == "datetime":
        value = f"CAST({v} AS TIMESTAMP)"
    else:
        value = v
    return f"CASE WHEN m{i} THEN NULL ELSE {value} END" if missing else value


def _plain(x):
    """A summary figure as JSON can hold it: ints and floats stay, dates become ISO text."""
    if x is None or isinstance(x, (int, float, str, bool)):
        return x
    if hasattr(x, "isoformat"):
        return x.isoformat()
    return str(x)


def _layers(raw_path: str, names: list[str], wanted: dict[int, str], *, rows: bool = True,
            prefix: int | None = None) -> str:
    """A query over the raw file computing each costly value of a cell once, in layers (DuckDB
    keeps a subquery's projection, so nothing is computed twice): ``r`` the row index and, for
    each column ``i`` in ``wanted``: ``vi`` the trimmed text, ``mi`` true when it is missing, and
    when ``wanted[i]`` holds ``"n"`` the number ``ni`` (or NULL), when it holds ``"t"`` the
    timestamp ``ti`` (or NULL) of text shaped like a date."""
    trimmed = ", ".join(f"trim({_ident(names[i])}) AS v{i}" for i in wanted)
    first = (f"SELECT file_row_number AS r, {trimmed} FROM read_parquet({_lit(raw_path)}, file_row_number=true)"
             if rows else f"SELECT {trimmed} FROM read_parquet({_lit(raw_path)})")
    if prefix is not None:  # only the rows before ``prefix``
        first += f" WHERE file_row_number < {int(prefix)}"
    parts = []
    for i, need in wanted.items():
        v = f"v{i}"
        parts.append(f"{_missing_sql(v)} AS m{i}")
        if "n" in need:
            parts.append(f"{_number_sql(v)} AS n{i}")
        if "t" in need:
            shaped = f"(length({v}) >= 10 AND substr({v}, 5, 1) = '-' AND substr({v}, 8, 1) = '-')"
            parts.append(f"(CASE WHEN {shaped} THEN TRY_CAST({v} AS TIMESTAMP) END) AS t{i}")
    return f"SELECT *, {', '.join(parts)} FROM ({first})"


_MARKERS = ("",) + MISSING_MARKERS  # a missing cell's text is recorded as bit (1 + its position); NULL as bit 0
_FORMULA = 1 << len(_CHECKED)  # the flag of a present text that starts like a spreadsheet formula
_MISSING_FLAG = 1 << (len(_CHECKED) + 1)  # the flag of a missing cell (and no other)
_FLAGS = len(_CHECKED) + 2  # the number of flag bits
_NONE = 1 << 62  # added to the row index of the cells a minimum must skip


def _flags_sql(i: int) -> str:
    """Column ``i`` of :func:`_layers` (with ``"nt"``): ``fi``, a small integer of flags per cell (missing, which
    types it does not fit, formula-like), and ``ki``, the missing-value marker of a missing cell as a bit."""
    v, n, t = f"v{i}", f"n{i}", f"t{i}"
    markers = "[" + ", ".join(_lit(m) for m in _MARKERS) + "]"
    fits = {
        "integer": f"(isfinite({n}) AND {n} = round({n}) AND abs({n}) <= {_INTEGER_LIMIT})",
        "decimal": f"isfinite({n})",
        "boolean": f"(CASE WHEN length({v}) BETWEEN 2 AND 5 "
                   f"THEN list_contains(['true', 'false', 'yes', 'no'], lower({v})) ELSE FALSE END)",
        "date": f"(CASE WHEN length({v}) = 10 AND {t} IS NOT NULL THEN TRY_CAST({v} AS DATE) IS NOT NULL "
                "ELSE FALSE END)",
        "datetime": f"({t} IS NOT NULL)",
    }
    # _MISSING_FLAG: missing; else bit j set when the cell does not fit kind j, _FORMULA when formula-like.
    # A number is never a boolean, a date, or formula-like; a timestamp never a number, a boolean or
    # formula-like; other text never a number or a date: most cells take one short branch.
    general = " + ".join(f"(CASE WHEN {fits[k]} THEN 0 ELSE {1 << j} END)" for j, k in enumerate(_CHECKED))
    formula = f"(CASE WHEN starts_with({v}, '=') OR starts_with({v}, '@') THEN {_FORMULA} ELSE 0 END)"
    bit = {k: 1 << j for j, k in enumerate(_CHECKED)}
    number = (f"{bit['boolean'] + bit['date'] + bit['datetime']} + (CASE WHEN isfinite({n}) THEN "
              f"(CASE WHEN abs({n}) <= {_INTEGER_LIMIT} AND {n} = round({n}) THEN 0 ELSE {bit['integer']} END) "
              f"ELSE {bit['integer'] + bit['decimal']} END)")
    stamp = (f"{bit['integer'] + bit['decimal'] + bit['boolean']} + (CASE WHEN {fits['date']} THEN 0 "
             f"ELSE {bit['date']} END)")
    text = (f"{bit['integer'] + bit['decimal'] + bit['date'] + bit['datetime']} + "
            f"(CASE WHEN {fits['boolean']} THEN 0 ELSE {bit['boolean']} END) + {formula}")
    return (f"(CASE WHEN m{i} THEN {_MISSING_FLAG} WHEN {n} IS NOT NULL AND {t} IS NULL THEN {number} "
            f"WHEN {t} IS NOT NULL AND {n} IS NULL THEN {stamp} WHEN {n} IS NULL THEN {text} "
            f"ELSE {general} + {formula} END) AS f{i}, "
            f"(CASE WHEN m{i} THEN (CASE WHEN {v} IS NULL THEN 1 "
            f"ELSE 1 << list_position({markers}, {v}) END) END) AS k{i}")


#: The first rows looked at for the first cell having each flag, before the whole file is scanned again.
_PREFIX_ROWS = 8192


def _first_rows(con, raw_path: str, names: list[str], wanted: dict[int, list[int]]) -> dict[tuple[int, int], int]:
    """The index of the first row of column ``i`` having flag bit ``j`` (of :func:`_flags_sql`), for each
    ``j`` in ``wanted[i]`` (flags some cell of the column is known to have): looked for in the first
    rows, then, for those not found there, in one scan of the whole file reading only their columns."""
    found: dict[tuple[int, int], int] = {}
    for prefix in (_PREFIX_ROWS, None):
        if not wanted:
            break
        aggregates = [f"min(r + (1 - ((f{i} >> {j}) & 1)) * {_NONE})" for i, bits in wanted.items() for j in bits]
        query = (f"SELECT {', '.join(aggregates)} FROM "
                 f"(SELECT *, {', '.join(_flags_sql(i) for i in wanted)} "
                 f"FROM ({_layers(raw_path, names, {i: 'nt' for i in wanted}, prefix=prefix)}))")
        row = iter(con.execute(query).fetchone())
        left: dict[int, list[int]] = {}
        for i, bits in wanted.items():
            for j in bits:
                at = next(row)
                if at is None or at >= _NONE:
                    left.setdefault(i, []).append(j)
                else:
                    found[(i, j)] = at
        wanted = left
    return found


def infer(
    raw_path: str, *, line_offset: int = 2, tmpdir: str | None = None, limits: Limits | None = None,
) -> list[dict]:
    """Each column of the raw file: ``{"name", "type", "inferred", "missing", "missing_count",
    "present", "missing_line", "markers", "fits": {type: null | {"bad", "line", "example"}},
    "distinct", "categories", "min", "max"}``. ``line_offset`` turns a row index into a line
    number (2 for a CSV with its header; 1 for Parquet rows).

    One scan of the whole file whatever its number of columns: each cell is trimmed, and cast to
    a number and to a timestamp when it looks like one, once (:func:`_layers`); a small integer
    of flags per cell says what it is (missing, which types it does not fit, formula-like); one
    aggregate per column counts the cells and the cells having each flag (sums of bits), and min, max and approximate
    distinct counts are taken of every reading (only the inferred type's are kept). The first row
    having each flag some cell has is looked for in the first rows, and only for those not found
    there in a scan of their columns alone (:func:`_first_rows`). Then one scan of one column per
    text column (its most frequent categories), one lookup of the rows of the first misfits when
    there are any, and an exact distinct count of a column with few values."""
    con = _connect(tmpdir, limits)
    try:
        names = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({_lit(raw_path)})").fetchall()]
        everything = {i: "nt" for i in range(len(names))}
        aggregates = []
        for i in range(len(names)):
            n, t, v = f"n{i}", f"t{i}", f"v{i}"
            # how many cells, how many have each flag (bit j of the flags is (f >> j) & 1), and the markers found
            aggregates += ["count(*)", *(f"sum((f{i} >> {j}) & 1)" for j in range(_FLAGS)), f"bit_or(k{i})"]
            # the summaries of each reading (only the inferred type's are kept)
            aggregates += [f"min({n})", f"max({n})", f"approx_count_distinct({n})", f"min({t})", f"max({t})",
                           f"approx_count_distinct({t})", f"approx_count_distinct(CASE WHEN NOT m{i} THEN {v} END)"]
        query = (f"SELECT {', '.join(aggregates)} FROM "
                 f"(SELECT *, {', '.join(_flags_sql(i) for i in range(len(names)))} "
                 f"FROM ({_layers(raw_path, names, everything)}))")
        row = con.execute(query).fetchone()
        width = 1 + _FLAGS + 1 + 7
        counts = [[int(n or 0) for n in row[i * width + 1:i * width + 1 + _FLAGS]] for i in range(len(names))]
        # the first row having each flag, for the flags some cell has (none of a column that fits everything)
        order = [len(_CHECKED) + 1, *range(len(_CHECKED) + 1)]  # missing, then the kinds, then formulas
        wanted = {i: [j for j in order if counts[i][j]] for i in range(len(names))}
        firsts = _first_rows(con, raw_path, names, {i: bits for i, bits in wanted.items() if bits})
        out, formulas, readings = [], [], []
        for i, name in enumerate(names):
            cells = row[i * width:(i + 1) * width]

            def having(bit, i=i):
                return counts[i][bit.bit_length() - 1]

            missing_count = having(_MISSING_FLAG)
            first_missing = firsts.get((i, len(_CHECKED) + 1))
            present, used = cells[0] - missing_count, cells[1 + _FLAGS]
            fits = {}
            for j, kind in enumerate(_CHECKED):
                bad, first = having(1 << j), firsts.get((i, j))
                fits[kind] = None if not bad else {"bad": bad, "line": first + line_offset, "row": first}
            formulas.append((having(_FORMULA), firsts.get((i, len(_CHECKED)))))
            readings.append(cells[-7:])
            inferred = next((k for k in _CHECKED if fits[k] is None), "categorical") if present else "categorical"
            found = ["null"] * bool((used or 0) & 1) + [m for j, m in enumerate(_MARKERS) if (used or 0) >> (j + 1) & 1]
            out.append({
                "name": name, "type": inferred, "inferred": inferred,
                "missing": "none" if not missing_count else "exclude",
                "missing_count": missing_count, "present": present,
                "missing_line": None if first_missing is None else first_missing + line_offset,
                "markers": sorted("(empty)" if m == "" else m for m in found),
                "fits": fits,
            })
        problems = [(i, count, first) for i, (count, first) in enumerate(formulas)
                    if count and out[i]["inferred"] == "categorical"]
        texts = _lookup(con, raw_path, names, [bad["row"] for c in out for bad in c["fits"].values() if bad]
                        + [first for _, _, first in problems])
        for i, column in enumerate(out):
            for bad in column["fits"].values():
                if bad:
                    bad["example"] = (texts.get((bad.pop("row"), i)) or "")[:40]
        _summaries(con, raw_path, names, out, readings)
        if problems:
            raise IngestError([
                f"column {names[i]!r}: {_cells(count)} "
                f"{'looks like a spreadsheet formula' if count == 1 else 'look like spreadsheet formulas'} "
                f"(starting with = or @), first at line {first + line_offset} ({(texts.get((first, i)) or '')[:30]!r}); "
                "remove them or start them with an apostrophe"
                for i, count, first in problems
            ])
        return out
    finally:
        con.close()


def _lookup(con, raw_path: str, names: list[str], rows: list[int]) -> dict[tuple[int, int], str]:
    """The trimmed text of the cells of ``rows`` (row index, column index), read in one scan."""
    if not rows:
        return {}
    cells = ", ".join(f"trim({_ident(n)})" for n in names)
    found = con.execute(
        f"SELECT file_row_number, {cells} FROM read_parquet({_lit(raw_path)}, file_row_number=true) "
        f"WHERE file_row_number IN ({', '.join(map(str, sorted(set(rows))))})"
    ).fetchall()
    return {(r[0], i): text for r in found for i, text in enumerate(r[1:])}


def _summaries(con, raw_path: str, names: list[str], columns: list[dict], readings: list) -> None:
    """min/max (numbers, dates), distinct values, and the most frequent categories (text, booleans),
    of each column read as its inferred type; ``readings`` holds, per column, the min, max and
    approximate distinct count of its cells read as numbers, as timestamps, and as text."""
    for i, column in enumerate(columns):
        low_n, high_n, distinct_n, low_t, high_t, distinct_t, distinct_v = readings[i]
        kind = column["inferred"]
        column.update({"min": None, "max": None, "distinct": distinct_v, "categories": []})
        if kind == "integer":
            column.update({"min": None if low_n is None else int(low_n), "max": None if high_n is None else int(high_n),
                           "distinct": distinct_n})
        elif kind == "decimal":
            column.update({"min": low_n, "max": high_n, "distinct": distinct_n})
        elif kind in ("date", "datetime"):
            if kind == "date":
                low_t, high_t = (None if x is None else x.date() for x in (low_t, high_t))
            column.update({"min": _plain(low_t), "max": _plain(high_t), "distinct": distinct_t})
        v = f"v{i}"
        if kind in ("categorical", "boolean"):
            rows = con.execute(
                f"SELECT {v} AS c, count(*) AS n FROM ({_layers(raw_path, names, {i: ''})}) WHERE NOT m{i} "
                f"GROUP BY c ORDER BY n DESC, c LIMIT {TOP_CATEGORIES}"
            ).fetchall()
            column["categories"] = [{"value": c, "count": n} for c, n in rows]
            if len(rows) < TOP_CATEGORIES:
                column["distinct"], column["distinct_exact"] = len(rows), True  # every category is in the list
                continue
        distinct = column["distinct"]
        column["distinct_exact"] = distinct is not None and distinct <= 10 * TOP_CATEGORIES  # else an estimate
        if column["distinct_exact"]:  # few: count them exactly
            need, value = {"integer": ("n", f"n{i}"), "decimal": ("n", f"n{i}"), "date": ("t", f"t{i}"),
                           "datetime": ("t", f"t{i}")}.get(kind, ("", f"CASE WHEN NOT m{i} THEN {v} END"))
            column["distinct"] = con.execute(
                f"SELECT count(DISTINCT {value}) FROM ({_layers(raw_path, names, {i: need})})"
            ).fetchone()[0]


# --------------------------------------------------------------------------- confirmation and the typed file


def markers_text(markers) -> str:
    """The missing-value markers found in a column, for a sentence's parentheses: ``"empty, NA"`` (an
    empty cell is stored as the marker ``"(empty)"``, which would read "((empty))")."""
    return ", ".join("empty" if m == "(empty)" else m for m in markers or [])


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def _values(n: int) -> str:
    return f"{n} value is" if n == 1 else f"{n} values are"


def check_columns(current: list[dict], changes: list) -> tuple[list[dict], dict[str, str]]:
    """Apply an owner's ``changes`` (``[{"name", "type", "missing"}]``; the columns not named keep
    theirs) to ``current`` (what :func:`infer` found). Returns the new columns and the problems,
    one sentence per column name (empty when all is well)."""
    by_name = {c["name"]: dict(c) for c in current}
    problems: dict[str, str] = {}
    if not isinstance(changes, list) or not changes:
        return list(current), {"columns": "give a list of {name, type, missing} objects"}
    seen = set()
    for item in changes:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            problems["columns"] = "each item must be an object with a name"
            continue
        name = item["name"]
        if name in seen:
            problems[name] = f"column {name!r} is named twice"
            continue
        seen.add(name)
        if name not in by_name:
            problems[name] = f"there is no column {name!r} (the columns are {', '.join(map(repr, by_name))})"
            continue
        extra = set(item) - {"name", "type", "missing"}
        if extra:
            problems[name] = f"column {name!r}: unknown field {sorted(extra)[0]!r} (give name, type and missing)"
            continue
        column = by_name[name]
        kind = item.get("type", column["type"])
        policy = item.get("missing", column["missing"])
        if kind not in TYPES:
            problems[name] = f"column {name!r}: type must be one of {', '.join(TYPES)}, got {kind!r}"
            continue
        if policy not in ("none", "exclude", "category"):
            problems[name] = f"column {name!r}: missing must be none, exclude or category, got {policy!r}"
            continue
        bad = (column.get("fits") or {}).get(kind)
        if bad:
            problems[name] = (
                f"column {name!r}: {_values(bad['bad'])} {_WHAT[kind]}, first at line {bad['line']} "
                f"({bad['example']!r}), so it cannot be {kind}"
            )
            continue
        if policy == "none" and kind != "ignored" and column.get("missing_count"):
            markers = markers_text(column.get("markers"))
            line = column.get("missing_line")
            problems[name] = (
                f"column {name!r}: {_cells(column['missing_count'])} missing ({markers})"
                + (f", first at line {line}" if line else "")
                + "; choose exclude or category, not none"
            )
            continue
        column["type"], column["missing"] = kind, policy
    if all(by_name[n]["type"] == "ignored" for n in by_name) and not problems:
        problems["columns"] = "at least one column must be kept (not all can be ignored)"
    return [by_name[c["name"]] for c in current], problems


def write_typed(
    raw_path: str, typed_path: str, columns: list[dict], *, tmpdir: str | None = None, limits: Limits | None = None,
) -> None:
    """The typed Parquet file of ``columns`` (their confirmed types; ignored columns left out)."""
    kept = [c for c in columns if c["type"] != "ignored"]
    if not kept:
        raise IngestError(["every column is ignored: keep at least one"])
    con = _connect(tmpdir, limits)
    try:
        names = [c["name"] for c in columns]
        wanted = {i: "" for i, c in enumerate(columns) if c["type"] != "ignored"}
        select = ", ".join(f"{_typed_sql(columns[i]['type'], i, missing=columns[i].get('missing_count') != 0)} "
                           f"AS {_ident(names[i])}" for i in wanted)
        con.execute(
            f"COPY (SELECT {select} FROM ({_layers(raw_path, names, wanted, rows=False)})) TO {_lit(typed_path)} "
            "(FORMAT parquet, COMPRESSION zstd)"
        )
    except duckdb.Error as exc:
        raise IngestError([f"the typed file could not be written ({str(exc)[:200]})"]) from None
    finally:
        con.close()
