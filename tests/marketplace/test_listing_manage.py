"""An owner manages their listings: close, reopen, title and description, price for future purchases.

Each is a service (``market.catalog.services``) the pages and the API call; another owner's
listing does not exist for them (404), a user who is not an owner is refused (403).
"""

from decimal import Decimal

import pytest
from django.db import connection

from market.catalog.models import Listing
from market.catalog.services import (
    CLOSED_BY_OWNER,
    listing_check,
    listing_close,
    listing_create,
    listing_reopen,
    listing_update,
)
from market.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from market.ledger.models import Account
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create, purchase_quote
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_owner(users):
    return users("oscar", owner=True)


@pytest.fixture
def buy(eager_celery, django_capture_on_commit_callbacks):
    """A purchase, released as it would be after its commit."""

    def purchase(buyer, listing, eps):
        with django_capture_on_commit_callbacks(execute=True):
            bought, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
        bought.refresh_from_db()
        return bought

    return purchase


def test_closing_stops_sales_and_keeps_what_was_sold(listing, owner, buyer, fund, buy):
    fund(buyer, 100)
    bought = buy(buyer, listing, "1")
    closed = listing_close(owner=owner, listing_id=listing.pk, reason="The clinic asked us to stop.")
    assert not closed.is_open and closed.closed_reason == "The clinic asked us to stop."
    with pytest.raises(NotFound):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    # what was sold stays: the purchase, its price, the holding; and the buyer still sees the listing
    bought.refresh_from_db()
    assert bought.price == Decimal("10.00") and Holding.objects.get(buyer=buyer, listing=listing).purchased == 1
    from market.catalog.selectors import listing_get, listing_search

    assert listing_get(user=buyer, listing_id=listing.pk).closed_reason == "The clinic asked us to stop."
    assert listing.pk not in [item.pk for item in listing_search(user=buyer)]


def test_closing_without_a_reason_says_who_closed_it_and_twice_keeps_the_first(listing, owner):
    assert listing_close(owner=owner, listing_id=listing.pk).closed_reason == CLOSED_BY_OWNER
    again = listing_close(owner=owner, listing_id=listing.pk, reason="another reason")
    assert again.closed_reason == CLOSED_BY_OWNER and not again.is_open


def test_reopening_sells_again_from_the_level_held(listing, owner, buyer, fund, buy):
    fund(buyer, 100)
    buy(buyer, listing, "1")
    listing_close(owner=owner, listing_id=listing.pk)
    opened = listing_reopen(owner=owner, listing_id=listing.pk)
    assert opened.is_open and opened.closed_reason == ""
    step = buy(buyer, listing, "2")
    assert (step.level_from, step.level_to, step.price) == (Decimal(1), Decimal(2), Decimal("10.00"))
    # reopening an open listing changes nothing
    assert listing_reopen(owner=owner, listing_id=listing.pk).is_open


def test_a_closed_listing_keeps_its_ceiling_in_the_budget_so_reopening_never_exceeds_it(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="5")
    first = listing_create(owner=owner, dataset_id=dataset.public_id, title="A", statistics=[{"kind": "count"}],
                           ceiling="5", price_per_epsilon="1")
    listing_close(owner=owner, listing_id=first.pk)
    # the closed listing's ceiling is not free for another listing...
    with pytest.raises(InvalidInput) as refused:
        listing_create(owner=owner, dataset_id=dataset.public_id, title="B", statistics=[{"kind": "count"}],
                       ceiling="1", price_per_epsilon="1")
    assert refused.value.fields["ceiling"] == ["At most 0."]
    # ...so reopening it fits the budget as it did when it was created
    assert listing_reopen(owner=owner, listing_id=first.pk).is_open


def test_a_listing_over_its_budget_is_not_reopened(owner):
    """The services and the database keep the ceilings within the budget; should a budget ever be
    below them (a change made outside the services), a closed listing stays closed."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="5")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="A", statistics=[{"kind": "count"}],
                             ceiling="5", price_per_epsilon="1")
    listing_close(owner=owner, listing_id=listing.pk)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # the budget trigger is bypassed for this test only
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute("UPDATE catalog_dataset SET total_budget = 2 WHERE id = %s", [dataset.pk])
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")
    else:
        with connection.cursor() as cursor:
            names = [r[0] for r in cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'catalog_dataset'").fetchall()]
            sql = {n: cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [n]).fetchone()[0] for n in names}
            for name in names:
                cursor.execute(f'DROP TRIGGER "{name}"')
            cursor.execute("UPDATE catalog_dataset SET total_budget = 2 WHERE id = %s", [dataset.pk])
            for name in names:
                cursor.execute(sql[name])
    with pytest.raises(Conflict) as refused:
        listing_reopen(owner=owner, listing_id=listing.pk)
    assert refused.value.code == "cannot_reopen" and "above its budget 2" in refused.value.message
    assert not Listing.objects.get(pk=listing.pk).is_open


def test_a_listing_the_platform_closed_is_not_reopened(owner):
    """A centroid over a private number of records (closed when relations came, its reason shown to
    its buyers) cannot be created today, so it cannot be reopened either."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="5")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="A", statistics=[{"kind": "count"}],
                             ceiling="1", price_per_epsilon="1")
    centroid = [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 50000], "radius": 100}]
    Listing.objects.filter(pk=listing.pk).update(statistics=centroid, is_open=False, closed_reason="Closed: centroid")
    with pytest.raises(Conflict) as refused:
        listing_reopen(owner=owner, listing_id=listing.pk)
    assert refused.value.message.startswith("this listing cannot be reopened: ")
    closed = Listing.objects.get(pk=listing.pk)
    assert not closed.is_open and closed.closed_reason == "Closed: centroid"


