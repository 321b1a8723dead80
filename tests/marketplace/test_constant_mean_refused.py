"""Issue 28, point 5: a mean (or sum) whose two bounds round to one step of its grid, on a dataset
whose number of records is public, cannot move between neighbours (its sensitivity is 0). Laying it
out divided by zero: a 500 from the API and the listing builder. It is now refused like any other
bad spec: a 400 in the one error shape from the API, an error at the grid input of the builder,
with a sentence saying what is wrong and what to do, and nothing is created."""

import html
import re

import pytest
from django.urls import reverse

from market.catalog.models import Listing
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv
from tests.marketplace.test_api import assert_error

pytestmark = pytest.mark.django_db

MEAN = {"kind": "mean", "column": "age", "lower": -10, "upper": -9, "grid": 5}
SAYS = "grid 5 rounds both lower -10 and upper -9 to -10"
DOES = "use a grid finer than 1 (the distance between the bounds) or wider bounds"


@pytest.fixture
def dataset(owner):
    return ready_dataset(owner=owner, name="visits", data=make_csv(50), relation="public_size", total_budget="5")


def test_the_api_refuses_it_with_a_400_that_says_what_to_do(api, owner, dataset):
    base = {"dataset": dataset.public_id, "title": "t", "ceiling": "2", "price_per_epsilon": "1"}
    answer = api(owner).post("/api/v1/listings/", {**base, "statistics": [MEAN]}, format="json")
    assert_error(answer, 400, field="statistics")
    message = answer.json()["error"]["fields"]["statistics"][0]
    assert message.startswith(f"statistic 1 (mean): {SAYS}") and DOES in message, message
    # as the sentence says: a finer grid is laid out and listed
    finer = api(owner).post("/api/v1/listings/", {**base, "statistics": [{**MEAN, "grid": "0.5"}]}, format="json")
    assert finer.status_code == 201, finer.content
    assert Listing.objects.count() == 1


def test_the_builder_shows_it_at_the_grid_input(client, owner, dataset):
    client.force_login(owner)
    data = {"dataset": dataset.public_id, "title": "Means", "description": "", "ceiling": "2",
            "price_per_epsilon": "3.00", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0",
            "stats-0-kind": "mean", "stats-0-column": "age", "stats-0-lower": "-10", "stats-0-upper": "-9",
            "stats-0-grid": "5"}
    answer = client.post(reverse("web:owner-listing-new"), data)
    assert answer.status_code == 200
    page = html.unescape(answer.content.decode())
    found = re.search(r'<ul class="errorlist" id="id_stats-0-grid_error">(.*?)</ul>', page, re.DOTALL)
    assert found and SAYS in found.group(1) and DOES in found.group(1)
    assert not Listing.objects.exists()
