"""One pass over an upload's text batches: each batch is written to the raw file, its cells are
classified (missing, which types they do not fit, formula-like) and counted per column, and the
typed file is written in the same pass with the types the first rows suggest.

Classifying a column of a batch takes one of three ways, tried in this order (the way that worked
for the column's last batch first):

* ``number``: every present cell parses as a finite number with Arrow (whose grammar is a part of
  DuckDB's ``TRY_CAST(... AS DOUBLE)``: ``1_000`` parses in DuckDB only, and takes the third way);
* ``date``: every present cell is a date written ``YYYY-MM-DD`` (parsed, and written back the same);
* ``general``: the column's distinct texts in the batch are classified by DuckDB with the SQL of
  :mod:`.sql` (one query for all such columns of a batch), and the result taken back per cell.

The first two give exactly what the third would (they are shortcuts for cells whose reading is
certain). The typed file's types are chosen once :data:`PROBE_ROWS` rows are read; should a later
cell not fit its column's chosen type, the typed file is written again from the raw file at the end
(:func:`.columns.write_typed`). No Django.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import sql
from .reading import Gathering, GroupWriter, IngestError

#: Rows read before the typed file's types are chosen.
PROBE_ROWS = 1 << 16
#: Rows classified at once (batches are put together up to this, or up to the memory budget's batch).
BATCH_ROWS = 1 << 15

_CHECKED = sql._CHECKED
_FORMULA_BIT = len(_CHECKED)  # the flag bits' indices (sql._FORMULA, sql._MISSING_FLAG)
_MISSING_BIT = len(_CHECKED) + 1
_MARKERS = pa.array(list(sql._MARKERS))
_TRUTHS = pa.array(["true", "yes"])
_NULL_TEXT = pa.scalar(None, pa.string())
_TYPES = {"integer": pa.int64(), "decimal": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
          "datetime": pa.timestamp("us"), "categorical": pa.string()}
#: Writes handed to the writing thread and not yet done, at most (each holds a batch).
_WRITES_AHEAD = 2
#: A column whose present cells all fit boolean has at most this many different texts (the cases of true, yes, ...).
_BOOLEAN_TEXTS = 2**4 + 2**5 + 2**3 + 2**2


@dataclass
class Column:
    """What is known of a column so far: cells, the count of cells having each flag, the missing-value
    markers seen (bits, as :func:`.sql._flags_sql`'s ``k``), the first row and text having each flag,
    the texts of a column that may be boolean, with their counts; the way its last batch was read."""

    name: str
    cells: int = 0
    counts: list[int] = field(default_factory=lambda: [0] * sql._FLAGS)
    markers: int = 0
    first: dict[int, tuple[int, str]] = field(default_factory=dict)
    booleans: dict[str, int] | None = field(default_factory=dict)
    way: str = "number"

    def kind(self) -> str:
        """The type the cells so far suggest: the first checked type none misfits, else categorical."""
        if self.cells - self.counts[_MISSING_BIT] <= 0:
            return "categorical"
        return next((k for j, k in enumerate(_CHECKED) if not self.counts[j]), "categorical")


@dataclass
class Cells:
    """A batch's column read: ``v`` the trimmed text, ``m`` missing (no nulls), ``n`` the numbers and ``t``
    the timestamps (None when the way taken did not need them: then no present cell is one), and
    ``counts``, the batch's cells having each flag."""

    v: pa.Array
    m: pa.Array
    n: pa.Array | None
    t: pa.Array | None
    counts: list[int]
    whole: pa.Array | None = None  # the numbers as integers, when all are whole
    # the general way: ``v``, ``m``, ``n``, ``t`` are of the batch's distinct texts (and a last one, null, for
    # the null cells), ``index`` says each cell's, ``flags`` and ``entries`` are each distinct text's flags and cells
    index: pa.Array | None = None
    flags: np.ndarray | None = None
    entries: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.v) if self.index is None else len(self.index)


