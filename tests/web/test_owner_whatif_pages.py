"""The dataset's budget page shows the owner's what-ifs, without JavaScript: the composition of its
listings under three accountings (a GET form) and a query's sampled sensitivity (a POST form).
Neither can make a listing: no listing spec takes a sensitivity, on the page or in the API."""

import html
import re

import pytest
from django.urls import reverse

from market.catalog.spec.columns import columns_from
from market.catalog.models import Dataset, Listing
from market.catalog.spec import LATTICE, build_plan
from tests.marketplace.test_whatif import composed, float_made, regression, released  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def text(answer) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", answer.content.decode())))


def test_composition_on_the_budget_page(client, owner, composed):  # noqa: F811
    client.force_login(owner)
    address = reverse("web:owner-dataset-budget", args=[composed["dataset"].public_id])
    page = text(client.get(address))
    assert "How the listings add up: a what-if" in page
    assert "Basic (enforced)" in page and "ε 3.75" in page
    assert "the marketplace enforces the basic sum against the budget" in page
    assert "δ = 1e-06" in page
    assert "none: exact integer noise" in page and "none: noise on the whole vector" in page
    assert "For these listings the sum is the smallest figure" in page  # few listings at large levels
    assert "chance 0.2" in page  # the scalar float listing's credit, at the default finer level 0.1
    page = text(client.get(address, {"delta": "1e-5", "eps": "0.2"}))
    assert "δ = 1e-05" in page and "finer level ε 0.2" in page


@pytest.mark.parametrize("query", [{"delta": "0"}, {"delta": "1"}, {"delta": "x"}, {"eps": "-1"}, {"eps": "nan"}])
def test_composition_bad_input_is_a_400_with_the_reason(client, owner, composed, query):  # noqa: F811
    client.force_login(owner)
    before = Dataset.objects.values_list("total_budget", flat=True).get(pk=composed["dataset"].pk)
    answer = client.get(reverse("web:owner-dataset-budget", args=[composed["dataset"].public_id]), query)
    assert answer.status_code == 400
    assert "strictly between 0 and 1" in text(answer) or "above 0" in text(answer)
    assert Dataset.objects.values_list("total_budget", flat=True).get(pk=composed["dataset"].pk) == before


def test_sampled_sensitivity_on_the_budget_page(client, owner, regression):  # noqa: F811
    client.force_login(owner)
    address = reverse("web:owner-dataset-sampled-sensitivity", args=[regression.public_id])
    answer = client.post(address, {"kind": "ridge", "target": "y", "features": ["x1", "x2"], "lam": "1",
                                   "gamma2": "0.9", "pairs": "100", "subsample": "200"})
    assert answer.status_code == 200
    page = text(answer)
    assert "Sampled sensitivity" in page and "400, of which 40 dropped" in page and "200 sampled" in page
    assert "it is not differential privacy" in page and "never used to price, check or release anything" in page
    assert "one replaced record instead" in page  # the dataset's size is private
    answer = client.post(address, {"kind": "ridge", "target": "y", "features": ["y"], "lam": "0", "gamma2": "2",
                                   "pairs": "100000", "subsample": "200"})
    assert answer.status_code == 400
    page = text(answer)
    assert "The target cannot also be a feature" in page and "From 1 to 500" in page
    assert "Empirical risk" not in page


def test_no_listing_takes_a_sensitivity_on_the_page(client, owner, regression):  # noqa: F811
    """The listing form has no sensitivity input: a posted one is not read."""
    client.force_login(owner)
    answer = client.post(reverse("web:owner-listing-new"), {
        "dataset": regression.public_id, "title": "Forged", "ceiling": "1", "price_kind": "linear",
        "price_per_epsilon": "1", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0",
        "stats-0-kind": "mean", "stats-0-column": "x1", "stats-0-lower": "-1", "stats-0-upper": "1",
        "stats-0-sensitivity": "0.0001", "sensitivity": "0.0001", "sampled_sensitivity": "0.0001",
    })
    # made as the form describes, with the sensitivity its bounds give, whatever was posted beside them
    assert answer.status_code == 302
    made = Listing.objects.get(dataset=regression)
    plan = build_plan([{"kind": "mean", "column": "x1", "lower": -1, "upper": 1}], columns_from(regression.columns),
                      neighbours=regression.neighbours(), mechanism=LATTICE)
    assert made.sensitivity == plan.sensitivity != 0.0001


@pytest.mark.parametrize("spec", [
    {"kind": "mean", "column": "x1", "lower": -1, "upper": 1, "sensitivity": 0.0001},
    {"kind": "mean", "column": "x1", "lower": -1, "upper": 1, "sampled_sensitivity": 0.0001},
])
def test_no_listing_takes_a_sensitivity_in_the_api(api, owner, regression, spec):  # noqa: F811
    for body in ({"dataset": regression.public_id, "title": "Forged", "statistics": [spec], "ceiling": "1",
                  "price_per_epsilon": "1.00"},
                 {"dataset": regression.public_id, "title": "Forged", "statistics": [{"kind": "count"}], "ceiling": "1",
                  "price_per_epsilon": "1.00", **{k: v for k, v in spec.items() if "sensitivity" in k}}):
        answer = api(owner).post("/api/v1/listings/", body, format="json")
        assert 400 <= answer.status_code < 500, answer.content
        assert set(answer.json()["error"]) == {"status", "code", "message", "fields"}
    assert not Listing.objects.filter(dataset=regression).exists()
