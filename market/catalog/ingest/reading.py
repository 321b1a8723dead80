"""Reading an upload (CSV or Parquet, gzip-compressed CSV) as batches of text, with the whole-file
checks: format, encoding, delimiter and quoting, the header's names, ragged lines, the limits on rows,
columns and sizes (:class:`~market.catalog.bounded.Limits`). :func:`text_batches` yields the cells as
written (an empty cell as ""; a Parquet file's values as text, null as null); :mod:`.scan` reads them.
No Django.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import queue
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .. import bounded
from ..bounded import Limits

#: The longest column name accepted, in characters.
MAX_NAME_LENGTH = 64
#: A text cell starting with one of these is a formula in a spreadsheet (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


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
    columns: list[dict] | None = None  # what was inferred, when the upload was read with its typed file


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
    """``"utf-8"`` when the file's first 64 KB decode as UTF-8 (the rest is checked by Arrow as it is
    parsed: :class:`NotUtf8` then, and the file is read again as Latin-1), else ``"latin-1"``;
    IngestError for NUL bytes anywhere (binary garbage)."""
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            if b"\x00" in chunk:
                raise IngestError([f"line {_nul_line(path)}: the file contains NUL bytes: it is binary, not CSV text"])
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head)  # (a character cut at the end is not an error)
    except UnicodeDecodeError:
        return "latin-1"
    return "utf-8"


class NotUtf8(Exception):
    """A file read as UTF-8 holds bytes that are not: it is read again as Latin-1."""


def _nul_line(path: str) -> int:
    """The line of the first NUL byte (read again, only after one was found)."""
    line = 1
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            nul = chunk.find(b"\x00")
            if nul >= 0:
                return line + chunk.count(b"\n", 0, nul)
            line += chunk.count(b"\n")
    return line


def _ahead(batches: Iterator[pa.RecordBatch], depth: int = 2) -> Iterator[pa.RecordBatch]:
    """``batches`` read on a thread of their own, ``depth`` ahead of the one given (the CSV parser works
    while the batch before is classified); what reading raises is raised here."""
    done = object()
    ahead: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False  # the reader below stopped

    def read():
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(done)
        except BaseException as exc:  # given to the reader below
            put(exc)

    thread = threading.Thread(target=read, name="ingest-read", daemon=True)
    thread.start()
    try:
        while (item := ahead.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


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


#: The raw file's row groups: this many rows, or fewer when their text passes _GROUP_BYTES.
_GROUP_ROWS = 1 << 17
_GROUP_BYTES = 64 << 20


class Gathering:
    """Record batches gathered until there are ``rows`` rows or ``nbytes`` bytes of them: :meth:`add`
    says when, :meth:`take` hands them over as one table (None when none are held)."""

    def __init__(self, rows: int, nbytes: int):
        self.limit_rows, self.limit_bytes = rows, nbytes
        self.batches: list[pa.RecordBatch] = []
        self.rows = self.bytes = 0

    def add(self, batch: pa.RecordBatch) -> bool:
        """Hold ``batch``; True once enough is held to be taken."""
        self.batches.append(batch)
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        return self.rows >= self.limit_rows or self.bytes >= self.limit_bytes

    def take(self) -> pa.Table | None:
        table = pa.Table.from_batches(self.batches) if self.batches else None
        self.batches, self.rows, self.bytes = [], 0, 0
        return table


#: The raw file's codec: LZ4, about twice as quick to write as zstd for about 1.6 times the size (the
#: raw file is internal, read again only when an owner changes the columns' types); the typed file,
#: which the statistics read, keeps zstd.
_RAW_COMPRESSION = "lz4"
#: The raw file's rows looked at to choose its dictionary columns (:func:`_repeating`).
_LOOK_ROWS = 4096


def _repeating(table: pa.Table) -> list[str]:
    """The columns whose first :data:`_LOOK_ROWS` rows hold at most one different text in 16
    (categories, dates, flags): written with a dictionary, smaller and quicker to compress. Arrow
    writes plain pages once a dictionary grows past its page limit (a wrong guess costs time only)."""
    head = table.slice(0, _LOOK_ROWS)
    rows = max(head.num_rows, 1)
    return [name for name, column in zip(head.column_names, head.columns)
            if pc.count_distinct(column, mode="all").as_py() * 16 <= rows]


class GroupWriter:
    """Writes a Parquet file in row groups of about ``_GROUP_ROWS`` rows, or fewer past ``group_bytes``
    (batches come small; a row group each is slow to write and to read). The raw file is written
    without statistics (its cells are mostly distinct text nothing filters on), LZ4-compressed, with
    dictionaries for the columns its first rows show repeating (:func:`_repeating`: the file is opened
    with its first row group); a typed file zstd-compressed, with statistics, and dictionaries for the
    ``dictionary`` columns."""

    def __init__(self, path: str, schema: pa.Schema, group_bytes: int = _GROUP_BYTES, *,
                 dictionary: list[str] | None = None):
        self.path, self.schema, self.out = path, schema, None
        if dictionary is not None:
            self.out = pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=dictionary,
                                        write_statistics=True)
        self.group = Gathering(_GROUP_ROWS, min(group_bytes, _GROUP_BYTES))

    def _open_raw(self, first: pa.Table | None) -> None:
        self.out = pq.ParquetWriter(self.path, self.schema, compression=_RAW_COMPRESSION, write_statistics=False,
                                    use_dictionary=_repeating(first) if first is not None else False)

    def write(self, batch: pa.RecordBatch) -> None:
        if self.group.add(batch):
            self.flush()

    def flush(self) -> None:
        table = self.group.take()
        if table is not None:
            if self.out is None:
                self._open_raw(table)
            self.out.write_table(table, row_group_size=max(table.num_rows, 1))

    def close(self, *, complete: bool = True) -> None:
        if complete:
            self.flush()
        if self.out is None:
            self._open_raw(None)
        self.out.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(complete=exc[0] is None)


Progress = Callable[[int, float], None]


@dataclass
class Reader:
    """An upload being read: its format, column names (trimmed), encoding and delimiter (CSV), and
    :attr:`batches`, an iterator of text batches (raising :class:`IngestError` for what is found on
    the way: ragged lines, too many rows, unreadable values); ``rows`` counts the rows read."""

    format: str
    names: list[str]
    batches: Iterator[pa.RecordBatch]
    encoding: str | None = None
    delimiter: str | None = None
    rows: int = 0
    cleanup: list[str] = field(default_factory=list)
    written_names: list[str] | None = None  # the raw file's column names (a Parquet file's, untrimmed)

    @property
    def schema(self) -> pa.Schema:
        """The raw file's: text columns."""
        return pa.schema([(n, pa.string()) for n in self.written_names or self.names])

    def upload(self, columns: list[dict] | None = None) -> Upload:
        return Upload(self.format, self.names, self.rows, self.encoding, self.delimiter, columns)

    def close(self) -> None:
        for path in self.cleanup:
            if os.path.exists(path):
                os.remove(path)