class Scan:
    """Reads batches (:meth:`add`), writing the raw file (when ``raw_path``) and the typed one (when
    ``typed_path``); :meth:`finish` closes them and returns the columns."""

    def __init__(self, con, schema: pa.Schema, *, raw_path: str | None, typed_path: str | None,
                 batch_bytes: int, summaries=None):
        self.con, self.names = con, list(schema.names)
        self.columns = [Column(n) for n in self.names]
        self.raw = GroupWriter(raw_path, schema, batch_bytes) if raw_path else None
        self.typed_path, self.batch_bytes = typed_path, batch_bytes
        self.typed: GroupWriter | None = None
        # ``summaries(names, kinds, source)``: a query of the typed batches computed while they are written
        self.summaries, self.aggregating, self.aggregates = summaries, None, None
        self.kinds: list[str] | None = None  # the typed file's types, once chosen
        self.speculation_held = typed_path is not None
        self.probe: list[list[Cells]] = []
        self.rows = 0
        self.pending = Gathering(BATCH_ROWS, batch_bytes)
        # the Parquet files are compressed and written by a thread of their own, beside the classifying
        self.writing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-write")
        self.classifying = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ingest-classify")
        self.writes: deque = deque()

    def _write(self, fn, *args) -> None:
        """``fn(*args)`` on the writing thread, in order; waits for the oldest write past :data:`_WRITES_AHEAD`
        (so the batches held stay few), and raises what a finished write raised."""
        self.writes.append(self.writing.submit(fn, *args))
        while len(self.writes) > _WRITES_AHEAD:
            self.writes.popleft().result()

    def _drain(self) -> None:
        while self.writes:
            self.writes.popleft().result()

    # ------------------------------------------------------------------ batches

    def add(self, batch: pa.RecordBatch) -> None:
        if self.pending.add(batch):
            self._flush()

    def _flush(self) -> None:
        table = self.pending.take()
        if table is None:
            return
        if self.raw:
            self._write(_write_table, self.raw, table)
        arrays = [table.column(i).combine_chunks() for i in range(table.num_columns)]
        del table
        read = self._read(arrays)
        self.rows += len(arrays[0]) if arrays else 0
        if self.speculation_held:
            self._type(read)

    def _read(self, arrays: list[pa.Array]) -> list[Cells]:
        """Each column of a batch read: the columns that may take a fast way by the classifying threads,
        meanwhile the text columns by DuckDB (both give the GIL up while they work)."""
        offset, read = self.rows, [None] * len(arrays)
        fast = {i: self.classifying.submit(_fast, self.columns[i].way, array)
                for i, array in enumerate(arrays) if self.columns[i].way != "general"}
        general = {i: array for i, array in enumerate(arrays) if i not in fast}
        for rest in (general, None):
            if rest is None:  # the columns no fast way could read (they stay with the general way)
                rest = {i: arrays[i] for i, cells in enumerate(read) if cells is None}
            if rest:
                for i, cells, markers in _general(self.con, rest):
                    self.columns[i].way, read[i] = "general", cells
                    self.columns[i].markers |= markers
                    self._count(self.columns[i], cells, offset)
            for i, future in list(fast.items()):
                cells, way = future.result()
                del fast[i]
                if cells is not None:
                    self.columns[i].way, read[i] = way, cells
                    self._count(self.columns[i], cells, offset)
        return read

    def _count(self, column: Column, cells: Cells, offset: int) -> None:
        column.cells += cells.rows
        for j, count in enumerate(cells.counts):
            column.counts[j] += count
        if cells.index is None and cells.counts[_MISSING_BIT]:
            column.markers |= _marker_bits(cells)
        needed = [j for j, count in enumerate(cells.counts) if count and j not in column.first]
        if needed:
            index = None if cells.index is None else np.asarray(cells.index)
            # the flags of each cell: of its distinct text (the general way), or from missing and the integer check
            flags = _fast_flags(cells) if index is None else cells.flags[index]
            for j in needed:
                at = int(np.argmax((flags >> j) & 1))
                text = cells.v[at if index is None else int(index[at])].as_py()
                column.first[j] = (offset + at, text or "")
        if column.booleans is not None:
            if column.counts[_CHECKED.index("boolean")]:
                column.booleans = None  # not boolean: its texts are not needed
            elif cells.index is None:
                present = pc.filter(cells.v, pc.invert(cells.m))
                for entry in pc.value_counts(present).to_pylist():
                    column.booleans[entry["values"]] = column.booleans.get(entry["values"], 0) + entry["counts"]
            else:
                for text, missing, count in zip(cells.v.to_pylist(), cells.m.to_pylist(), cells.entries.tolist()):
                    if count and not missing:
                        column.booleans[text] = column.booleans.get(text, 0) + count

    # ------------------------------------------------------------------ the typed file

    def _type(self, read: list[Cells]) -> None:
        if self.kinds is None:
            self.probe.append(read)
            if self.rows < PROBE_ROWS:
                return
            self._choose()
            return
        self._write_typed(read)

    def _choose(self) -> None:
        self.kinds = [c.kind() for c in self.columns]
        schema = pa.schema([(n, _TYPES[k]) for n, k in zip(self.names, self.kinds)])
        texts = [n for n, k in zip(self.names, self.kinds) if k == "categorical"]  # dictionaries for text alone
        self.typed = GroupWriter(self.typed_path, schema, self.batch_bytes, dictionary=texts)
        self.typed_schema = schema
        if self.summaries is not None:
            self.aggregating = Aggregating(self.con, schema, self.summaries(self.names, self.kinds, "_ingest_typed"))
        probe, self.probe = self.probe, []
        for read in probe:
            self._write_typed(read)

    def _write_typed(self, read: list[Cells]) -> None:
        if not self.speculation_held:
            return
        arrays = []
        for kind, cells in zip(self.kinds, read):
            array = _typed(kind, cells)
            if array is None:  # a cell misfits the type chosen: the file is written again at the end
                self.speculation_held = False
                self._stop_aggregating()
                self._drain()
                self.typed.close(complete=False)
                os.remove(self.typed_path)
                self.typed = None
                return
            arrays.append(array)
        batch = pa.record_batch(arrays, schema=self.typed_schema)
        self._write(self.typed.write, batch)
        if self.aggregating is not None:
            self.aggregating.add(batch)

    def finish(self) -> bool:
        """Close the files; True when the typed file was written with the columns' final types."""
        self._flush()
        if self.speculation_held and self.kinds is None:
            self._choose()
        self._drain()
        self.writing.shutdown()
        self.classifying.shutdown()
        if self.raw:
            self.raw.close()
        if not self.speculation_held or self.typed is None:
            return False
        self.typed.close()
        if self.kinds != [c.kind() for c in self.columns]:
            self._stop_aggregating()
            os.remove(self.typed_path)
            return False
        if self.aggregating is not None:
            self.aggregates = self.aggregating.result()
        return True

    def _stop_aggregating(self) -> None:
        if self.aggregating is not None:
            self.aggregating.abandon()
            self.aggregating = None

    def abort(self) -> None:
        self._stop_aggregating()
        self.classifying.shutdown(cancel_futures=True)
        self.writing.shutdown(cancel_futures=True)
        for writer in (self.raw, self.typed):
            if writer is not None:
                writer.close(complete=False)


