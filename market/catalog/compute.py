"""Where the data is, and how a plan's answer is computed there: SQL run by DuckDB.

A :class:`Table` is "the records of one dataset": a typed Parquet file
(:class:`ParquetTable`, what a dataset stores), or an in-memory table for
tests and for datasets made before typed files (:meth:`Table.from_arrow`,
:meth:`Table.from_columns`, :meth:`Table.from_matrix`). :func:`compute` runs a
plan (``market.catalog.spec.Plan``) on a table and returns its true
answer ``u``, one float per coordinate.

The statistics package (``market.catalog.spec``) describes each coordinate without any SQL, as an
:class:`Aggregate` (a count of the records matching some :class:`Condition`,
or a sum of a column's values clamped to ``[lower, upper]`` over them). This
module is the only one that knows SQL and DuckDB: it renders every
coordinate of the plan as one conditional aggregate (``sum(CASE WHEN ...)``,
which DuckDB runs several times faster than ``FILTER (WHERE ...)``), all in
ONE ``SELECT`` over the table, so the data is scanned once and a
group-by over declared categories is a set of conditional aggregates (no
category found in the data ever leaves the query; only the owner's declared
list goes in). Every constant is a bound parameter and every identifier is
quoted (column names are chosen by the owner). Pointing the same SQL at a
warehouse means a new :class:`Table` and connection, here.

Accuracy of sums: a sum uses DuckDB's ``fsum`` (compensated, Kahan-Babuska
summation): its rounding error is at most a few units in the last place of
the sum of the absolute values, whatever the number of rows or their order
(plain floating-point summation of 10 million values can lose about
``n * 2^-53`` of it). Counts are exact integers.

This module does not import Django.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from .spec.coordinates import Aggregate, Cells, Centroid, Condition, GridCentroid, Row

__all__ = [
    "Aggregate",
    "Backend",
    "Dialect",
    "DuckDBBackend",
    "Cells",
    "Centroid",
    "Condition",
    "ParquetTable",
    "Row",
    "Table",
    "compute",
    "quote",
]

#: Default DuckDB resources for one computation.
THREADS = 2
MEMORY_LIMIT = "1GB"

def quote(name: str) -> str:
    """``name`` as an SQL identifier: in double quotes, inner quotes doubled."""
    if not isinstance(name, str) or "\x00" in name:
        raise ValueError(f"not a column name: {name!r}")
    return '"' + name.replace('"', '""') + '"'


class Dialect:
    """What differs between the SQL engines that compute a plan's aggregates: DuckDB's, here (the
    default), and Spark SQL's (``market.catalog.spark``). Everything else, every condition, clamp,
    rounding and conditional sum, is the same text on both, rendered once below."""

    #: the exact integer type a sum of grid steps is added up in
    wide_int = "HUGEINT"

    def quote(self, name: str) -> str:
        return quote(name)

    def param(self, value, params: list) -> str:
        """A bound constant (positional)."""
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("a constant must be finite")
        params.append(value)
        return "?"

    def finite(self, expr: str) -> str:
        """True when the double ``expr`` is a finite number (false or NULL when missing)."""
        return f"isfinite({expr})"

    def cells(self, case: str, width: int) -> list[str]:
        """The aggregates that count the records in each public cell number ``case`` gives (None: in
        none): DuckDB's ``histogram``, one map whose keys are only those numbers."""
        return [f"histogram({case})"]

    def read_cells(self, found, width: int, number) -> list:
        """The ``width`` cells' counts from what :meth:`cells` returned (an iterator over the row)."""
        counts = next(found) or {}
        return [number(counts.get(i, 0)) for i in range(width)]

    def float_sum(self, expr: str) -> str:
        """A sum of doubles: DuckDB's ``fsum`` (compensated: the same whatever the order)."""
        return f"fsum({expr})"


DUCKDB = Dialect()


# --------------------------------------------------------------------------
# tables


