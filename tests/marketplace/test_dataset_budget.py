"""A dataset's budget: required, enforced by the database for every writer, audited, and spent
as the sum over its listings (independent releases about the same people add up)."""

from decimal import Decimal

from tests.datasets import ready_dataset
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, InternalError, connection, transaction

from market.catalog.models import Dataset, DatasetBudgetChange, Listing
from market.catalog.services import dataset_budget_set, listing_create
from market.core.errors import InvalidInput
from market.trading.services import purchase_create, purchase_quote
from market.trust.selectors import buyer_cap
from market.trust.services import trust_listings_set

from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db(transaction=True)
DB_ERRORS = (IntegrityError, InternalError)


def _dataset(owner, budget="8", rows=200, seed=1):
    return ready_dataset(owner=owner, name="visits", data=make_csv(rows, seed=seed), total_budget=budget)


def _listing(owner, dataset, ceiling, title="Clinic visits", statistics=STATISTICS[:2]):
    """A count and a mean over the dataset's private size: a size release at a tenth of the ceiling."""
    return listing_create(
        owner=owner, dataset_id=dataset.public_id, title=title, statistics=statistics, ceiling=ceiling,
        price_per_epsilon="100.00",
    )


#: a count alone: no mean, so no size release (the whole ceiling is sold)
COUNT_ONLY = STATISTICS[:1]


@pytest.fixture
def staff(users):
    user = users("staff")
    user.is_staff = user.is_superuser = True
    user.save()
    return user


# --- 1. required at upload


def test_the_budget_is_required_at_upload_with_a_suggested_default(owner, api, client):
    upload = SimpleUploadedFile("v.csv", make_csv(50), content_type="text/csv")
    answer = api(owner).post("/api/v1/datasets/", {"name": "v", "file": upload}, format="multipart")
    assert answer.status_code == 400 and "budget" in answer.json()["error"]["fields"]
    with pytest.raises(InvalidInput, match="total_budget"):
        ready_dataset(owner=owner, name="v", data=make_csv(50), total_budget=None)
    assert not Dataset.objects.exists()
    assert "Suggested: 2" in client.get("/api/schema/?format=json").content.decode()  # the default, in the API docs
    client.force_login(owner)
    page = client.get("/owner/datasets/new/").content.decode()
    assert 'name="total_budget"' in page and 'value="2"' in page  # the form suggests it; the owner may keep it


# --- 2. the database enforces it for every writer


def test_orm_updates_cannot_raise_ceilings_past_the_budget(owner):
    dataset = _dataset(owner, budget="8")
    first = _listing(owner, dataset, "5")
    second = _listing(owner, dataset, "3")  # 5 + 3 = 8: exactly the budget
    with pytest.raises(DB_ERRORS, match="budget"):
        with transaction.atomic():
            Listing.objects.filter(pk=second.pk).update(ceiling=Decimal("3.0001"))
    with pytest.raises(DB_ERRORS, match="budget"):
        with transaction.atomic():
            Listing.objects.filter(pk=first.pk).update(ceiling=Decimal("6"))
    # a point listing (geo-indistinguishability, not eps-DP) is not counted in the sum
    Listing.objects.filter(pk=second.pk).update(counted_in_budget=False)
    Listing.objects.filter(pk=second.pk).update(ceiling=Decimal("50"))
    with pytest.raises(DB_ERRORS, match="budget"):
        with transaction.atomic():  # back to eps-DP with that ceiling: 5 + 50 > 8
            Listing.objects.filter(pk=second.pk).update(counted_in_budget=True)


def test_a_raw_sql_budget_below_the_ceilings_is_refused_by_the_database(owner):
    dataset = _dataset(owner, budget="8")
    _listing(owner, dataset, "2.5")
    _listing(owner, dataset, "2.5")
    with pytest.raises(DB_ERRORS, match="budget"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE catalog_dataset SET total_budget = 4.9999 WHERE id = %s", [dataset.pk])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE catalog_dataset SET total_budget = 5 WHERE id = %s", [dataset.pk])
    dataset.refresh_from_db()
    assert dataset.total_budget == Decimal("5")


def test_sums_of_decimal_ceilings_fit_the_budget_exactly(owner):
    """0.1 + 0.2 fits a budget of 0.3 (SQLite compares float sums: the trigger allows for it)."""
    dataset = _dataset(owner, budget="0.3")
    _listing(owner, dataset, "0.1", statistics=COUNT_ONLY)
    _listing(owner, dataset, "0.2", statistics=COUNT_ONLY)
    with pytest.raises(InvalidInput, match="at most 0$"):
        _listing(owner, dataset, "0.0001", statistics=COUNT_ONLY)
    with pytest.raises(DB_ERRORS, match="budget"):
        with transaction.atomic():
            Listing.objects.filter(dataset=dataset, ceiling=Decimal("0.1")).update(ceiling=Decimal("0.1001"))