class Aggregating:
    """A DuckDB query (``query``, over ``_ingest_typed``) reading the typed batches as they are
    written, on a thread of its own (a cursor of ``con``): the summaries cost no pass of their own."""

    def __init__(self, con, schema: pa.Schema, query: str):
        self.queue: queue.Queue = queue.Queue(maxsize=_WRITES_AHEAD)
        self.stopped = threading.Event()
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-summaries")
        self.done = self.thread.submit(self._run, con.cursor(), pa.RecordBatchReader.from_batches(schema, self._batches()),
                                       query)

    def _batches(self):
        # Read by whichever thread the query's scan reads on (Arrow may read ahead on a thread of its
        # own): once the query is over (finished, failed or abandoned) a read still waiting here ends,
        # rather than waiting for ever for a batch nobody will put (and keeping the process alive).
        while not self.stopped.is_set():
            try:
                batch = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if batch is None:
                return
            yield batch

    @staticmethod
    def _run(cursor, stream, query: str):
        try:
            cursor.register("_ingest_typed", stream)
            return cursor.execute(query).fetchone()
        finally:
            cursor.close()

    def add(self, batch) -> None:
        self._put(batch)

    def _put(self, item) -> None:
        while not self.done.done():  # (a query that failed reads no more)
            try:
                self.queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def result(self) -> tuple:
        self._put(None)
        try:
            return self.done.result()
        except Exception as exc:
            raise IngestError([f"the file's summaries could not be computed ({str(exc)[:200]})"]) from None
        finally:
            self.stopped.set()
            self.thread.shutdown()

    def abandon(self) -> None:
        self._put(None)
        try:
            self.done.result()
        except Exception:
            pass
        self.stopped.set()
        self.thread.shutdown()