class Table(ABC):
    """The records of one dataset, wherever they are."""

    @abstractmethod
    def attach(self, con, name: str) -> None:
        """Make the records visible to ``con`` as the view or table ``name``."""

    @abstractmethod
    def detach(self, con, name: str) -> None:
        """Undo :meth:`attach`."""

    @property
    @abstractmethod
    def names(self) -> tuple[str, ...]:
        """The column names."""

    @staticmethod
    def from_arrow(table) -> "ArrowTable":
        return ArrowTable(table)

    @staticmethod
    def from_columns(columns: dict) -> "ArrowTable":
        """From ``{name: list or array}``; ``None`` is a missing value."""
        import pyarrow as pa

        return ArrowTable(pa.table({name: pa.array(list(values) if not isinstance(values, np.ndarray) else values)
                                    for name, values in columns.items()}))

    @staticmethod
    def from_matrix(names, values) -> "ArrowTable":
        """From a float matrix with one column per name (the datasets made before typed
        files: complete decimal columns). Raises ValueError if it is not finite or its
        shape does not match the names."""
        import pyarrow as pa

        data = np.asarray(values, dtype=np.float64)
        names = list(names)
        if data.ndim != 2 or data.shape[1] != len(names):
            raise ValueError(f"values must have shape (n_rows, {len(names)}), got {data.shape}")
        if not np.isfinite(data).all():
            raise ValueError("values must be finite")
        return ArrowTable(pa.table({name: pa.array(np.ascontiguousarray(data[:, i])) for i, name in enumerate(names)}))


class ArrowTable(Table):
    """An in-memory Arrow table."""

    def __init__(self, table):
        self.table = table

    @property
    def names(self):
        return tuple(self.table.column_names)

    def attach(self, con, name):
        con.register(name, self.table)

    def detach(self, con, name):
        con.unregister(name)


class ParquetTable(Table):
    """A Parquet file on the local disk (the dataset's typed file, decrypted while a task runs)."""

    def __init__(self, path):
        self.path = Path(path)

    @property
    def names(self):
        import pyarrow.parquet as pq

        return tuple(pq.read_schema(self.path).names)

    def attach(self, con, name):
        con.read_parquet(str(self.path)).create_view(name)

    def detach(self, con, name):
        con.execute(f"DROP VIEW IF EXISTS {quote(name)}")


# --------------------------------------------------------------------------
# SQL


_VIEW = "records"


def _param(value, params: list, d: Dialect = DUCKDB) -> str:
    return d.param(value, params)


def _condition(c: Condition, params: list, d: Dialect = DUCKDB) -> str:
    col = d.quote(c.column)
    if c.op == "is missing":
        return f"{col} IS NULL"
    if c.op == "present":
        return f"{col} IS NOT NULL"
    if c.op in ("=", "<", "<=", ">", ">="):
        return f"{col} {c.op} {_param(c.value, params, d)}"
    if c.op == "between":
        a, b = c.value
        return f"{col} BETWEEN {_param(a, params, d)} AND {_param(b, params, d)}"
    if c.op == "outside":
        a, b = c.value
        return f"({col} < {_param(a, params, d)} OR {col} >= {_param(b, params, d)})"
    values = ", ".join(_param(v, params, d) for v in c.value)
    if c.op == "in":
        return f"{col} IN ({values})"
    return f"({col} IS NOT NULL AND {col} NOT IN ({values}))"  # not in


def _when(where, params: list, d: Dialect = DUCKDB) -> str:
    return " AND ".join(_condition(c, params, d) for c in where) if where else "TRUE"


def cell_number(a: Cells, params: list, d: Dialect = DUCKDB) -> str:
    """A record's public cell number (0, 1, ...; NULL in none): no value found in the data leaves
    the query, only the cells' numbers.
    (Parameters are positional: each piece of text is rendered in the order it is read.)"""
    head = f"CASE WHEN {_when(a.where, params, d)} THEN " if a.where else ""
    branches = []
    start = 0
    if a.period:
        column, unit, first, count = a.period
        col = d.quote(column)

        def index() -> str:
            if unit == "month":
                return (f"((year({col}) - {_param(first.year, params, d)}) * 12 + month({col}) - "
                        f"{_param(first.month, params, d)})")
            return f"(year({col}) - {_param(first.year, params, d)})"

        test = index()
        top = _param(count - 1, params, d)
        value = index()
        branches.append(f"WHEN {col} IS NOT NULL AND {test} BETWEEN 0 AND {top} THEN {value}")
        start = count
    for number, cell in enumerate(a.cells[start:], start=start):
        branches.append(f"WHEN {_when(cell, params, d)} THEN {number}")
    case = "CASE " + " ".join(branches) + " END"
    return f"{head}{case}{' END' if head else ''}"


