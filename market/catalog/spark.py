"""A compute backend on Apache Spark (PySpark): a plan's exact aggregates computed where the data is,
for tables beyond one machine (docs/operations.md, "Compute backends").

The aggregates are the ones DuckDB computes (``market.catalog.compute``): what each record adds to
each of them (its cell number in a histogram, 1 to a count, its clamped grid steps to a sum) is
rendered by the same code in Spark SQL's dialect (:class:`SparkDialect`: identifiers in
backquotes, named parameters, grid steps rounded to ``BIGINT``: a clamped value's steps are at most
10^15, exact in 64 bits, as in DuckDB's ``HUGEINT``). Each record's contributions are computed once
beneath the aggregation, and summed as BIGINT in ANSI mode (an overflow is an error, never a wrong
answer). The JVMs run with :data:`HUGE_METHODS`: the whole-stage code Spark generates for hundreds of
conditional sums is one method too large for the JVM to compile by default, and interpreted it ran
twice as slowly (measured). Only exact aggregates are computed here
(counts and sums on a grid: what every listing made since the float path was retired reads); the
noise is added on the listing's path in the release service, so an answer does not depend on the
backend.

Where the records come from:

* :class:`SealedParquet`: the dataset's typed Parquet file as the product stores it, sealed
  (``market.core.crypto``) in the object store or on a disk every executor reads. Each Spark task
  takes some of the file's row groups, reads the sealed bytes it needs by range, decrypts them in
  its own memory (:class:`market.core.crypto.SealedReader`, every chunk verified) and hands Arrow
  batches to Spark: the plain records never touch a disk and never leave the job. The job is given
  the one key that sealed the file and the store's credentials; the Spark cluster is trusted with
  them and with the records for the length of the job, as the ingest workers are.
* :class:`ParquetFiles`: plain Parquet files the cluster reads itself (a lake the owner's cluster
  already holds; the identity tests compare both backends on the same files).

This module does not import Django (``market.catalog.backends`` wires it to datasets and settings).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .compute import Cells, Dialect, GridCentroid, cell_number, centroid_steps, check_columns, record_value

__all__ = ["ParquetFiles", "SealedParquet", "SparkBackend", "SparkDialect", "query", "spark_session", "spark_stop"]

_VIEW = "records"


class SparkDialect(Dialect):
    """Spark SQL (ANSI mode): see the module's docstring."""

    wide_int = "BIGINT"

    def quote(self, name: str) -> str:
        if not isinstance(name, str) or "\x00" in name:
            raise ValueError(f"not a column name: {name!r}")
        return "`" + name.replace("`", "``") + "`"

    def param(self, value, params: list) -> str:
        name = f":p{len(params)}"
        super().param(value, params)  # the same checks; it appends the value
        return name

    def finite(self, expr: str) -> str:
        return f"({expr} IS NOT NULL AND NOT isnan({expr}) AND abs({expr}) < CAST('Infinity' AS DOUBLE))"



def _entries(aggregates, params: list) -> list[tuple[int, str, str]]:
    """Per record, ``(aggregate, cell, value)`` for each aggregate: its cell number (0 but for a
    histogram's cells and a centroid's columns) and what it adds (NULL: nothing); ``-1`` counts records."""
    out: list[tuple[int, str, str]] = []
    for number, a in enumerate(aggregates):
        if isinstance(a, GridCentroid):
            out += [(number, str(i), steps) for i, steps in enumerate(centroid_steps(a, params, SPARK))]
        elif isinstance(a, Cells):
            out.append((number, cell_number(a, params, SPARK), "1"))
        elif a.op == "sum" and a.grid is None:
            raise ValueError("the Spark backend computes exact aggregates only (counts, and sums on a grid); "
                             "a float sum is computed by DuckDB")
        else:
            out.append((number, "0", record_value(a, params, SPARK)))
    out.append((-1, "0", "1"))
    return out


