"""Buy by accuracy naming a statistic as a buyer sees it in a release: a target may name a
statistic as the quote does or by any label of its readings ("mean(age) | sex = female", a histogram's
bin, "median(age)"), exactly or in another case; an unknown name is a 400 listing a few valid ones."""

from decimal import Decimal

import numpy as np
import pytest

from market.catalog import accuracy, sizes
from market.catalog.services import listing_create
from market.catalog.selectors import listing_plan
from market.core.errors import InvalidInput
from market.trading.services import purchase_quote
from tests.datasets import as_before_size_releases, ready_dataset
from tests.fixtures.market import HIST_BINS
from tests.marketplace.test_api import assert_error

pytestmark = pytest.mark.django_db

STATISTICS = [
    {"kind": "count"},
    {"kind": "mean", "column": "age", "lower": 0, "upper": 100, "by": "sex", "categories": ["female", "male"],
     "categories_public": True},
    {"kind": "histogram", "column": "age", "bins": HIST_BINS},
    {"kind": "quantile", "column": "visits", "bins": [0, 2, 4, 8, 20], "quantiles": [0.5]},
]


def _csv(rows: int = 600) -> bytes:
    rng = np.random.default_rng(7)
    lines = ["age,visits,sex"] + [f"{a},{v},{s}" for a, v, s in zip(
        rng.integers(18, 90, rows), rng.poisson(3.0, rows), rng.choice(["female", "male"], rows))]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def grouped(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=_csv(), total_budget="100")
    return listing_create(owner=owner, dataset_id=dataset.public_id, title="Visits by sex", statistics=STATISTICS,
                          ceiling="5", price_per_epsilon="10.00")


@pytest.fixture
def legacy(grouped):
    """Made before size releases: the grouped mean's quote is "mean of age (each group)" under an assumption."""
    return as_before_size_releases(grouped)


def _curves(listing):
    return accuracy.statistic_curves(listing_plan(listing), size=sizes.release_of(listing))


def _level(listing, buyer, name, bound="30"):
    return purchase_quote(buyer=buyer, listing=listing, target=[(name, Decimal(bound))]).epsilon


def test_every_label_a_release_shows_names_its_statistic(legacy, buyer):
    curves = _curves(legacy)
    by_label = {label: c["name"] for c in curves for label in c["labels"]}
    # the readings' labels, as a release gives them: the mean's read as a mean, the quantile's own
    assert by_label["mean(age) | sex = female"] == "mean of age (each group)"
    assert by_label["median(visits)"] == "rank error of each quantile of visits (records)"
    bins = [label for label, name in by_label.items() if name == "each bin of the age histogram"]
    assert len(bins) == len(HIST_BINS) - 1
    for label, name, bound in [("mean(age) | sex = female", "mean of age (each group)", "5"),
                               (bins[3], "each bin of the age histogram", "30"),
                               ("median(visits)", "rank error of each quantile of visits (records)", "60")]:
        assert accuracy.target_name(curves, label) == name
        assert accuracy.target_name(curves, label.upper()) == name
        assert _level(legacy, buyer, label.upper(), bound) == _level(legacy, buyer, name, bound)
    # the labels of a quote's per-value accuracy too: a mean's sum and count
    assert accuracy.target_name(curves, "sum(age) | sex = male") == "mean of age (each group)"
    assert accuracy.target_name(curves, "Count") == "count"
    assert accuracy.target_name(curves, "mean(income)") is None


def test_a_quote_names_the_statistic_it_met(api, legacy, buyer):
    answer = api(buyer).get(f"/api/v1/listings/{legacy.pk}/quote/", {"target": "MEAN(age) | sex = female:5"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["target"] == [{"name": "mean of age (each group)", "error_bound": "5"}]


def test_with_a_size_release_a_cell_is_named_by_its_label(grouped, buyer):
    listing = grouped
    names = [c["name"] for c in _curves(listing)]
    assert "mean(age) | sex = female" in names
    assert accuracy.target_name(_curves(listing), "sum(age) | sex = female") == "mean(age) | sex = female"
    assert _level(listing, buyer, "Mean(Age) | Sex = Female", "5") == _level(listing, buyer, "mean(age) | sex = female", "5")


def test_an_unknown_target_lists_a_few_valid_names(api, legacy, buyer):
    with pytest.raises(InvalidInput, match=r"no statistic named 'median\(age\)' \(names such as: count; mean of age \(each group\)"):
        _level(legacy, buyer, "median(age)")
    error = assert_error(api(buyer).get(f"/api/v1/listings/{legacy.pk}/quote/?target=median(age):1"), 400)
    (message,) = error["fields"]["target"]
    assert message.startswith("No statistic named 'median(age)'. Names such as: count; mean of age (each group); ")
    assert message.count(";") <= 8