def centroid_steps(a: GridCentroid, params: list, d: Dialect = DUCKDB) -> list[str]:
    """Per record, its grid steps in each column of ``a`` (:class:`GridCentroid`): 0 outside the bound,
    NULL when a coordinate is missing. Squares are products (correctly rounded on every engine, as
    ``power`` need not be)."""

    def offset(j: int) -> str:
        return f"(CAST({d.quote(a.columns[j])} AS DOUBLE) - {_param(float(a.center[j]), params, d)})"

    def steps(i: int) -> str:  # each piece rendered in text order
        moved = offset(i)
        radius = _param(float(a.radius), params, d)
        length = "sqrt(" + " + ".join(f"{offset(j)} * {offset(j)}" for j in range(a.width)) + ")"
        grid = _param(float(a.grid), params, d)
        return f"CAST(round({moved} * least(CAST(1 AS DOUBLE), {radius} / greatest({length}, 1e-300)) / {grid}) AS {d.wide_int})"

    parts = []
    present = " AND ".join(d.finite(f"CAST({d.quote(c)} AS DOUBLE)") for c in a.columns)  # not when missing
    for i in range(a.width):
        # parameters are positional: each piece is rendered in the order it appears in the text
        inside = " + ".join(f"{steps(j)} * {steps(j)}" for j in range(a.width)) + f" <= {_param(int(a.bound_sq), params, d)}"
        value = steps(i)
        parts.append(f"CASE WHEN {present} THEN CASE WHEN {inside} THEN {value} ELSE 0 END END")
    return parts


def _aggregate(a: Aggregate, params: list, d: Dialect = DUCKDB) -> list[str]:
    """The select items of one aggregate (a count, a sum, a histogram's cells, a centroid's sums)."""
    if isinstance(a, GridCentroid):
        return [f"coalesce(sum({steps}), 0)" for steps in centroid_steps(a, params, d)]
    if isinstance(a, Cells):
        return d.cells(cell_number(a, params, d), a.width)
    if a.op == "count" and not a.where:
        return ["count(*)"]
    value = record_value(a, params, d)
    if a.op == "sum" and a.grid is None:
        return [f"coalesce({d.float_sum(value)}, 0.0)"]
    return [f"coalesce(sum({value}), 0)"]


def record_value(a: Aggregate, params: list, d: Dialect = DUCKDB) -> str:
    """What one record adds to a count or a sum: 1 or its clamped value (in grid steps on a grid),
    NULL when it does not count."""
    # conditional aggregates as CASE expressions: in DuckDB 1.5 several times faster than
    # FILTER (WHERE ...) clauses with bound parameters, and the same answer
    if a.op == "count":
        return f"CASE WHEN {_when(a.where, params, d)} THEN 1 END"
    if a.op == "sum":
        col = d.quote(a.column)
        # least/greatest skip NULLs, so a missing value is kept out by the condition, not by them
        when = _when((*a.where, Condition(a.column, "present")), params, d)
        lower, upper = _param(float(a.lower), params, d), _param(float(a.upper), params, d)
        inner = f"least(greatest(CAST({col} AS DOUBLE), {lower}), {upper})"
        if a.grid is not None:
            grid = _param(float(a.grid), params, d)
            low, high = (_param(int(v), params, d) for v in a.steps)
            steps = f"least(greatest(CAST(round({inner} / {grid}) AS {d.wide_int}), {low}), {high})"
            return f"CASE WHEN {when} THEN {steps} END"
        return f"CASE WHEN {when} THEN {inner} END"
    raise ValueError(f"unknown aggregate {a.op!r}")


_local = threading.local()


@contextmanager
def _session(table: Table, threads: int, memory_limit: str):
    """A DuckDB connection (in memory, in process) with ``table`` attached as :data:`_VIEW`.

    Opening a database takes about 50 ms, so each thread keeps one per setting
    and attaches the table only for the duration of one computation."""
    import duckdb

    key = (int(threads), str(memory_limit))
    cache = _local.__dict__.setdefault("connections", {})
    con = cache.get(key)
    if con is None:
        con = cache[key] = duckdb.connect(config={"threads": key[0], "memory_limit": key[1]})
    table.attach(con, _VIEW)
    try:
        yield con
    finally:
        table.detach(con, _VIEW)