def _write_table(writer: GroupWriter, table: pa.Table) -> None:
    for batch in table.to_batches():
        writer.write(batch)


# --------------------------------------------------------------------------- the ways of reading a column


def _fast(way: str, array: pa.Array) -> tuple[Cells | None, str]:
    """A batch's column read a fast way (the one that worked for its last batch first), with the way to try
    first next time; ``(None, "general")`` when none can read it."""
    if way in ("whole", "number"):
        cells = _plain_numbers(array, whole=way == "whole")
        if cells is not None:  # numbers as written: nothing to trim, nothing missing
            return cells, "whole" if cells.whole is not None else "number"
    v = pc.utf8_trim(array, " ")
    m = pc.or_(pc.is_null(v), pc.is_in(v, value_set=_MARKERS))  # (is_in says false of a null)
    for kind in (("date", "number") if way == "date" else ("number", "date")):
        cells = (_numbers if kind == "number" else _dates)(v, m)
        if cells is not None:  # (numbers with a cell missing or spaced: not tried as written next time)
            return cells, "spaced" if kind == "number" else kind
    return None, "general"


def _present(m: pa.Array) -> int:
    return len(m) - (pc.sum(m).as_py() or 0)


def _plain_numbers(text: pa.Array, *, whole: bool) -> Cells | None:
    """Every cell a finite number as written (no space around it, none missing: a missing-value
    marker is never a finite number), else None. With ``whole``, whole numbers are tried first (read
    as integers, 3 times quicker; Arrow reads 0x10 as 16, DuckDB does not: such cells are not)."""
    if text.null_count:
        return None
    none = pa.array(np.zeros(len(text), dtype=bool))
    if whole and not pc.any(pc.or_(pc.starts_with(text, "0x"), pc.starts_with(text, "0X"))).as_py():
        try:
            integers = pc.cast(text, pa.int64())
        except pa.ArrowInvalid:
            integers = None
        if integers is not None and _exact(integers):
            return _number_cells(text, none, integers.cast(pa.float64()), integers)
    try:
        n = pc.cast(text, pa.float64())
    except pa.ArrowInvalid:
        return None
    if not pc.all(pc.is_finite(n)).as_py():
        return None
    return _number_cells(text, none, n)


def _numbers(v: pa.Array, m: pa.Array) -> Cells | None:
    """Every present cell a finite number (Arrow's parse), else None."""
    missing = pc.any(m).as_py()
    try:
        n = pc.cast(pc.if_else(m, _NULL_TEXT, v) if missing else v, pa.float64())
    except pa.ArrowInvalid:
        return None
    if n.null_count < len(n) and not pc.all(pc.is_finite(n)).as_py():
        return None  # inf, nan: the general way says what they are
    return _number_cells(v, m, n)


