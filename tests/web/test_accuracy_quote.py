"""The listing page before purchase: every statistic's 95% bound (on a listing made before size releases,
``legacy``, a mean's under a stated assumption of its cell's size, which the buyer sets; with a size
release, from its cell's noisy count: tests/marketplace/test_size_release.py), and the "buy by accuracy"
form that fills the same quote card."""

import re
from decimal import Decimal

import pytest

from market.catalog import accuracy
from market.core.levels import rounded_text
from market.catalog.selectors import listing_plan
from market.trading.services import purchase_quote
from market.web.charts import accuracy_curves, bounds_at, listing_charts
from tests.datasets import as_before_size_releases

pytestmark = pytest.mark.django_db


@pytest.fixture
def legacy(listing):
    return as_before_size_releases(listing)


def quote_rows(html: str) -> dict[str, str]:
    """The quote card's table: row header (tags stripped) -> the bound's cell."""
    table = re.search(r'<table id="quote-bounds">(.*?)</table>', html, re.S)
    assert table, "no quote table"
    rows = re.findall(r'<th scope="row">(.*?)</th><td class="num">(.*?)</td>', table.group(1), re.S)
    return {re.sub(r"<[^>]+>", "", name).strip(): value.strip() for name, value in rows}


def test_a_means_listing_shows_a_bound_per_mean_in_the_quote(client, legacy, buyer):
    listing = legacy
    client.force_login(buyer)
    page = client.get(f"/listings/{listing.pk}/?epsilon=1")
    assert page.status_code == 200
    rows = quote_rows(page.content.decode())
    mean = purchase_quote(buyer=buyer, listing=listing, epsilon="1").statistics[1]["error_bound"]
    assert rows == {
        "count": rows["count"],
        "mean(age) (if the cell holds 1,000 records)": f"± {rounded_text(mean, 2, up=True)}",  # a bound: rounded up
        "each bin of the age histogram": rows["each bin of the age histogram"],
    }
    # the buyer's own assumption
    fewer = quote_rows(client.get(f"/listings/{listing.pk}/?epsilon=1&records=250").content.decode())
    assert "mean(age) (if the cell holds 250 records)" in fewer
    assert float(fewer["mean(age) (if the cell holds 250 records)"].strip("± ")) > mean
    bad = client.get(f"/listings/{listing.pk}/?epsilon=1&records=0")
    assert bad.status_code == 400 and 'id="quote-bounds"' not in bad.content.decode()


def test_the_charts_and_the_next_step_include_the_mean(legacy):
    listing = legacy
    names = [c["name"] for c in accuracy_curves(listing)]
    assert names == ["count", "mean(age), if the cell holds 1,000 records", "each bin of the age histogram"]
    charts = listing_charts(listing)
    assert "mean(age), if the cell holds 1,000 records" in charts["curve_names"]
    assert all(len(row["bounds"]) == 3 for row in charts["rows"])
    at_one = bounds_at(listing, Decimal("1"))
    assert at_one[1]["bound"] == pytest.approx(
        accuracy.bounds_at(accuracy.statistic_curves(listing_plan(listing)), Decimal("1"))[1]["error_bound"])
    assert bounds_at(listing, Decimal("1"), records=100)[1]["name"] == "mean(age), if the cell holds 100 records"


def test_a_public_size_mean_stays_exact_and_the_page_asks_no_assumption(client, owner, buyer):
    from market.catalog.services import listing_create
    from tests.datasets import ready_dataset
    from tests.fixtures.market import make_csv

    dataset = ready_dataset(owner=owner, name="sized", data=make_csv(400), total_budget="100", relation="public_size")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Sized", ceiling="5",
                             price_per_epsilon="10", statistics=[{"kind": "mean", "column": "age", "lower": 0, "upper": 100}])
    [curve] = accuracy_curves(listing)
    assert curve["name"] == "mean(age)" and curve["assumes_records"] is None
    plan = listing_plan(listing)
    assert curve["bound"](Decimal("1")) == pytest.approx(min(100, plan.bound(0, Decimal("1")) / 400))
    client.force_login(buyer)
    html = client.get(f"/listings/{listing.pk}/?epsilon=1").content.decode()
    assert quote_rows(html) == {"mean(age)": f"± {curve['bound'](Decimal('1')):.2f}"}
    assert "Records in each mean" not in html  # nothing to assume


def test_buy_by_accuracy_fills_the_quote_card(client, legacy, buyer, fund):
    listing = legacy
    fund(buyer, 10_000)  # a wallet that can pay: the Confirm button
    client.force_login(buyer)
    page = client.get(f"/listings/{listing.pk}/", {"within": "1", "statistic": "mean(age)"})
    assert page.status_code == 200
    html = page.content.decode()
    expected = purchase_quote(buyer=buyer, listing=listing, target=[("mean(age)", Decimal("1"))])
    level = f"{expected.epsilon.normalize():f}"
    assert f"Quote: ε 0 → {level}" in html
    assert 'id="quote-target"' in html and "±1 for mean(age)" in html
    assert f'<input type="hidden" name="epsilon" value="{expected.epsilon}">' in html  # Confirm buys that level
    assert f"Confirm: pay {expected.price} credits" in html
    assert float(quote_rows(html)["mean(age) (if the cell holds 1,000 records)"].strip("± ")) <= 1
    # the level form starts from the level found, so it can be adjusted from there
    assert re.search(rf'name="epsilon" value="{re.escape(level)}"[^>]*id="id_epsilon"', html)
    # the assumption made in one form carries to the other
    assumed = client.get(f"/listings/{listing.pk}/", {"within": "1", "statistic": "mean(age)", "records": "4000"})
    assert re.search(r'name="records" value="4000"[^>]*id="id_records"', assumed.content.decode())
    # one bound for every statistic
    every = client.get(f"/listings/{listing.pk}/", {"within": "20", "statistic": ""}).content.decode()
    assert "±20 for every statistic" in every
    assert all(float(v.strip("± ")) <= 20 for v in quote_rows(every).values())


@pytest.mark.parametrize("query,message", [
    ({"within": "0.001", "statistic": "mean(age)"}, "Not reachable up to ε 5"),
    ({"within": "abc", "statistic": ""}, "Enter a number."),
    ({"within": "-1", "statistic": ""}, "An error bound is a positive number"),
    ({"within": "0", "statistic": ""}, "An error bound is a positive number"),
    ({"within": "1", "statistic": "median(age)"}, "Select a valid choice."),
    ({"within": "1", "statistic": "mean(age)", "records": "0"}, "greater than or equal to 1"),
])
def test_buy_by_accuracy_errors_are_shown(client, legacy, buyer, query, message):
    listing = legacy
    client.force_login(buyer)
    page = client.get(f"/listings/{listing.pk}/", query)
    assert page.status_code == 400
    html = page.content.decode()
    assert message in html and 'id="quote-bounds"' not in html


def test_a_visitor_who_is_not_signed_in_gets_a_quote_by_accuracy(client, listing):
    page = client.get(f"/listings/{listing.pk}/", {"within": "2", "statistic": "mean(age)"})
    html = page.content.decode()
    assert page.status_code == 200 and "±2 for mean(age)" in html and "Log in to buy" in html
