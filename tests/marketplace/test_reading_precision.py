"""A release's readings at their meaningful precision: on a lattice listing a value's grid, otherwise
two significant digits of its bound; the bound rounded UP at that precision; the exact figures kept
(``value_exact``, ``error_bound_exact``); the pages show the same texts; a mean's noise scale is the
mean's (its sum's over the count it divides by)."""

import json
import math
import re
from decimal import Decimal

import numpy as np
import pytest
from django.urls import reverse

from market.catalog.spec import build_plan, present
from market.core.levels import reading_figures, reading_places
from market.trading.selectors import release_readings
from market.trading.services import purchase_create
from tests.fixtures.market import HIST_BINS

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("value, bound, grid, shown, places", [
    (68.02593047490255, 9.038779608650874, None, ("68.0", "9.1"), 1),   # the figures
    (68.05, 9.0, None, ("68.0", "9.0"), 1),                              # a bound on its step stays
    (0.123456, 0.0123, None, ("0.123", "0.013"), 3),
    (56789.3, 1234.5, None, ("56800", "1300"), -2),                      # hundreds: a whole number
    (-0.0001, 0.0123, None, ("0.000", "0.013"), 3),                      # no "-0"
    (0.5, 9.95, None, ("0.5", "10.0"), 1),                               # up past a power of ten
    (1234, 3.2, Decimal("1"), ("1234", "4"), 0),                         # a count: its grid of 1
    (1234.56, 45.301, Decimal("0.01"), ("1234.56", "45.31"), 2),         # a sum on a grid of 0.01
    (1235, 45.301, Decimal("5"), ("1235", "46"), 0),
])
def test_a_value_at_its_precision_and_its_bound_rounded_up(value, bound, grid, shown, places):
    figures = reading_figures(value, bound, grid=grid)
    assert (figures["value_text"], figures["bound_text"]) == shown and figures["places"] == places
    assert Decimal(figures["bound_text"]) >= Decimal(repr(bound))  # never understated
    assert figures["error_bound"] == float(shown[1]) and figures["value"] == float(shown[0])
    assert type(figures["value"]) is (int if places <= 0 else float)


def test_with_nothing_to_round_by_the_figures_are_exact():
    assert reading_places(0.0) is None and reading_places(float("nan")) is None
    assert reading_figures(5, 0.0) == {"value": 5, "error_bound": 0.0, "value_text": "5", "bound_text": "0.0",
                                       "places": None}


def test_a_means_noise_scale_is_the_means():
    plan = build_plan([{"kind": "count"}, {"kind": "mean", "column": "age", "lower": 0, "upper": 100}], ["age"])
    assert plan.labels == ("count", "sum(age)")  # a private size: the mean divides by the released count
    readings = present(plan, np.array([1000.0, 40_000.0]), np.array([2.0, 200.0]))
    assert readings[1]["label"] == "mean(age)" and readings[1]["noise_scale"] == 200.0 / 1000.0
    # a released count of 0.5 or less: the midpoint, and the sum's scale over 1
    assert present(plan, np.array([0.2, 10.0]), np.array([2.0, 200.0]))[1]["noise_scale"] == 200.0


@pytest.fixture
def released(listing, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    purchase.refresh_from_db()
    return purchase


def test_a_release_reads_at_its_precision_with_the_exact_figures_beside(api, released, buyer):
    body = api(buyer).get(f"/api/v1/releases/{released.release.public_id}/").json()
    values = body["values"]
    assert [v["label"] for v in values][:2] == ["count", "mean(age)"] and len(values) == 2 + len(HIST_BINS) - 1
    count, mean = values[0], values[1]
    # the count: a lattice value on a grid of 1, its bound rounded up to a whole number
    assert type(count["value"]) is int and count["value"] == count["value_exact"]
    assert count["error_bound"] == math.ceil(count["error_bound_exact"]) and type(count["error_bound"]) is int
    # the mean: two significant digits of its bound; the bound never rounded down
    places = 1 - math.floor(math.log10(mean["error_bound_exact"]))
    assert mean["error_bound"] >= mean["error_bound_exact"]
    assert mean["error_bound"] == pytest.approx(math.ceil(mean["error_bound_exact"] * 10**places) / 10**places)
    assert mean["value"] == pytest.approx(round(mean["value_exact"], places))
    assert mean["value"] != mean["value_exact"]  # the exact figure has more digits than it means
    for v in values:
        assert v["error_bound"] >= v["error_bound_exact"]


def test_the_pages_show_the_same_figures(client, released, buyer):
    readings = release_readings(released.release)
    client.force_login(buyer)
    status = client.get(reverse("web:purchase", args=[released.pk])).content.decode()
    rows = re.findall(r'<td class="num">([^<]*)</td><td class="num">± ([^<]*)</td></tr>', status)
    assert rows == [(r["value_text"], r["bound_text"]) for r in readings]
    library = client.get(reverse("web:library")).content.decode()
    for r in readings[:3]:
        assert f'<td class="num">{r["value_text"]}</td><td class="num">{r["bound_text"]}</td>' in library


def test_the_downloads_keep_the_exact_figures(client, released, buyer):
    readings = release_readings(released.release)
    client.force_login(buyer)
    lines = client.get(f"/library/releases/{released.release.public_id}.csv").content.decode().strip().splitlines()
    assert lines[2] == f"mean(age),mean,{readings[1]['value_exact']!r},{readings[1]['noise_scale']!r}," \
                       f"{readings[1]['error_bound_exact']!r}"
    as_json = json.loads(client.get(f"/library/releases/{released.release.public_id}.json").content)
    mean = as_json["values"][1]
    assert (mean["value"], mean["value_exact"]) == (readings[1]["value"], readings[1]["value_exact"])
