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
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import sql
from .reading import GroupWriter

#: Rows read before the typed file's types are chosen.
PROBE_ROWS = 1 << 16
#: Rows classified at once (batches are put together up to this, or up to the memory budget's batch).
BATCH_ROWS = 1 << 16

_CHECKED = sql._CHECKED
_FORMULA_BIT = len(_CHECKED)  # the flag bits' indices (sql._FORMULA, sql._MISSING_FLAG)
_MISSING_BIT = len(_CHECKED) + 1
_MARKERS = pa.array(list(sql._MARKERS))
_TRUTHS = pa.array(["true", "yes"])
_NULL_TEXT = pa.scalar(None, pa.string())
_TYPES = {"integer": pa.int64(), "decimal": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
          "datetime": pa.timestamp("us"), "categorical": pa.string()}
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


class Scan:
    """Reads batches (:meth:`add`), writing the raw file (when ``raw_path``) and the typed one (when
    ``typed_path``); :meth:`finish` closes them and returns the columns."""

    def __init__(self, con, schema: pa.Schema, *, raw_path: str | None, typed_path: str | None,
                 batch_bytes: int):
        self.con, self.names = con, list(schema.names)
        self.columns = [Column(n) for n in self.names]
        self.raw = GroupWriter(raw_path, schema, batch_bytes) if raw_path else None
        self.typed_path, self.batch_bytes = typed_path, batch_bytes
        self.typed: GroupWriter | None = None
        self.kinds: list[str] | None = None  # the typed file's types, once chosen
        self.speculation_held = typed_path is not None
        self.probe: list[list[Cells]] = []
        self.rows = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = self.pending_bytes = 0

    # ------------------------------------------------------------------ batches

    def add(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        if self.pending_rows >= BATCH_ROWS or self.pending_bytes >= self.batch_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        table = pa.Table.from_batches(self.pending)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        if self.raw:
            for batch in table.to_batches():
                self.raw.write(batch)
        arrays = [table.column(i).combine_chunks() for i in range(table.num_columns)]
        del table
        read = self._read(arrays)
        self.rows += len(arrays[0]) if arrays else 0
        if self.speculation_held:
            self._type(read)

    def _read(self, arrays: list[pa.Array]) -> list[Cells]:
        offset, read, general = self.rows, [None] * len(arrays), {}
        for i, array in enumerate(arrays):
            column = self.columns[i]
            v = pc.utf8_trim(array, " ")
            m = pc.or_(pc.is_null(v), pc.is_in(v, value_set=_MARKERS))  # (is_in says false of a null)
            for way in (("date", "number") if column.way == "date" else ("number", "date")):
                cells = (_numbers if way == "number" else _dates)(v, m)
                if cells is not None:
                    column.way, read[i] = way, cells
                    self._count(column, cells, offset)
                    break
            else:
                column.way, general[i] = "general", v
        if general:
            for i, cells, flags, markers in _general(self.con, general):
                read[i] = cells
                self.columns[i].markers |= markers
                self._count(self.columns[i], cells, offset, flags)
        return read

    def _count(self, column: Column, cells: Cells, offset: int, flags: np.ndarray | None = None) -> None:
        column.cells += len(cells.v)
        for j, count in enumerate(cells.counts):
            column.counts[j] += count
        if flags is None and cells.counts[_MISSING_BIT]:
            column.markers |= _marker_bits(cells)
        needed = [j for j, count in enumerate(cells.counts) if count and j not in column.first]
        if needed:
            if flags is None:  # the number or date way: flags follow from missing and (numbers) the integer check
                flags = _fast_flags(cells)
            for j in needed:
                at = int(np.argmax((flags >> j) & 1))
                column.first[j] = (offset + at, cells.v[at].as_py() or "")
        if column.booleans is not None:
            if column.counts[_CHECKED.index("boolean")]:
                column.booleans = None  # not boolean: its texts are not needed
            else:
                present = pc.filter(cells.v, pc.invert(cells.m))
                for entry in pc.value_counts(present).to_pylist():
                    column.booleans[entry["values"]] = column.booleans.get(entry["values"], 0) + entry["counts"]

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
        self.typed, self.typed_schema = GroupWriter(self.typed_path, schema, self.batch_bytes, plain=False), schema
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
                self.typed.close(complete=False)
                os.remove(self.typed_path)
                self.typed = None
                return
            arrays.append(array)
        self.typed.write(pa.record_batch(arrays, schema=self.typed_schema))

    def finish(self) -> bool:
        """Close the files; True when the typed file was written with the columns' final types."""
        self._flush()
        if self.raw:
            self.raw.close()
        if not self.speculation_held:
            return False
        if self.kinds is None:
            self._choose()
        if self.typed is None:
            return False
        self.typed.close()
        if self.kinds != [c.kind() for c in self.columns]:
            os.remove(self.typed_path)
            return False
        return True

    def abort(self) -> None:
        for writer in (self.raw, self.typed):
            if writer is not None:
                writer.close(complete=False)


# --------------------------------------------------------------------------- the ways of reading a column


def _present(m: pa.Array) -> int:
    return len(m) - (pc.sum(m).as_py() or 0)


def _numbers(v: pa.Array, m: pa.Array) -> Cells | None:
    """Every present cell a finite number (Arrow's parse), else None."""
    try:
        n = pc.cast(pc.if_else(m, _NULL_TEXT, v), pa.float64())
    except pa.ArrowInvalid:
        return None
    if n.null_count < len(n) and not pc.all(pc.is_finite(n)).as_py():
        return None  # inf, nan: the general way says what they are
    present = _present(m)
    whole = pc.and_(pc.less_equal(pc.abs(n), float(sql._INTEGER_LIMIT)), pc.equal(n, pc.floor(n)))
    counts = [0] * sql._FLAGS
    counts[_CHECKED.index("integer")] = present - (pc.sum(whole).as_py() or 0)
    for kind in ("boolean", "date", "datetime"):
        counts[_CHECKED.index(kind)] = present
    counts[_MISSING_BIT] = len(m) - present
    return Cells(v, m, n, None, counts)


def _dates(v: pa.Array, m: pa.Array) -> Cells | None:
    """Every present cell a date written YYYY-MM-DD, else None."""
    text = pc.if_else(m, _NULL_TEXT, v)
    if text.null_count == len(text) or not pc.all(pc.equal(pc.binary_length(text), 10)).as_py():
        return None
    stamps = pc.strptime(text, format="%Y-%m-%d", unit="s", error_is_null=True)
    if stamps.null_count != text.null_count or not pc.all(pc.equal(pc.strftime(stamps, format="%Y-%m-%d"), text)).as_py():
        return None
    present = _present(m)
    counts = [0] * sql._FLAGS
    for kind in ("integer", "decimal", "boolean"):
        counts[_CHECKED.index(kind)] = present
    counts[_MISSING_BIT] = len(m) - present
    return Cells(v, m, None, stamps.cast(pa.timestamp("us")), counts)


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


def _general(con, trimmed: dict[int, pa.Array]):
    """The cells of the columns ``trimmed`` (index: trimmed texts) read by DuckDB: their distinct texts
    classified in one query, taken back per cell. Yields ``(index, Cells, flags, markers)``: the flags of
    each cell, and the markers of its missing cells as bits (:func:`.sql._flags_sql`)."""
    encoded = {i: pc.dictionary_encode(v) for i, v in trimmed.items()}
    ids = np.concatenate([np.full(len(e.dictionary), i, dtype=np.int32) for i, e in encoded.items()])
    texts = pa.concat_arrays([e.dictionary for e in encoded.values()])
    table = pa.table({"c": ids, "v0": texts})
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
    n_all, t_all = found.column("n0").combine_chunks(), found.column("t0").combine_chunks()
    start = 0
    for i, e in encoded.items():
        size = len(e.dictionary)
        f_u, k_u = f_all[start:start + size], k_all[start:start + size]
        n_u, t_u = n_all.slice(start, size), t_all.slice(start, size)
        start += size
        # a null cell (a Parquet file's null) is missing, marker bit 0: an extra entry at the end
        f_ext = np.append(f_u, sql._MISSING_FLAG)
        k_ext = np.append(k_u, 1)
        index = np.asarray(pc.fill_null(e.indices, size), dtype=np.int64)
        flags = f_ext[index]
        used = np.bincount(index, minlength=size + 1) > 0
        counts = [int(np.count_nonzero((flags >> j) & 1)) for j in range(sql._FLAGS)]
        m = pa.array((flags & sql._MISSING_FLAG) != 0)
        n = pc.take(n_u, e.indices)
        t = pc.take(t_u, e.indices).cast(pa.timestamp("us"))
        v = trimmed[i]
        yield i, Cells(v, m, n, t, counts), flags, int(np.bitwise_or.reduce(k_ext[used]))


def _typed(kind: str, cells: Cells) -> pa.Array | None:
    """The batch's column as ``kind`` (missing as null), or None when a present cell does not fit it."""
    if kind != "categorical" and cells.counts[_CHECKED.index(kind)]:
        return None
    m = cells.m
    if kind == "categorical":
        return pc.if_else(m, _NULL_TEXT, cells.v)
    if kind == "boolean":
        return pc.if_else(m, pa.scalar(None, pa.bool_()), pc.is_in(pc.utf8_lower(cells.v), value_set=_TRUTHS))
    if kind in ("integer", "decimal"):
        if cells.n is None:
            return pa.nulls(len(m), _TYPES[kind]) if cells.counts[_MISSING_BIT] == len(m) else None
        n = pc.if_else(m, pa.scalar(None, pa.float64()), cells.n)
        return n.cast(pa.int64()) if kind == "integer" else n
    if cells.t is None:
        return pa.nulls(len(m), _TYPES[kind]) if cells.counts[_MISSING_BIT] == len(m) else None
    t = pc.if_else(m, pa.scalar(None, pa.timestamp("us")), cells.t)
    return t.cast(pa.date32()) if kind == "date" else t
