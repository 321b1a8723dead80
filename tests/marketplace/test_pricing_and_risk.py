"""Price curves in purchases and the API; privacy at risk on releases and the owner's dashboard."""

from tests.datasets import ready_dataset
import math
from decimal import Decimal

import pytest

from market.catalog.pricing import curve_of
from market.ledger.selectors import wallet_balance
from market.trading.models import Purchase
from market.trading.services import purchase_create

pytestmark = pytest.mark.django_db

# section 5.3 of the privacy-at-risk paper: 100 people, E = 5500 each. The count is private here,
# so the model is stated for everyone together (E = 100 x 5500), which gives the paper's budgets.
PAPER = {"E": "550000", "rate": "1", "E_min": "0"}


@pytest.fixture
def count_listing(owner):
    """A count (k = 1) priced from the paper's compensation model, margin 1."""
    from market.catalog.services import listing_create

    from tests.fixtures.market import make_csv

    dataset = ready_dataset(owner=owner, name="staff", data=make_csv(100), total_budget="100")
    return listing_create(
        owner=owner,
        dataset_id=dataset.public_id,
        title="Obesity count",
        statistics=[{"kind": "count"}],
        ceiling="1",
        price_curve={"kind": "compensation", "margin": "1"},
        compensation=PAPER,
    )


def buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    purchase.refresh_from_db()
    return purchase


def test_steps_on_a_power_curve_cost_exactly_the_direct_price(
    make_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    from market.catalog.services import listing_create

    from tests.fixtures.market import STATISTICS, make_csv

    owner = make_listing().dataset.owner
    dataset = ready_dataset(owner=owner, name="v2", data=make_csv(50), total_budget="100")
    listing = listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Power", statistics=STATISTICS, ceiling="5",
        price_curve={"kind": "power", "c": "7.00", "p": "1.5"},
    )
    fund(buyer, 1000)
    for eps in ("0.3", "0.7", "1.1", "2.9", "4.3"):
        buy(buyer, listing, eps, django_capture_on_commit_callbacks)
    paid = sum(Purchase.objects.filter(buyer=buyer).values_list("price", flat=True))
    assert paid == curve_of(listing).price(Decimal("4.3")) == Decimal("62.42")  # 7 * 4.3^1.5 = 62.418
    assert wallet_balance(user=buyer) == Decimal("1000") - paid


def test_the_papers_example_on_a_release_and_the_dashboard(
    count_listing, buyer, owner, fund, client, api, eager_celery, django_capture_on_commit_callbacks
):
    # price of the path up to 0.5: the whole compensation budget 100 * 5500 e^-2
    assert curve_of(count_listing).price(Decimal("0.5")) == Decimal("74434.41")
    fund(buyer, 100_000)
    purchase = buy(buyer, count_listing, "0.5", django_capture_on_commit_callbacks)
    assert purchase.price == Decimal("74434.41")

    body = api(buyer).get(f"/api/v1/purchases/{purchase.pk}/").json()
    risk = body["release"]["privacy_at_risk"]
    assert risk["epsilon0"] == "0.5000" and risk["dimension"] == 1
    assert float(risk["epsilon"]) == pytest.approx(0.2741, abs=1e-3)  # figure 10: (0.27, 0.61)
    assert risk["epsilon"] == "0.274115"  # an exact decimal, to six places
    assert risk["gamma"] == pytest.approx(0.6093, abs=1e-3)
    assert "not the probability that the release is ε-private" in risk["definition"]
    # the release's exact guarantee: one count with integer noise at 0.5 has loss +-0.5 only (probabilities
    # 1/(1+a) and a/(1+a), a = e^-0.5), so below 0.5 it is (eps', (1 - e^(eps' - 0.5))/(1 + e^-0.5))-DP
    link = body["release"]["privacy_profile"]
    assert link == f"/api/v1/listings/{count_listing.pk}/privacy-profile/?epsilon=0.5000"
    profile = api(buyer).get(link).json()
    assert profile["level"] == "0.5000" and profile["method"].startswith("exact law of the integer noise")
    want = -math.expm1(-0.25) / (1 + math.exp(-0.5))
    assert profile["summary"] == {"epsilon": "0.250000", "delta": pytest.approx(want, rel=1e-12)}
    assert profile["points"][-1] == {"epsilon": "0.500000", "delta": 0.0}

    client.force_login(owner)
    page = client.get(f"/owner/listings/{count_listing.pk}/").content.decode()
    assert "Privacy at risk and compensation (the paper's model)" in page
    assert "What each release guarantees" in page and 'id="profile-chart"><svg' in page
    assert "74434.41 credits" in page  # the budget under plain DP
    assert "37805.86 credits" in page  # the budget at the optimum eps = 0.274
    assert "36628.55 credits" in page  # the saving (the paper: 36628.53)
    assert "0.274" in page and "0.61" in page
    assert 'id="budget-chart"><svg' in page