def test_a_price_change_applies_to_future_purchases_only(listing, owner, buyer, fund, buy):
    fund(buyer, 200)
    first = buy(buyer, listing, "1")
    changed = listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="30.00")
    assert changed.price_curve == {"kind": "linear", "c": "30.00"} and changed.price_per_epsilon == Decimal("30.00")
    first.refresh_from_db()
    assert first.price == Decimal("10.00")  # what was sold keeps its price
    earnings = Account.objects.get(user=owner, kind=Account.Kind.EARNINGS, listing_id=listing.pk)
    assert earnings.balance == Decimal("10.00")
    # the next step costs P_new(2) - P_new(1) = 60 - 30
    assert purchase_quote(buyer=buyer, listing=Listing.objects.get(pk=listing.pk), epsilon="2").price == Decimal("30.00")
    step = buy(buyer, listing, "2")
    assert step.price == Decimal("30.00")
    assert list(Purchase.objects.filter(buyer=buyer).order_by("created_at").values_list("price", flat=True)) == [
        Decimal("10.00"), Decimal("30.00")]


def test_a_price_curve_change_is_checked_as_at_creation(listing, owner):
    power = listing_update(owner=owner, listing_id=listing.pk, price_curve={"kind": "power", "c": "4", "p": "1.5"})
    assert power.price_curve == {"kind": "power", "c": "4", "p": "1.5"}
    # priced at the highest level sold: 4.5, the ceiling 5 less its size release's 0.5
    assert power.price_per_epsilon == (Decimal("38.18") / Decimal("4.5")).quantize(Decimal("0.01"))
    with pytest.raises(InvalidInput) as refused:
        listing_update(owner=owner, listing_id=listing.pk, price_curve={"kind": "power", "c": "4", "p": "3"})
    assert "arbitrage" in refused.value.message and "p" in refused.value.fields
    with pytest.raises(InvalidInput) as free:
        listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="0")
    assert free.value.fields == {"price_per_epsilon": ["Charge at least 0.01 at the ceiling."]}
    with pytest.raises(InvalidInput) as compensation:  # this listing states no compensation model
        listing_update(owner=owner, listing_id=listing.pk, price_curve={"kind": "compensation", "margin": "2"})
    assert "compensation" in compensation.value.fields
    assert Listing.objects.get(pk=listing.pk).price_curve == power.price_curve  # nothing changed


def test_a_compensation_price_keeps_the_listings_model(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="5",
                            relation="public_size")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="A",
                             statistics=[{"kind": "mean", "column": "age", "lower": 0, "upper": 100}], ceiling="2",
                             price_per_epsilon="1", compensation={"E": "0.5", "rate": "1", "E_min": "0"})
    changed = listing_update(owner=owner, listing_id=listing.pk, price_curve={"kind": "compensation", "margin": "2"})
    assert changed.price_curve == {"kind": "compensation", "margin": "2"}
    assert changed.compensation == {"E": "0.5", "rate": "1", "E_min": "0", "people": 200}


def test_title_and_description_change_and_every_error_is_named_at_once(listing, owner):
    changed = listing_update(owner=owner, listing_id=listing.pk, title="  Clinic visits, 2024 ", description="")
    assert (changed.title, changed.description) == ("Clinic visits, 2024", "")
    with pytest.raises(InvalidInput) as refused:
        listing_update(owner=owner, listing_id=listing.pk, title=" ", price_per_epsilon="-1")
    assert set(refused.value.fields) == {"title", "price_per_epsilon"}
    assert Listing.objects.get(pk=listing.pk).title == "Clinic visits, 2024"


def test_another_owner_cannot_manage_a_listing_and_a_buyer_is_refused(listing, other_owner, buyer):
    for manage in (
        lambda who: listing_close(owner=who, listing_id=listing.pk),
        lambda who: listing_reopen(owner=who, listing_id=listing.pk),
        lambda who: listing_update(owner=who, listing_id=listing.pk, title="Mine now"),
        lambda who: listing_update(owner=who, listing_id=listing.pk, price_per_epsilon="1"),
    ):
        with pytest.raises(NotFound):
            manage(other_owner)
        with pytest.raises(Forbidden):
            manage(buyer)
    fresh = Listing.objects.get(pk=listing.pk)
    assert fresh.is_open and fresh.title == "Clinic visits" and fresh.price_curve == {"kind": "linear", "c": "10.00"}