def _number_cells(v: pa.Array, m: pa.Array, n: pa.Array, whole: pa.Array | None = None) -> Cells:
    """The cells of numbers ``n`` (``whole``: the same as integers, when they are known to be whole)."""
    present = _present(m)
    counts = [0] * sql._FLAGS
    if whole is None:
        fits = pc.and_(pc.less_equal(pc.abs(n), float(sql._INTEGER_LIMIT)), pc.equal(n, pc.floor(n)))
        bad = present - (pc.sum(fits).as_py() or 0)
        counts[_CHECKED.index("integer")] = bad
        if not bad:
            whole = n.cast(pa.int64())
    for kind in ("boolean", "date", "datetime"):
        counts[_CHECKED.index(kind)] = present
    counts[_MISSING_BIT] = len(m) - present
    return Cells(v, m, n, None, counts, whole)


def _exact(integers: pa.Array) -> bool:
    """Every integer exact in a double (at most 2**53 from 0)."""
    low, high = pc.min_max(integers).values()
    return not low.is_valid or max(-low.as_py(), high.as_py()) <= sql._INTEGER_LIMIT


def _dates(v: pa.Array, m: pa.Array) -> Cells | None:
    """Every present cell a date written YYYY-MM-DD (parsed, and written back the same), else None;
    checked on the distinct texts (a column of dates repeats them)."""
    text = pc.if_else(m, _NULL_TEXT, v)
    if text.null_count == len(text):
        return None
    encoded = pc.dictionary_encode(text)
    texts = encoded.dictionary
    if not pc.all(pc.equal(pc.binary_length(texts), 10)).as_py():
        return None
    stamps = pc.strptime(texts, format="%Y-%m-%d", unit="s", error_is_null=True)
    if stamps.null_count or not pc.all(pc.equal(pc.strftime(stamps, format="%Y-%m-%d"), texts)).as_py():
        return None
    present = _present(m)
    counts = [0] * sql._FLAGS
    for kind in ("integer", "decimal", "boolean"):
        counts[_CHECKED.index(kind)] = present
    counts[_MISSING_BIT] = len(m) - present
    return Cells(v, m, None, pc.take(stamps.cast(pa.timestamp("us")), encoded.indices), counts)


def _fast_flags(cells: Cells) -> np.ndarray:
    """The flags of each cell read the number or the date way (as :func:`.sql._flags_sql` gives them)."""
    bit = {k: 1 << j for j, k in enumerate(_CHECKED)}
    if cells.n is not None:
        whole = pc.and_(pc.less_equal(pc.abs(cells.n), float(sql._INTEGER_LIMIT)), pc.equal(cells.n, pc.floor(cells.n)))
        misfit = np.asarray(pc.fill_null(pc.invert(whole), False))
        present = bit["boolean"] + bit["date"] + bit["datetime"]
        flags = np.where(misfit, present + bit["integer"], present)
    else:
        flags = np.full(len(cells.m), bit["integer"] + bit["decimal"] + bit["boolean"])
    return np.where(np.asarray(cells.m), sql._MISSING_FLAG, flags).astype(np.int64)


def _marker_bits(cells: Cells) -> int:
    """The missing-value markers of a batch's missing cells (NULL bit 0, ``_MARKERS[j]`` bit j + 1)."""
    missing = pc.filter(cells.v, cells.m)
    bits = 1 if missing.null_count else 0
    for text in pc.unique(missing.drop_null()).to_pylist():
        bits |= 1 << (1 + sql._MARKERS.index(text))
    return bits