# --- 3. staff change budgets through the service, audited


def test_a_budget_change_is_checked_and_audited(owner, staff, users):
    dataset = _dataset(owner, budget="8")
    _listing(owner, dataset, "5")
    with pytest.raises(InvalidInput, match="adding up to 5;") as refused:
        dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="4", reason="too generous")
    assert refused.value.fields == {"total_budget": ["At least 5 (the listings' ceilings)."]}
    with pytest.raises(InvalidInput, match="reason"):
        dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="6", reason=" ")
    assert not DatasetBudgetChange.objects.exists()
    dataset_budget_set(actor=staff, dataset_id=dataset.public_id, budget="6", reason="the ethics board's limit")
    change = DatasetBudgetChange.objects.get()
    assert (change.old, change.new, change.actor, change.reason) == (Decimal("8"), Decimal("6"), staff, "the ethics board's limit")
    assert Dataset.objects.get(pk=dataset.pk).total_budget == Decimal("6")
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            DatasetBudgetChange.objects.filter(pk=change.pk).update(new=Decimal("100"))
    from market.core.errors import NotFound

    with pytest.raises(NotFound):  # another owner cannot reach it
        dataset_budget_set(actor=users("mallory", owner=True), dataset_id=dataset.public_id, budget="7", reason="x")


def test_the_admin_budget_edit_goes_through_the_service(client, owner, staff):
    dataset = _dataset(owner, budget="8")
    _listing(owner, dataset, "5")
    client.force_login(staff)
    url = f"/admin/catalog/dataset/{dataset.pk}/change/"
    inline = {"budget_changes-TOTAL_FORMS": "0", "budget_changes-INITIAL_FORMS": "0"}
    form = {"name": "visits", "description": "", "total_budget": "4", "budget_reason": "tighter", **inline}
    answer = client.post(url, form)
    assert answer.status_code == 200  # the form again, with the reason: not a 500
    assert "adding up to 5;" in answer.content.decode()
    assert Dataset.objects.get(pk=dataset.pk).total_budget == Decimal("8") and not DatasetBudgetChange.objects.exists()
    answer = client.post(url, {**form, "total_budget": "6", "budget_reason": ""})
    assert answer.status_code == 200 and "Say why the budget changes" in answer.content.decode()
    answer = client.post(url, {**form, "total_budget": "6", "name": "visits 2024"})
    assert answer.status_code == 302
    dataset.refresh_from_db()
    assert (dataset.total_budget, dataset.name) == (Decimal("6"), "visits 2024")
    assert DatasetBudgetChange.objects.get().reason == "tighter"
    page = client.get(url).content.decode()
    assert "budget history" in page and "tighter" in page


# --- 4. spent: the sum over listings of each one's largest released level


def test_spent_is_the_sum_of_the_listings_largest_released_levels(owner, buyer, users, fund, api, eager_celery):
    dataset = _dataset(owner, budget="9")
    ages = _listing(owner, dataset, "5", "Ages")
    visits = _listing(owner, dataset, "3", "Visits")
    carol = users("carol")
    fund(buyer, 1000)
    fund(carol, 1000)
    purchase_create(buyer=buyer, listing_id=ages.pk, epsilon="1")
    purchase_create(buyer=carol, listing_id=ages.pk, epsilon="2")  # one path: the listing spent 2, not 3
    purchase_create(buyer=buyer, listing_id=visits.pk, epsilon="0.5")
    # each listing's size release (a tenth of its ceiling: 0.5 and 0.3) was spent at creation, once
    assert (ages.size_level, visits.size_level) == (Decimal("0.5"), Decimal("0.3"))
    (row,) = api(owner).get("/api/v1/datasets/").json()["results"]
    assert (row["budget"], row["ceilings_total"], row["spent"]) == ("9.0000", "8.0000", "3.3000")
    listings = {l["title"]: l for l in api(owner).get("/api/v1/listings/").json()["results"]}
    assert (listings["Ages"]["spent"], listings["Visits"]["spent"]) == ("2.5000", "0.8000")
    assert (listings["Ages"]["ceiling"], listings["Ages"]["buyable_ceiling"], listings["Ages"]["size_level"]) == (
        "5.0000", "4.5000", "0.5000")
    assert api(buyer).get(f"/api/v1/listings/{ages.pk}/").json()["spent"] is None  # owners only
    from market.trading.dashboard import owner_overview

    (figures,) = owner_overview(user=owner)["datasets"]
    assert figures["budget"] == {"total": 9, "used": 8, "left": 1, "spent": Decimal("3.3")}