def check_columns(aggregates, names) -> None:
    """ValueError naming the first column the aggregates read that the data lacks."""
    names = set(names)
    for a in aggregates:
        for name in sorted(set(a.columns) if isinstance(a, GridCentroid) else a.columns()):
            if name not in names:
                raise ValueError(f"the data has no column named {name!r}")


def select(aggregates, d: Dialect, view: str = _VIEW) -> tuple[str, list]:
    """One ``SELECT`` of every aggregate and the number of records over ``view``, and its parameters."""
    params: list = []
    parts: list[str] = []
    for a in aggregates:
        parts += _aggregate(a, params, d)
    parts.append("count(*)")
    return f"SELECT {', '.join(parts)} FROM {d.quote(view)}", params


def read_row(aggregates, row, d: Dialect, *, exact: bool) -> tuple[np.ndarray, int]:
    """The values (float64, or with ``exact`` int64) and the number of records from :func:`select`'s row."""
    number = int if exact else float
    values: list = []
    found = iter(row[:-1])
    for a in aggregates:
        if isinstance(a, GridCentroid):
            values += [number(next(found)) for _ in range(a.width)]
        elif isinstance(a, Cells):
            values += d.read_cells(found, a.width, number)
        else:
            values.append(number(next(found)))
    return np.array(values, dtype=np.int64 if exact else np.float64), int(row[-1])


class DuckDBBackend:
    """The default backend: DuckDB embedded, in this process, over a :class:`Table` (a local Parquet
    file, the dataset's typed file decrypted for the time of the computation, or an Arrow table)."""

    name = "duckdb"

    def __init__(self, *, threads: int = THREADS, memory_limit: str = MEMORY_LIMIT):
        self.threads, self.memory_limit = threads, memory_limit

    def run(self, aggregates, table: Table, *, exact: bool) -> tuple[np.ndarray, int]:
        check_columns(aggregates, table.names)
        sql, params = select(aggregates, DUCKDB)
        with _session(table, self.threads, self.memory_limit) as con:
            row = con.execute(sql, params).fetchone()
        return read_row(aggregates, row, DUCKDB, exact=exact)


class Backend(Protocol):
    """Where a plan's exact aggregates are computed (docs/operations.md, "Compute backends"). Only
    the aggregates leave it: the noise is added on the listing's path, in the release service, so an
    answer does not depend on the backend that computed it."""

    name: str

    def run(self, aggregates, table, *, exact: bool) -> tuple[np.ndarray, int]:
        """The aggregates' values on ``table`` (int64 with ``exact``: counts and sums in grid steps) and
        its number of records, in one scan. ValueError for a column the data lacks."""


def run(aggregates, table: Table, *, threads: int = THREADS, memory_limit: str = MEMORY_LIMIT,
        exact: bool = False) -> tuple[np.ndarray, int]:
    """The aggregates' values on ``table`` by DuckDB (float64, or with ``exact`` int64: counts and sums
    in grid steps) and its number of records, in one scan."""
    return DuckDBBackend(threads=threads, memory_limit=memory_limit).run(aggregates, table, exact=exact)


def run_vector(statistic, table: Table, *, threads: int = THREADS, memory_limit: str = MEMORY_LIMIT) -> tuple[np.ndarray, int]:
    """A :class:`Centroid` or :class:`Row` on ``table``, and its number of records."""
    names = set(table.names)
    for name in statistic.columns:
        if name not in names:
            raise ValueError(f"the dataset has no column {name!r}")
    with _session(table, threads, memory_limit) as con:
        n = int(con.execute(f"SELECT count(*) FROM {quote(_VIEW)}").fetchone()[0])
        params: list = []
        if isinstance(statistic, Row):
            if statistic.row > n:
                raise ValueError(f"there is no record {statistic.row}: the dataset has {n}")
            cols = ", ".join(f"CAST({quote(c)} AS DOUBLE)" for c in statistic.columns)
            row = con.execute(f"SELECT {cols} FROM {quote(_VIEW)} LIMIT 1 OFFSET ?", [statistic.row - 1]).fetchone()
            return np.array(row, dtype=np.float64), n
        parts = []
        for c, a in zip(statistic.columns, statistic.center):
            # parameters are positional: appended in the order they appear in the text
            offset = f"(CAST({quote(c)} AS DOUBLE) - {_param(float(a), params)})"
            radius = _param(float(statistic.radius), params)
            squares = " + ".join(
                f"power(CAST({quote(c2)} AS DOUBLE) - {_param(float(a2), params)}, 2)"
                for c2, a2 in zip(statistic.columns, statistic.center)
            )
            pull = f"least(1.0, {radius} / greatest(sqrt({squares}), 1e-300))"
            parts.append(f"fsum({offset} * {pull})")
        row = con.execute(f"SELECT {', '.join(parts)} FROM {quote(_VIEW)}", params).fetchone()
    center = np.array(statistic.center, dtype=np.float64)
    if n == 0:
        return np.full(len(center), np.nan), n
    return center + np.array([float(x) for x in row], dtype=np.float64) / n, n