def _general(con, arrays: dict[int, pa.Array]):
    """The cells of the columns ``arrays`` (index: text as written) read by DuckDB: their distinct texts
    trimmed and classified in one query (:func:`.sql._flags_sql`), for all the columns at once. Yields
    ``(index, Cells, markers)``, the markers of the missing cells as bits."""
    encoded = {i: pc.dictionary_encode(a) for i, a in arrays.items()}
    trimmed = {i: pc.utf8_trim(e.dictionary, " ") for i, e in encoded.items()}
    ids = np.concatenate([np.full(len(t), i, dtype=np.int32) for i, t in trimmed.items()])
    table = pa.table({"c": ids, "v0": pa.concat_arrays(list(trimmed.values()))})
    con.register("_ingest_texts", table)
    try:
        query = (f"SELECT {sql._flags_sql(0)}, n0, t0 FROM "
                 f"({sql.cells_sql('SELECT c, v0 FROM _ingest_texts', {0: 'nt'})})")
        found = con.execute(query).arrow()
        if isinstance(found, pa.RecordBatchReader):  # (a stream in DuckDB 1.4 and later)
            found = found.read_all()
    finally:
        con.unregister("_ingest_texts")
    f_all = np.asarray(found.column("f0").combine_chunks(), dtype=np.int64)
    k_all = np.asarray(pc.fill_null(found.column("k0"), 0).combine_chunks(), dtype=np.int64)
    n_all, t_all = found.column("n0").combine_chunks(), found.column("t0").combine_chunks().cast(pa.timestamp("us"))
    start = 0
    for i, texts in trimmed.items():
        size, indices = len(texts), encoded[i].indices
        part = slice(start, start + size)
        start += size
        # a null cell (a Parquet file's null) is missing, marker bit 0: the extra entry at the end
        flags = np.append(f_all[part], sql._MISSING_FLAG)
        index = pc.fill_null(indices, size) if indices.null_count else indices
        entries = np.bincount(np.asarray(index), minlength=size + 1)
        counts = [int(entries[(flags >> j) & 1 == 1].sum()) for j in range(sql._FLAGS)]
        markers = int(np.bitwise_or.reduce(np.append(k_all[part], 1)[entries > 0]))
        cells = Cells(
            pa.concat_arrays([texts, pa.nulls(1, pa.string())]), pa.array((flags & sql._MISSING_FLAG) != 0),
            pa.concat_arrays([n_all.slice(part.start, size), pa.nulls(1, pa.float64())]),
            pa.concat_arrays([t_all.slice(part.start, size), pa.nulls(1, pa.timestamp("us"))]),
            counts, index=index, flags=flags, entries=entries,
        )
        yield i, cells, markers


def _typed(kind: str, cells: Cells) -> pa.Array | None:
    """The batch's column as ``kind`` (missing as null), or None when a present cell does not fit it."""
    if kind != "categorical" and cells.counts[_CHECKED.index(kind)]:
        return None
    if cells.index is not None:  # each distinct text typed, then taken per cell
        entries = Cells(cells.v, cells.m, cells.n, cells.t, [0] * sql._FLAGS)
        return pc.take(_typed(kind, entries), cells.index)
    m = cells.m
    if kind == "categorical":
        return pc.if_else(m, _NULL_TEXT, cells.v)
    if kind == "boolean":
        return pc.if_else(m, pa.scalar(None, pa.bool_()), pc.is_in(pc.utf8_lower(cells.v), value_set=_TRUTHS))
    if kind in ("integer", "decimal"):
        if cells.n is None:
            return pa.nulls(len(m), _TYPES[kind]) if cells.counts[_MISSING_BIT] == len(m) else None
        if kind == "integer" and cells.whole is not None:
            return cells.whole  # (null where missing: a missing cell is no number)
        n = pc.if_else(m, pa.scalar(None, pa.float64()), cells.n)
        return n.cast(pa.int64()) if kind == "integer" else n
    if cells.t is None:
        return pa.nulls(len(m), _TYPES[kind]) if cells.counts[_MISSING_BIT] == len(m) else None
    t = pc.if_else(m, pa.scalar(None, pa.timestamp("us")), cells.t)
    return t.cast(pa.date32()) if kind == "date" else t