# --- 5. the same content twice


def test_uploading_the_same_content_again_says_so(owner, api, client, users):
    first = _dataset(owner, rows=120)
    # the same bytes again (the hash is the uploaded file's sha256): the same content
    upload = SimpleUploadedFile("again.csv", make_csv(120), content_type="text/csv")
    body = api(owner).post("/api/v1/datasets/", {"name": "again", "file": upload, "total_budget": "2"}, format="multipart").json()
    assert body["same_content_as"] == [first.public_id]
    assert "budgets" in body["notice"] and first.name in body["notice"]
    other = SimpleUploadedFile("other.csv", make_csv(120, seed=2), content_type="text/csv")
    body = api(owner).post("/api/v1/datasets/", {"name": "other", "file": other, "total_budget": "2"}, format="multipart").json()
    assert body["same_content_as"] == [] and body["notice"] is None
    # another owner's identical file is not theirs to be told about
    stranger = users("sam", owner=True)
    assert ready_dataset(owner=stranger, name="x", data=make_csv(120), total_budget="2").same_content_as == []
    client.force_login(owner)
    page = client.post(
        "/owner/datasets/new/",
        {"name": "third", "description": "", "total_budget": "2", "file": SimpleUploadedFile("t.csv", make_csv(120))},
        follow=True,
    ).content.decode()
    assert "same content as your datasets" in page and first.public_id in page and "adds up" in page


# --- 6. trust caps per dataset


@pytest.fixture
def two_capped(owner):
    """The issue's case: two trust-capped listings on one dataset, ceilings 5 and 2."""
    dataset = _dataset(owner, budget="7")
    ages = _listing(owner, dataset, "5", "Ages", statistics=COUNT_ONLY)
    visits = _listing(owner, dataset, "2", "Visits", statistics=COUNT_ONLY)
    trust_listings_set(owner=owner, listing_ids=[ages.pk, visits.pk])
    return Listing.objects.get(pk=ages.pk), Listing.objects.get(pk=visits.pk)


def test_a_buyers_levels_on_a_datasets_capped_listings_add_up_to_one_cap(two_capped, buyer, fund, eager_celery):
    """Unknown distance 3, map 5 e^(-0.5*3) = 1.1156 on the dataset (its largest capped ceiling):
    today 1.1156 on one listing and 0.4462 on the other; here at most 1.1156 in all."""
    ages, visits = two_capped
    assert buyer_cap(listing=ages, buyer=buyer).level == Decimal("1.1156")
    assert buyer_cap(listing=visits, buyer=buyer).level == Decimal("0.4462")  # its own map is smaller
    fund(buyer, 1000)
    purchase_create(buyer=buyer, listing_id=ages.pk, epsilon="1")
    cap = buyer_cap(listing=visits, buyer=buyer)
    assert cap.level == Decimal("0.1156")  # the room left on the dataset
    with pytest.raises(InvalidInput) as refused:
        purchase_quote(buyer=buyer, listing=visits, epsilon="0.2")
    message = refused.value.message
    assert "buyers at distance ≥ 3 together already hold 1 of this dataset's cap 1.1156 for them" in message
    assert "on its other trust-capped listings, so at most 0.1156 here" in message
    with pytest.raises(InvalidInput):
        purchase_create(buyer=buyer, listing_id=visits.pk, epsilon="0.2")
    purchase_create(buyer=buyer, listing_id=visits.pk, epsilon="0.1156")
    # raising the level on Ages counts what is held on Visits; the new level replaces the old one on Ages
    assert buyer_cap(listing=ages, buyer=buyer).level == Decimal("1.0000")
    with pytest.raises(InvalidInput, match="at most 1 here"):
        purchase_create(buyer=buyer, listing_id=ages.pk, epsilon="1.0001")
    from market.trading.models import Holding

    total = sum(h.purchased for h in Holding.objects.filter(buyer=buyer))
    assert total == Decimal("1.1156") <= Decimal(5) * Decimal(-1.5).exp()


def test_one_capped_listing_on_a_dataset_behaves_as_before(owner, buyer, fund, eager_celery):
    dataset = _dataset(owner, budget="7")
    capped = _listing(owner, dataset, "5", "Ages", statistics=COUNT_ONLY)
    free = _listing(owner, dataset, "2", "Visits", statistics=COUNT_ONLY)
    trust_listings_set(owner=owner, listing_ids=[capped.pk])
    fund(buyer, 1000)
    purchase_create(buyer=buyer, listing_id=free.pk, epsilon="2")  # uncapped listings are not in the cap
    assert buyer_cap(listing=Listing.objects.get(pk=capped.pk), buyer=buyer).level == Decimal("1.1156")
