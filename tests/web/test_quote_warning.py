"""A quote says, before purchase, when a level's answers are mostly noise: a statistic's 95% interval
(± its bound) is wider than the whole range its value can take (``market.catalog.accuracy.warning``).
The demo's penguin records: at ε 1 every decoded count of 344 records is within ±218, an interval
436 wide, more than the 0 to 344 a count can be."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from market.catalog import accuracy
from market.catalog.models import Listing

pytestmark = pytest.mark.django_db


def test_the_rule_asks_the_figures_only():
    count = {"name": "each decoded count", "error_bound": 218.4, "range": (0, 344)}
    assert accuracy.wide_bounds([count]) == [count]
    assert accuracy.warning([count], "1") == (
        "At ε 1 the answers are mostly noise: each decoded count is within ±218.4 but can only lie between 0 and 344. "
        "The error interval is wider than everything the value could be; a higher level narrows it.")
    assert not accuracy.wide_bounds([count | {"error_bound": 172}])  # 344 wide: as wide as the range, no wider
    assert not accuracy.wide_bounds([count | {"range": None}])  # a range nobody may know: no claim
    mean = {"name": "mean(age)", "error_bound": 60.0, "range": (0, 100), "too_few": False}
    assert accuracy.warning([mean, count | {"error_bound": 3}], "0.5").startswith("At ε 0.5 the answers are mostly noise: "
                                                                                  "mean(age) is within ±60")
    assert accuracy.warning([mean | {"error_bound": 40}], "2") is None


@pytest.fixture
def penguins():
    call_command("seed_demo")
    return Listing.objects.get(title__icontains="penguins", mechanism="bits")


def test_the_demos_penguin_records_warn_at_the_noisy_levels(penguins, api, client):
    buyer = get_user_model().objects.get(username="demo-buyer")
    quotes = {level: api(buyer).get(f"/api/v1/listings/{penguins.pk}/quote/", {"epsilon": level}).json()
              for level in ("1", "8")}
    low, high = quotes["1"], quotes["8"]
    assert low["statistics"][0]["error_bound"] > 344 / 2
    assert low["warning"].startswith("At ε 1 the answers are mostly noise: each decoded count is within ±")
    assert "between 0 and 344" in low["warning"]
    assert high["statistics"][0]["error_bound"] < 344 / 2 and high["warning"] is None
    client.force_login(buyer)
    page = client.get(f"/listings/{penguins.pk}/?epsilon=1").content.decode()
    assert 'id="quote-warning"' in page and "mostly noise" in page
    assert 'id="quote-warning"' not in client.get(f"/listings/{penguins.pk}/?epsilon=8").content.decode()
    ladder = page[page.index('id="ladder-table"'):page.index("</table>", page.index('id="ladder-table"'))]
    assert ladder.count("mostly noise</span>") >= 1  # ε 1 at least is marked on the ladder too
