"""A statistic off its schema is refused in words, through the API: which statistic (its number and
kind), which field and why, never the schema's "is not valid under any of the given schemas" over
the kinds, and never a JSON object quoted back."""

import pytest

from market.api.serializers.statistic_errors import statistics_errors
from market.catalog.spec import OFFERED_KINDS
from tests.marketplace.test_api import assert_error

pytestmark = pytest.mark.django_db

COUNT = {"kind": "count"}
MEAN = {"kind": "mean", "column": "age", "lower": 0, "upper": 100}

#: (statistics, a message the answer holds word for word)
BAD = [
    ([{"kind": "mean", "column": "age"}],
     "statistic 1 (mean): lower and upper are required: the bounds each value is clamped to"),
    ([COUNT, {"kind": "mean", "column": "age", "lower": 0}],
     "statistic 2 (mean): upper is required: the bounds each value is clamped to"),
    ([{"kind": "count", "by": "sex", "categories": [1, "male"], "categories_public": True}],
     "statistic 1 (count): categories[1] must be a text or true/false, got 1"),
    ([{"kind": "median", "column": "age"}],
     "statistic 1: unknown kind 'median' (expected count, sum, mean, histogram, table, quantile, centroid or synthetic)"),
    ([{"column": "age"}], "statistic 1: kind is required (count, sum, mean, histogram, table, quantile, centroid or synthetic)"),
    ([COUNT, 3], "statistic 2 must be an object with a kind (count, sum, mean, histogram, table, quantile, centroid or synthetic), got 3"),
    ([{**MEAN, "lower": "zero"}], "statistic 1 (mean): lower must be a number, got 'zero'"),
    ([{**MEAN, "colour": "red"}], "statistic 1 (mean): unknown field 'colour' (it takes column, lower, upper, grid"),
    ([{**MEAN, "grid": "fine"}], "statistic 1 (mean): grid must be a number or a decimal number such as 0.01, got 'fine'"),
    ([{"kind": "histogram", "column": "age"}],
     "statistic 1 (histogram): bins is required: the bin edges, in increasing order, such as 0, 18, 65, 100"),
    ([{"kind": "histogram", "column": "joined", "bin": "week", "from": "2024", "to": "2025"}],
     "statistic 1 (histogram): bin must be one of 'month' or 'year', got 'week'"),
    ([{"kind": "histogram", "column": "age", "bins": [0]}],
     "statistic 1 (histogram): bins must list at least 2 values"),
    ([{"kind": "count", "where": [{"column": "sex", "op": "like", "value": "f"}]}],
     "statistic 1 (count): where[1].op must be one of '=', 'in', '<', '<=', '>', '>=', 'between' or 'is missing', got 'like'"),
    ([{"kind": "count", "where": [{"column": "sex"}]}],
     "statistic 1 (count): where[1]: op is required: the condition's operator"),
    ([{"kind": "count", "where": {"column": "sex"}}], "statistic 1 (count): where must be a list, got an object"),
    ([{"kind": "count", "where": [{"column": "sex", "op": "=", "value": ["f"]}]}],
     "statistic 1 (count): where[1].value must be a number, a text or true/false, got a list"),
    ([{"kind": "table", "rows": "sex"}],
     "statistic 1 (table): columns is required: the categorical column of the table's columns"),
    ([{"kind": "quantile", "column": "age", "bins": [0, 100], "quantiles": [2]}],
     "statistic 1 (quantile): quantiles[1] must be below 1, got 2"),
    ([{"kind": "quantile", "column": "age", "bins": [0, 100], "quantiles": [0]}],
     "statistic 1 (quantile): quantiles[1] must be above 0, got 0"),
    ([], "the list of statistics is empty"),
    ([COUNT] * 21, "at most 20 statistics are allowed, got 21"),
    ({"kind": "count"}, "the statistics must be a list of statistics, each an object with a kind, got an object"),
]

JARGON = ("is not valid under any of the given schemas", "{", "}", "oneOf", "additionalProperties", "required property")


@pytest.mark.parametrize("statistics, message", BAD)
def test_a_bad_statistic_is_refused_in_words(api, owner, statistics, message):
    body = {"dataset": "ds_none", "title": "t", "statistics": statistics, "ceiling": "2", "price_per_epsilon": "1"}
    error = assert_error(api(owner).post("/api/v1/listings/", body, format="json"), 400, field="statistics")
    messages = error["fields"]["statistics"]
    assert any(m.startswith(message) for m in messages), messages
    for text in messages:
        assert not any(word in text for word in JARGON), text


def test_every_fault_is_named_and_a_good_statistic_is_not(api, owner):
    errors = statistics_errors([COUNT, {**MEAN, "lower": "a", "colour": 1}, MEAN])
    assert errors == [
        "statistic 2 (mean): unknown field 'colour' (it takes column, lower, upper, grid, where, by, categories, "
        "categories_public, bin, from or to)",
        "statistic 2 (mean): lower must be a number, got 'a'",
    ]
    assert statistics_errors([COUNT, MEAN]) == []


def test_the_unknown_kind_lists_every_kind_offered():
    (message,) = statistics_errors([{"kind": "nope"}])
    assert all(name in message for name in OFFERED_KINDS)