def query(aggregates, view: str) -> tuple[str, list]:
    """The one Spark SQL query of ``aggregates`` over ``view`` (one row: the values in order, then the
    number of records), and its parameters. Beneath the aggregation each record's cell number and
    value per aggregate are computed once; above it, a histogram's cells are conditional sums over
    its cell number."""
    params: list = []
    inner, outer = [], []
    for k, (number, cell, value) in enumerate(_entries(aggregates, params)):
        inner.append(f"CAST({cell} AS INT) AS c{k}, CAST({value} AS BIGINT) AS v{k}")
        a = aggregates[number] if number >= 0 else None
        if isinstance(a, Cells):
            outer += [f"sum(CASE WHEN c{k} = {j} THEN v{k} END)" for j in range(a.width)]
        else:  # a count, a sum, one column of a centroid, the number of records
            outer.append(f"sum(v{k})")
    sql = f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM {SPARK.quote(view)}) AS per_record"
    return sql, params


def values_of(row) -> tuple[np.ndarray, int]:
    """The aggregates' values (int64; a sum over no record is 0) and the number of records from
    :func:`query`'s row."""
    values = [0 if v is None else int(v) for v in row]
    return np.array(values[:-1], dtype=np.int64), values[-1]


SPARK = SparkDialect()

#: HotSpot leaves methods over 8,000 bytes of bytecode interpreted; Spark's whole-stage code for a
#: listing's hundreds of conditional sums is one such method (measured: twice as slow without this).
HUGE_METHODS = "-XX:-DontCompileHugeMethods"

_lock = threading.Lock()
_sessions: dict = {}


def spark_session(master: str = "local[2]", conf: dict | None = None):
    """The process's Spark session for ``master`` (created once: starting one takes seconds)."""
    from pyspark.sql import SparkSession

    key = (master, tuple(sorted((conf or {}).items())))
    with _lock:
        session = _sessions.get(key)
        if session is None:
            # the executors' Python: this interpreter, with this project importable (in local mode; a
            # cluster's executors have the product installed: docs/operations.md)
            root = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            logging.getLogger("py4j").setLevel(logging.WARNING)  # not a line per connection closed
            builder = (SparkSession.builder.master(master).appName("gradual-compute")
                       .config("spark.pyspark.python", sys.executable)
                       .config("spark.executorEnv.PYTHONPATH", path)
                       .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"])
                       .config("spark.sql.session.timeZone", "UTC")
                       .config("spark.sql.ansi.enabled", "true")
                       .config("spark.ui.enabled", "false")
                       .config("spark.ui.showConsoleProgress", "false")
                       .config("spark.sql.shuffle.partitions", "4")
                       # the generated code of hundreds of sums is one huge method: let the JIT compile it
                       .config("spark.driver.extraJavaOptions", HUGE_METHODS)
                       .config("spark.executor.extraJavaOptions", HUGE_METHODS))
            for k, v in (conf or {}).items():
                builder = builder.config(k, v)
            session = _sessions[key] = builder.getOrCreate()
    return session


def spark_stop() -> None:
    """Stop this process's Spark sessions (tests; a worker keeps its session for its life)."""
    with _lock:
        for session in _sessions.values():
            session.stop()
        _sessions.clear()


@dataclass(frozen=True)
class ParquetFiles:
    """Plain Parquet files the cluster reads itself (paths it can open)."""

    paths: tuple[str, ...]

    def frame(self, spark):
        return spark.read.parquet(*self.paths)

    @property
    def names(self) -> tuple[str, ...]:
        import pyarrow.parquet as pq

        return tuple(pq.read_schema(self.paths[0]).names)


