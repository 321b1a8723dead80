"""The Spark backend computes exactly what DuckDB computes (issue 35): for every kind a listing can
sell and its options (filters, group-by, declared categories, missing values, clamping, grids, date
bins, quantiles, the centroid's grid, synthetic tables), under both relations, on the same Parquet
file; and from the file as the product stores it, sealed in an S3-compatible store served on
loopback (moto), read by the executors a row group at a time.

Spark runs in local mode (``local[2]``): the same planner, codegen and executors as a cluster."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import palmerpenguins
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.listing_scale import COLUMNS, SPEC, generate
from market.catalog.compute import ParquetTable, compute
from market.catalog.spark import ParquetFiles, SealedParquet, SparkBackend
from market.catalog.spec import Neighbours, build_plan
from market.catalog.spec.columns import Column
from market.core.crypto import Keyring

ROWS = 30_000
EXTRA = [
    {"kind": "quantile", "column": "age", "bins": [18, 30, 45, 60, 90], "quantiles": [0.25, 0.5, 0.9]},
    {"kind": "histogram", "column": "joined", "bin": "year", "from": "2014", "to": "2024"},
    {"kind": "count", "where": [{"column": "region", "op": "in", "values": ["east", "west", "islands"]},
                                {"column": "joined", "op": "<", "value": "2019-03-15"}]},
    {"kind": "sum", "column": "delay", "lower": -10.5, "upper": 90.25, "grid": "0.25",
     "where": [{"column": "status", "op": "is missing"}]},
]
ALONE = [
    [{"kind": "synthetic", "columns": [{"column": "region", "categories": ["north", "south", "east"]},
                                       {"column": "age", "bins": [18, 30, 50, 70]},
                                       {"column": "device", "categories": ["phone", "tablet"]},
                                       {"column": "plan", "categories": ["free", "pro"]}]}],
    [{"kind": "centroid", "columns": ["weight", "balance"], "center": [60, 0], "radius": 3000}],
]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spark") / "records.parquet"
    generate(path, ROWS)
    return path


@pytest.fixture(scope="module")
def spark():
    from market.catalog.spark import spark_stop

    yield SparkBackend(master="local[2]")
    spark_stop()


def _plans():
    columns = [Column(*c) for c in COLUMNS]
    for relation in (Neighbours(max_rows=10 * ROWS), Neighbours("public_size", ROWS)):
        for mechanism, spec in [("lattice", SPEC[:10]), ("lattice", SPEC[10:] + EXTRA), ("skellam", SPEC[:6]),
                                ("lattice", ALONE[0]), ("skellam", ALONE[0]), ("skellam", ALONE[1])]:
            if relation.public and any(s["kind"] == "count" and not s.get("where") and not s.get("by") for s in spec):
                continue  # the number of records is public: not sold
            if not relation.public and spec[0]["kind"] == "centroid":
                continue  # a centroid divides by the number of records: sold only when it is public
            yield relation, mechanism, spec, build_plan(spec, columns, neighbours=relation, mechanism=mechanism)


def test_every_kind_and_option_gives_the_same_exact_aggregates(data, spark):
    checked = set()
    for relation, mechanism, spec, plan in _plans():
        expected = compute(plan, ParquetTable(data))
        found = compute(plan, ParquetFiles((str(data),)), backend=spark)
        assert found.dtype == np.int64 and expected.dtype == np.int64
        assert np.array_equal(found, expected), (relation, mechanism, [s["kind"] for s in spec])
        assert expected.any()  # not a table of zeros
        checked |= {s["kind"] for s in spec}
    assert checked == {"count", "sum", "mean", "histogram", "table", "quantile", "centroid", "synthetic"}


def test_a_real_table_with_missing_values_gives_the_same_tables(tmp_path, spark):
    df = pd.read_csv(Path(palmerpenguins.__file__).parent / "data" / "penguins.csv")
    path = tmp_path / "penguins.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    columns = [Column("species", "categorical"), Column("island", "categorical"),
               Column("bill_length_mm", "decimal", "category"), Column("body_mass_g", "integer", "category"),
               Column("sex", "categorical", "category"), Column("year", "integer")]
    spec = [{"kind": "synthetic", "columns": [
        {"column": "species", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
        {"column": "bill_length_mm", "bins": [35, 40, 45, 50]},
        {"column": "body_mass_g", "bins": [3000, 4000, 5000, 6000]},
        {"column": "sex", "categories": ["female", "male"]}]}]
    plan = build_plan(spec, columns, neighbours=Neighbours("public_size", 344), mechanism="lattice")
    expected = compute(plan, ParquetTable(path))
    assert np.array_equal(compute(plan, ParquetFiles((str(path),)), backend=spark), expected)


def test_a_deliberate_difference_is_caught(data, spark):
    """The comparison can fail: each record's grid steps off by one on Spark change the answer."""
    from market.catalog import spark as module

    relation, mechanism, spec, plan = next(p for p in _plans() if any(s.get("grid") for s in p[2]))
    expected = compute(plan, ParquetTable(data))
    real = module.SparkDialect.wide_int
    try:
        module.SparkDialect.wide_int = "BIGINT) + CAST(1 AS BIGINT"  # one step more per record in every grid sum
        found = compute(plan, ParquetFiles((str(data),)), backend=spark)
    finally:
        module.SparkDialect.wide_int = real
    assert not np.array_equal(found, expected)


def test_the_sealed_file_in_an_s3_store_is_read_by_the_executors(data, spark):
    """The typed file sealed whole (1 MB chunks, as the product stores it) in a bucket of a moto S3
    server on loopback; the executors fetch by range and decrypt in memory: the same answers."""
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        store = {"kind": "s3", "bucket": "lake", "key": "datasets/records.parquet.sealed", "endpoint_url": endpoint,
                 "region_name": "us-east-1", "access_key": "test", "secret_key": "test"}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="test", aws_secret_access_key="test")
        client.create_bucket(Bucket="lake")
        ring = Keyring.from_config("", secret="spark-test")
        sealed = io.BytesIO()
        with open(data, "rb") as src:
            ring.seal_stream(src, sealed, context=b"gradual/dataset-file/records")
        client.put_object(Bucket="lake", Key=store["key"], Body=sealed.getvalue())
        source = SealedParquet(store=store, context=b"gradual/dataset-file/records", key=ring.keys[0])
        assert pq.ParquetFile(data).metadata.num_row_groups >= 1
        for relation, mechanism, spec, plan in list(_plans())[:3]:
            assert np.array_equal(compute(plan, source, backend=spark), compute(plan, ParquetTable(data)))
        wrong = SealedParquet(store=store, context=b"gradual/dataset-file/other", key=ring.keys[0])
        with pytest.raises(Exception, match="does not open"):
            compute(plan, wrong, backend=spark)
    finally:
        server.stop()