def compute(plan, table, *, threads: int = THREADS, memory_limit: str = MEMORY_LIMIT, backend: Backend | None = None) -> np.ndarray:
    """The true answer ``u`` of ``plan`` on ``table`` (float64, one value per label; on the
    lattice path int64, in grid steps).

    A count is the number of records meeting its conditions; a sum adds the
    column's present values clamped to ``[lower, upper]``; a histogram's bin
    ``[e_k, e_{k+1})`` (the last one closed) counts the values in it, values
    outside all bins are not counted. See the statistics module for what each
    coordinate is.

    ``backend``: where (:class:`Backend`; default DuckDB embedded, over a :class:`Table`); another
    backend reads its own kind of ``table`` (``market.catalog.spark``).

    Raises ValueError if a column of the plan is missing from the table, if
    the table's number of records differs from a public size, or if an
    answer falls outside its declared range (more records than the plan allows).
    """
    nb = plan.neighbours
    vector = plan.vector is not None  # an l2 plan: its one vector statistic, noised as a whole
    if not (vector or plan.aggregates):
        raise ValueError("this plan was read back from a listing (statistics.plan_restore): build it to compute")
    if vector:
        u, n = run_vector(plan.vector, table, threads=threads, memory_limit=memory_limit)
    else:
        chosen = backend or DuckDBBackend(threads=threads, memory_limit=memory_limit)
        u, n = chosen.run(plan.aggregates, table, exact=plan.lattice is not None)
    if nb.public and n != nb.size:
        raise ValueError(f"the dataset's public size is {nb.size} but it holds {n} records")
    if vector:
        return u
    if plan.lattice is not None:
        low, high = np.array(plan.lattice.unit_lower), np.array(plan.lattice.unit_upper)
        outside = np.flatnonzero((u < low) | (u > high))
    else:
        outside = np.flatnonzero((u < plan.lower) | (u > plan.upper))
    if outside.size:
        i = outside[0]
        raise ValueError(
            f"the answer for {plan.labels[i]!r} is {u[i]:g}, outside its declared range "
            f"[{plan.lower[i]:g}, {plan.upper[i]:g}]: the dataset has more records than the plan allows"
        )
    return u


def sample_complete_rows(table: Table, columns, size: int, seed: int, *, threads: int = THREADS,
                         memory_limit: str = MEMORY_LIMIT) -> tuple[np.ndarray, int, int]:
    """A uniform random sample (without replacement) of at most ``size`` records of ``table``
    that have a finite value in every one of ``columns``, as a float64 matrix (one column per
    name), with the number of records and the number of those complete in ``columns``.

    For what-if estimates only (``market.catalog.whatif``), never for a release: DuckDB's
    reservoir sample, seeded with ``seed``, reads the records once and keeps ``size`` of them,
    so the time does not grow with ``size`` beyond the scan."""
    names = set(table.names)
    for name in columns:
        if name not in names:
            raise ValueError(f"the data has no column named {name!r}")
    cells = [f"CAST({quote(name)} AS DOUBLE)" for name in columns]
    complete = " AND ".join(f"isfinite({cell})" for cell in cells)  # NULL is not finite: dropped too
    picked = ", ".join(f"{cell} AS c{i}" for i, cell in enumerate(cells))
    with _session(table, threads, memory_limit) as con:
        total, kept = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {complete}) FROM {quote(_VIEW)}").fetchone()
        rows = con.execute(
            f"SELECT * FROM (SELECT {picked} FROM {quote(_VIEW)} WHERE {complete}) "
            f"USING SAMPLE reservoir({int(size)} ROWS) REPEATABLE ({int(seed)})"
        ).fetchall()
    matrix = np.array(rows, dtype=np.float64).reshape(len(rows), len(cells))
    return matrix, int(total), int(kept)
