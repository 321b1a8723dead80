"""Which compute backend computes a dataset (``market.catalog.backends``) and the Spark dialect's text,
without Spark (the answers themselves are compared in tests/spark, the services tier)."""

from types import SimpleNamespace

import pytest
from django.test import override_settings

from market.catalog import backends
from market.catalog.compute import Aggregate, Condition
from market.catalog.spark import SPARK, query


@pytest.mark.parametrize("chosen,from_rows,rows,expected", [
    ("duckdb", None, 10**9, "duckdb"),
    ("spark", None, 10, "spark"),
    ("duckdb", 1_000_000, 999_999, "duckdb"),
    ("duckdb", 1_000_000, 1_000_000, "spark"),
    ("duckdb", 1_000_000, None, "duckdb"),  # not processed yet: no size, the default
])
def test_the_deployment_or_the_datasets_size_chooses_the_backend(chosen, from_rows, rows, expected):
    with override_settings(COMPUTE_BACKEND=chosen, COMPUTE_SPARK_FROM_ROWS=from_rows):
        assert backends.backend_name_for(SimpleNamespace(row_count=rows)) == expected
        assert backends.backend_for(SimpleNamespace(row_count=rows)).name == expected


@pytest.mark.parametrize("chosen,rows,inline_rows,later", [
    ("duckdb", 1_000, 1_000, False),
    ("duckdb", 1_001, 1_000, True),  # a large table: a task computes the listing, not the request
    ("spark", 10, 1_000, True),  # a Spark job never runs in a request, however small the table
])
def test_large_tables_and_spark_are_listed_by_a_task(chosen, rows, inline_rows, later):
    with override_settings(COMPUTE_BACKEND=chosen, COMPUTE_SPARK_FROM_ROWS=None, LISTING_PREPARE_INLINE_ROWS=inline_rows):
        assert backends.prepared_later(SimpleNamespace(row_count=rows)) is later


def test_the_spark_query_quotes_names_binds_values_and_refuses_float_sums():
    odd = 'we`ird "name'
    count = Aggregate("count", where=(Condition(odd, "in", ("a'); DROP TABLE x; --", "b")),))
    sql, params = query([count], "records_1")
    assert "`we``ird \"name`" in sql and "DROP TABLE" not in sql
    assert params == ["a'); DROP TABLE x; --", "b"] and ":p0" in sql and ":p1" in sql
    with pytest.raises(ValueError, match="exact aggregates only"):
        query([Aggregate("sum", column="x", lower=0.0, upper=1.0)], "records_1")
    assert SPARK.quote("a") == "`a`"