def test_the_api_shows_curves_and_refuses_steep_powers(api, owner, count_listing):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.fixtures.market import make_csv

    shown = api().get(f"/api/v1/listings/{count_listing.pk}/").json()["price_curve"]
    assert shown["kind"] == "compensation" and shown["compensation"] == PAPER  # no people figure: the count is private
    assert "e^(−1/ε)" in shown["formula"]
    assert shown["points"][-1] == {"epsilon": "1.0000", "price": str(curve_of(count_listing).price(Decimal(1)))}

    client = api(owner)
    upload = SimpleUploadedFile("d.csv", make_csv(30), content_type="text/csv")
    dataset = client.post("/api/v1/datasets/", {"name": "d", "file": upload, "total_budget": "100"}, format="multipart").json()
    base = {"dataset": dataset["id"], "title": "t", "statistics": [{"kind": "count"}], "ceiling": "2"}
    steep = client.post("/api/v1/listings/", {**base, "price_curve": {"kind": "power", "c": "1", "p": "2.5"}}, format="json")
    assert steep.status_code == 400 and "invites arbitrage" in steep.json()["error"]["message"]
    assert "p" in steep.json()["error"]["fields"]
    fine = client.post("/api/v1/listings/", {**base, "price_curve": {"kind": "power", "c": "3", "p": "2"}}, format="json")
    assert fine.status_code == 201 and fine.json()["price_curve"]["p"] == "2"
    no_model = client.post("/api/v1/listings/", {**base, "price_curve": {"kind": "compensation", "margin": "2"}}, format="json")
    assert no_model.status_code == 400 and "compensation" in no_model.json()["error"]["fields"]


def test_the_owner_form_offers_every_curve(client, owner):
    from market.catalog.models import Listing

    from tests.fixtures.market import make_csv

    dataset = ready_dataset(owner=owner, name="staff", data=make_csv(40), total_budget="100")
    client.force_login(owner)
    post = {
        "dataset": dataset.public_id, "title": "Count", "ceiling": "1", "price_kind": "power", "price_per_epsilon": "4", "p": "3",
        "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0", "stats-0-kind": "count",
    }
    refused = client.post("/owner/listings/new/", post)
    assert refused.status_code == 200 and "averaging several cheaper answers would beat buying one" in refused.content.decode()
    assert not Listing.objects.exists()
    made = client.post("/owner/listings/new/", {**post, "price_kind": "compensation", "margin": "1.5", "E": "5500"})
    assert made.status_code == 302
    listing = Listing.objects.get()
    assert listing.price_curve == {"kind": "compensation", "margin": "1.5"}
    assert listing.compensation == {"E": "5500", "rate": "1", "E_min": "0"}  # a private size: no people
    missing = client.post("/owner/listings/new/", {**post, "price_kind": "compensation", "title": "x"})
    assert missing.status_code == 200 and "Required for this price curve." in missing.content.decode()