@dataclass(frozen=True)
class SealedParquet:
    """One sealed Parquet file (``market.core.crypto`` stream format) read by the executors.

    ``store``: where the sealed bytes are, ``{"kind": "s3", "bucket", "key", "endpoint_url",
    "region_name", "access_key", "secret_key"}`` or ``{"kind": "file", "path"}``; ``context``: the
    file's encryption context; ``key``: ``(key id, 32 bytes)``, the one key that sealed it;
    ``groups_per_task``: row groups read by one task."""

    store: dict
    context: bytes
    key: tuple[str, bytes]
    groups_per_task: int = 1
    _footer: dict = field(default_factory=dict, compare=False, repr=False)

    def _metadata(self):
        if "meta" not in self._footer:
            import pyarrow.parquet as pq

            with _Opened(self.store, self.context, self.key) as reader:
                found = pq.ParquetFile(reader)
                self._footer["meta"] = (found.schema_arrow, found.metadata.num_row_groups)
        return self._footer["meta"]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._metadata()[0].names)

    def frame(self, spark):
        from pyspark.sql.pandas.types import from_arrow_schema

        schema, groups = self._metadata()
        store, context, key, per = self.store, self.context, self.key, max(1, int(self.groups_per_task))
        tasks = [(start, min(start + per, groups)) for start in range(0, groups, per)] or [(0, 0)]

        def read(batches):
            import pyarrow.parquet as pq

            for batch in batches:
                for start, stop in zip(batch.column("start").to_pylist(), batch.column("stop").to_pylist()):
                    if start == stop:
                        continue
                    with _Opened(store, context, key) as reader:
                        found = pq.ParquetFile(reader)
                        for group in range(start, stop):
                            yield from found.read_row_group(group).to_batches()

        ranges = spark.createDataFrame(tasks, "start INT, stop INT").repartition(len(tasks))
        return ranges.mapInArrow(read, from_arrow_schema(schema))


class _Opened:
    def __init__(self, store, context, key):
        from market.core.crypto import Keyring, SealedReader

        self.client = None
        if store["kind"] == "s3":
            import boto3

            self.client = boto3.client("s3", endpoint_url=store.get("endpoint_url"), region_name=store.get("region_name"),
                                       aws_access_key_id=store.get("access_key"),
                                       aws_secret_access_key=store.get("secret_key"))
            size = self.client.head_object(Bucket=store["bucket"], Key=store["key"])["ContentLength"]

            def read_at(at: int, n: int) -> bytes:
                if n <= 0 or at >= size:
                    return b""
                got = self.client.get_object(Bucket=store["bucket"], Key=store["key"],
                                             Range=f"bytes={at}-{min(at + n, size) - 1}")
                return got["Body"].read()
        else:
            self.file = open(store["path"], "rb")  # noqa: SIM115 - closed in __exit__
            self.file.seek(0, 2)
            size = self.file.tell()

            def read_at(at: int, n: int) -> bytes:
                self.file.seek(at)
                return self.file.read(n)
        self.reader = SealedReader(Keyring((key,)), read_at, size, context=context, cached=8)

    def __enter__(self):
        import pyarrow as pa

        return pa.PythonFile(self.reader, mode="r")

    def __exit__(self, *exc):
        if self.client is None:
            self.file.close()


class SparkBackend:
    """:class:`market.catalog.compute.Backend` on Spark (``master``: ``local[2]``, ``spark://host:7077``,
    ...): one aggregation over the source's records, the aggregates read back exactly."""

    name = "spark"

    def __init__(self, *, master: str = "local[2]", conf: dict | None = None):
        self.master, self.conf = master, dict(conf or {})

    def run(self, aggregates, table, *, exact: bool) -> tuple[np.ndarray, int]:
        if not exact:
            raise ValueError("the Spark backend computes exact aggregates only (a plan on an integer path)")
        check_columns(aggregates, table.names)
        spark = spark_session(self.master, self.conf)
        view = f"{_VIEW}_{threading.get_ident()}"
        sql, params = query(aggregates, view)
        table.frame(spark).createOrReplaceTempView(view)
        try:
            row = spark.sql(sql, args={f"p{i}": v for i, v in enumerate(params)}).collect()[0]
        finally:
            spark.catalog.dropTempView(view)
        return values_of(tuple(row))