def open_upload(
    path: str, *, max_rows: int, max_columns: int, progress: Progress | None = None, batch_rows: int = 65_536,
    limits: Limits | None = None, encoding: str | None = None,
) -> Reader:
    """The upload at ``path`` opened for reading (its whole-file checks done: format, size, header);
    a gzip-compressed file is expanded beside ``path`` first (removed by :meth:`Reader.close`).
    ``encoding``: a CSV file's, when known (else found: :class:`NotUtf8` may be raised while reading)."""
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
            reader = _open_csv(expanded, max_rows=max_rows, max_columns=max_columns, report=report, limits=limits,
                               encoding=encoding)
        except BaseException:
            if os.path.exists(expanded):
                os.remove(expanded)
            raise
        reader.cleanup.append(expanded)
        return reader
    if kind == "parquet":
        return _open_parquet(path, max_rows=max_rows, max_columns=max_columns, report=report, batch_rows=batch_rows,
                             limits=limits)
    return _open_csv(path, max_rows=max_rows, max_columns=max_columns, report=report, limits=limits, encoding=encoding)


def _open_parquet(path, *, max_rows, max_columns, report, batch_rows, limits: Limits) -> Reader:
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
    reader = Reader("parquet", [n.strip() for n in names], iter(()), written_names=names)
    schema = reader.schema

    def batches():
        tally = bounded.Tally(limits, os.path.getsize(path))
        count = 0
        try:
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
                        yield pa.record_batch(arrays, schema=schema)
                    reader.rows += batch.num_rows
                    count += 1
                    if count % 4 == 1:
                        report(reader.rows, min(100.0, 100.0 * reader.rows / max(total, 1)))
        except pa.ArrowException as exc:
            raise IngestError([f"the Parquet file could not be read ({str(exc)[:200]})"]) from None
        if not reader.rows:
            raise IngestError(["the file has no rows"])
        report(reader.rows, 100.0)
        pa.default_memory_pool().release_unused()  # what the batches held goes back before DuckDB reads

    reader.batches = batches()
    return reader


def _open_csv(path, *, max_rows, max_columns, report, limits: Limits, encoding: str | None = None) -> Reader:
    size = max(os.path.getsize(path), 1)
    if size > limits.uncompressed:  # (a CSV upload is at most UPLOAD_MAX_BYTES, a gzip one expands to at most this)
        raise IngestError([f"the file is {bounded.size(size)}; the limit is {bounded.size(limits.uncompressed)}"])
    encoding = encoding or _encoding(path)
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
    reader = Reader("csv", names, iter(()), encoding=encoding, delimiter=delimiter)

    def batches():
        ragged: list = []

        def on_invalid(row):
            if not ragged:
                ragged.append(row)
            return "skip"

        read = pacsv.ReadOptions(
            column_names=names, skip_rows=1, block_size=1 << 20,
            encoding="utf8" if encoding == "utf-8" else "latin1",
        )
        parse = pacsv.ParseOptions(
            delimiter=delimiter, quote_char=quote, newlines_in_values=True, invalid_row_handler=on_invalid,
        )
        convert = pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names}, strings_can_be_null=False, quoted_strings_can_be_null=False,
            null_values=[],
        )
        raw = open(path, "rb")
        counting = _Counting(raw)
        try:
            if raw.read(3) != _BOM:
                raw.seek(0)
            stream = pacsv.open_csv(io.BufferedReader(counting, 1 << 20), read_options=read, parse_options=parse,
                                    convert_options=convert)
            for batch in _ahead(stream):
                if ragged:
                    break
                reader.rows += batch.num_rows
                if reader.rows > max_rows:
                    raise IngestError([f"the file has more than {max_rows:,} rows (the limit)"])
                yield batch
                report(reader.rows, min(99.0, 100.0 * counting.count / size))
        except pa.ArrowException as exc:
            message = str(exc).split("\n")[0][:200]
            if encoding == "utf-8" and "invalid UTF8" in message:
                raise NotUtf8() from None
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
        if not reader.rows:
            raise IngestError(["the file has a header but no data rows"])
        report(reader.rows, 100.0)

    reader.batches = batches()
    return reader


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