def test_listing_create_names_every_problem_at_once(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="3")
    with pytest.raises(InvalidInput) as refused:
        listing_create(
            owner=owner, dataset_id=dataset.public_id, title="", ceiling="10", price_per_epsilon="-2",
            statistics=[{"kind": "sum", "column": "age", "lower": 5, "upper": 1},
                        {"kind": "mean", "column": "nope", "lower": 0, "upper": 1}],
        )
    fields = refused.value.fields
    assert set(fields) == {"title", "ceiling", "price_per_epsilon", "statistics"}
    assert fields["ceiling"] == ["At most 3."]
    assert fields["statistics"] == ["statistic 1 (sum): lower must be below upper", "statistic 2 (mean): no column named 'nope'"]
    assert "title is required" in refused.value.message and "lower must be below upper" in refused.value.message
    assert not Listing.objects.exists()


def test_a_single_problem_keeps_its_message(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="3")
    with pytest.raises(InvalidInput) as refused:
        listing_create(owner=owner, dataset_id=dataset.public_id, title="A", ceiling="4", price_per_epsilon="1",
                       statistics=[{"kind": "count"}])
    assert refused.value.message == "the dataset's budget is 3; 0 is taken by its listings, so this ceiling can be at most 3"
    assert refused.value.fields == {"ceiling": ["At most 3."]}


def test_listing_check_judges_only_the_parts_given(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="3")
    assert listing_check(owner=owner, dataset_id=dataset.public_id) == {}
    assert listing_check(owner=owner, dataset_id=dataset.public_id, ceiling=Decimal(4)) == {"ceiling": ["At most 3."]}
    found = listing_check(owner=owner, dataset_id=dataset.public_id, statistics=[{"kind": "count"}, {"kind": "count"}],
                          price_curve={"kind": "power", "c": "1", "p": "5"})
    assert found["statistics"] == ["statistic 2 (count): same as statistic 1"] and "p" in found
    assert not Listing.objects.exists()


def test_the_api_manages_a_listing_for_its_owner_only(api, listing, owner, other_owner, buyer):
    url = f"/api/v1/listings/{listing.pk}/"
    for who in (other_owner, buyer):
        client = api(who)
        assert client.patch(url, {"title": "x"}, format="json").status_code in (403, 404)
        assert client.post(url + "close/", {}, format="json").status_code in (403, 404)
        assert client.post(url + "reopen/", format="json").status_code in (403, 404)
    assert api(other_owner).patch(url, {"title": "x"}, format="json").status_code == 404
    assert api(buyer).patch(url, {"title": "x"}, format="json").json()["error"]["code"] == "role_required"

    mine = api(owner)
    changed = mine.patch(url, {"title": "Renamed", "price_per_epsilon": "12.50"}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["title"] == "Renamed" and changed.json()["price_curve"]["c"] == "12.50"
    bad = mine.patch(url, {"title": "", "price_curve": {"kind": "power", "c": "1", "p": "3"}}, format="json")
    assert bad.status_code == 400 and {"title"} <= set(bad.json()["error"]["fields"])
    assert mine.patch(url, {}, format="json").status_code == 400
    assert mine.patch(url, {"colour": "red"}, format="json").status_code == 400

    closed = mine.post(url + "close/", {"reason": "Paused for the audit."}, format="json")
    assert closed.status_code == 200 and closed.json()["is_open"] is False
    assert closed.json()["closed_reason"] == "Paused for the audit."
    assert api(buyer).get(url).status_code == 404  # closed, and not held by this buyer
    opened = mine.post(url + "reopen/", format="json")
    assert opened.status_code == 200 and opened.json()["is_open"] is True and opened.json()["closed_reason"] == ""


def test_patch_is_partial_only_the_fields_given_change(api, listing, owner):
    """An owner changes only the price, only the description or only the title (issue 27: leaving the
    title out was a 400 "title is required")."""
    url = f"/api/v1/listings/{listing.pk}/"
    mine = api(owner)
    listing.refresh_from_db()
    title, description = listing.title, listing.description

    priced = mine.patch(url, {"price_per_epsilon": "12.50"}, format="json")
    assert priced.status_code == 200, priced.json()
    assert priced.json()["price_curve"]["c"] == "12.50"
    assert (priced.json()["title"], priced.json()["description"]) == (title, description)

    described = mine.patch(url, {"description": "Now with a description."}, format="json")
    assert described.status_code == 200, described.json()
    assert described.json()["title"] == title and described.json()["price_curve"]["c"] == "12.50"

    curved = mine.patch(url, {"price_curve": {"kind": "power", "c": "4", "p": "1.5"}}, format="json")
    assert curved.status_code == 200, curved.json()
    assert curved.json()["description"] == "Now with a description." and curved.json()["title"] == title

    renamed = mine.patch(url, {"title": "Renamed"}, format="json")
    assert renamed.status_code == 200, renamed.json()
    assert renamed.json()["price_curve"]["kind"] == "power"
    listing.refresh_from_db()
    assert (listing.title, listing.description, listing.price_curve["kind"]) == (
        "Renamed", "Now with a description.", "power")
    # a title given empty is still refused (left out is not the same as cleared)
    blank = mine.patch(url, {"title": "  "}, format="json")
    assert blank.status_code == 400 and "title" in blank.json()["error"]["fields"]
