"""A listing computed by Spark through the product (issue 35): the deployment stores datasets sealed in
an S3-compatible store (moto on loopback) and sends datasets from a size up to Spark; the listing's
answer, computed by the listing's preparation task, is the one DuckDB computes on the same dataset in
the owner's request, and nothing decrypted is written to disk."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from market.catalog import backends
from market.catalog.models import Listing
from market.catalog.services import listing_create, listing_prepare, preparation
from tests.datasets import ready_dataset

pytestmark = pytest.mark.django_db

CSV = b"region,age,member,joined\n" + b"".join(
    f"{['north', 'south', 'east', ''][i % 4]},{18 + (i * 7) % 70},{['true', 'false', ''][i % 3]},"
    f"20{10 + i % 12}-0{1 + i % 9}-1{i % 10}\n".encode() for i in range(2_000))
SPEC = [
    {"kind": "count", "by": "region", "categories": ["north", "south", "east"], "categories_public": True},
    {"kind": "sum", "column": "age", "lower": 18, "upper": 90, "where": [{"column": "member", "op": "=", "value": True}]},
    {"kind": "histogram", "column": "joined", "bin": "year", "from": "2010", "to": "2021"},
    {"kind": "histogram", "column": "age", "bins": [18, 30, 50, 90]},
]


@pytest.fixture
def s3_storage(settings):
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test",
                 aws_secret_access_key="test").create_bucket(Bucket="gradual")
    storages = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": "gradual", "location": "datasets", "endpoint_url": endpoint, "region_name": "us-east-1",
        "access_key": "test", "secret_key": "test", "default_acl": "private", "file_overwrite": False}}}
    with override_settings(STORAGES=storages):
        yield endpoint
    server.stop()


def test_a_large_dataset_is_computed_by_spark_from_the_sealed_file_in_the_store(owner, s3_storage, monkeypatch, tmp_path):
    from market.catalog.spark import spark_stop

    dataset = ready_dataset(owner=owner, name="people", data=CSV, total_budget="10")
    assert dataset.typed_file and dataset.row_count == 2_000
    with override_settings(COMPUTE_SPARK_FROM_ROWS=2_000):
        assert backends.backend_name_for(dataset) == "spark"
        monkeypatch.setenv("TMPDIR", str(tmp_path))  # nothing decrypted may land here
        monkeypatch.setattr(preparation, "queue", lambda *, listing_pk: None)  # run below, as the worker would
        on_spark = listing_create(owner=owner, dataset_id=dataset.public_id, title="On Spark", statistics=SPEC,
                                  ceiling="1", price_per_epsilon="1")
        assert on_spark.status == "preparing"  # a Spark job never runs in the owner's request
        try:
            assert listing_prepare(listing_id=on_spark.pk) == "ready"
        finally:
            spark_stop()
    with override_settings(COMPUTE_SPARK_FROM_ROWS=2_001):
        assert backends.backend_name_for(dataset) == "duckdb"
        on_duckdb = listing_create(owner=owner, dataset_id=dataset.public_id, title="On DuckDB", statistics=SPEC,
                                   ceiling="1", price_per_epsilon="1")
    spark_answer = Listing.objects.get(pk=on_spark.pk).true_answer()
    assert np.array_equal(spark_answer, Listing.objects.get(pk=on_duckdb.pk).true_answer())
    assert spark_answer.sum() > 0
    assert not any(p.suffix == ".parquet" for p in tmp_path.rglob("*"))
