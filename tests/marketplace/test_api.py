"""The buyer API: authentication, one error shape, scoping, validation, schema."""


import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from market.catalog.models import Dataset, Listing
from market.ledger.models import Leg
from market.trading.models import Purchase
from tests.paging import every

from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db


def assert_error(response, status, code=None, field=None):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert set(error) == {"status", "code", "message", "fields"}
    assert error["status"] == status and error["message"]
    if code:
        assert error["code"] == code
    if field:
        assert field in error["fields"], error
    return error


def test_token_authentication(api, buyer):
    client = api()
    bad = client.post("/api/v1/auth/token/", {"username": "bob", "password": "wrong"}, format="json")
    assert_error(bad, 400)
    good = client.post("/api/v1/auth/token/", {"username": "bob", "password": "a-long-password-1"}, format="json")
    token = good.json()["token"]
    assert_error(client.get("/api/v1/wallet/"), 401)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/v1/wallet/").json() == {"balance": "0.00", "currency": "credits"}
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert_error(client.get("/api/v1/wallet/"), 401)


def test_listings_are_public_and_never_carry_data_or_noise(api, listing, buyer):
    body = api().get("/api/v1/listings/").json()
    assert body["next"] is None and body["previous"] is None and len(body["results"]) == 1
    item = body["results"][0]
    assert item["id"] == listing.pk and item["ceiling"] == "5.0000"
    assert item["labels"] == listing.labels and item["owner"] == "olivia"
    forbidden = {"answer", "data", "noise", "lower", "upper", "dataset"}
    assert not forbidden & set(item)
    detail = api(buyer).get(f"/api/v1/listings/{listing.pk}/").json()
    assert detail["your_level"] == "0.0000"
    assert_error(api().get("/api/v1/listings/99999/"), 404, "not_found")
    assert len(every(api(), "/api/v1/listings/?search=clinic")) == 1
    assert len(every(api(), "/api/v1/listings/?search=nothing-like-it")) == 0


def test_quote(api, listing, buyer):
    q = api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=0.75").json()
    accuracy = q.pop("accuracy")
    statistics = q.pop("statistics")
    assert q.pop("target") is None  # the buyer named the level
    # one figure per statistic, the mean's included (from the listing's size release: tests/market/test_size_release_quotes.py)
    assert [(s["name"], s["assumes_records"], s["too_few"]) for s in statistics] == [
        ("count", None, False), ("mean(age)", None, False), ("each bin of the age histogram", None, False)]
    assert q == {
        "listing": listing.pk,
        "epsilon": "0.7500",
        "current_level": "0.0000",
        "ceiling": "5.0000",  # the listing's total, its size release counted
        "cap": "4.5000",  # not capped by trust: the ceiling less the size release (tests/trust cover caps)
        "cap_reason": "this listing is not capped by trust: the highest level sold is ε 4.5 (its ceiling ε 5 less its "
                      "size release)",
        "cap_bound": "",
        "price": "7.50",
        "warning": None,  # its answers are not mostly noise at this level (tests/web/test_quote_warning.py)
    }
    assert [a["label"] for a in accuracy] == listing.labels
    assert [a["noise_scale"] for a in accuracy] == pytest.approx([w / 0.75 for w in listing.weights])
    assert all(a["error_bound"] > 2.99 * a["noise_scale"] for a in accuracy)
    assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=9"), 400, field="epsilon")
    assert_error(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/"), 400, field="epsilon")


@pytest.mark.parametrize(
    "payload,status,field",
    [
        ({"listing": "LISTING", "epsilon": 0}, 400, "epsilon"),
        ({"listing": "LISTING", "epsilon": -1}, 400, "epsilon"),
        ({"listing": "LISTING", "epsilon": "7"}, 400, "epsilon"),  # above the ceiling
        ({"listing": "LISTING", "epsilon": "lots"}, 400, "epsilon"),
        ({"listing": "LISTING", "epsilon": None}, 400, "epsilon"),
        ({"listing": "LISTING", "epsilon": True}, 400, "epsilon"),
        ({"listing": "LISTING"}, 400, "epsilon"),
        ({"listing": "nope", "epsilon": "1"}, 400, "listing"),
        ({"listing": 99999, "epsilon": "1"}, 404, "listing"),
    ],
)
def test_bad_purchases_get_a_clear_error_and_change_nothing(api, listing, buyer, fund, payload, status, field):
    fund(buyer, 100)
    payload = {k: (listing.pk if v == "LISTING" else v) for k, v in payload.items()}
    before = (Purchase.objects.count(), Leg.objects.count())
    assert_error(api(buyer).post("/api/v1/purchases/", payload, format="json"), status, field=field)
    assert (Purchase.objects.count(), Leg.objects.count()) == before


def test_purchase_flow_and_idempotency_over_http(
    api, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    client = api(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert first.status_code == 202
    again = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    body = client.get(f"/api/v1/purchases/{first.json()['id']}/").json()
    assert body["status"] == "released" and body["price"] == "10.00"
    release = body["release"]
    assert release["level"] == "1.0000"
    assert release["values"][0]["noise_scale"] == pytest.approx(listing.weights[0])
    labels = [v["label"] for v in release["values"]]
    assert labels[:2] == ["count", "mean(age)"] and len(labels) == 2 + 50
    assert all(v["error_bound"] > 0 for v in release["values"])
    assert len(every(client, "/api/v1/purchases/")) == 1
    assert client.get("/api/v1/wallet/").json()["balance"] == "90.00"
    conflict = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "2"}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert_error(conflict, 409, "conflict")


def test_a_buyer_never_reads_another_buyers_things(
    api, listing, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks
):
    other = users("eve")
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json").json()
    release_id = purchase["release"] and purchase["release"]["id"] or api(buyer).get("/api/v1/releases/").json()["results"][0]["id"]
    spy = api(other)
    assert_error(spy.get(f"/api/v1/purchases/{purchase['id']}/"), 404)
    assert_error(spy.get(f"/api/v1/releases/{release_id}/"), 404)
    assert_error(spy.get("/api/v1/purchases/not-a-uuid/"), 404)
    assert len(every(spy, "/api/v1/purchases/")) == 0
    assert len(every(spy, "/api/v1/releases/")) == 0
    assert spy.get("/api/v1/wallet/").json()["balance"] == "0.00"
    assert len(every(spy, "/api/v1/wallet/statement/")) == 0
    assert api(buyer).get(f"/api/v1/releases/{release_id}/").status_code == 200


@pytest.mark.queued_datasets
def test_owners_upload_datasets_and_create_listings(api, owner, users, eager_celery, django_capture_on_commit_callbacks):
    client = api(owner)
    upload = SimpleUploadedFile("visits.csv", make_csv(200), content_type="text/csv")
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post("/api/v1/datasets/", {"name": "Visits", "file": upload, "budget": "100"}, format="multipart")
    assert made.status_code == 202, made.content
    assert made.json()["status"] == "processing" and made.json()["columns"] == []
    made = client.get(f"/api/v1/datasets/{made.json()['id']}/")
    assert made.json()["status"] == "ready", made.content
    assert [c["name"] for c in made.json()["columns"]] == ["age", "income", "visits"] and made.json()["row_count"] == 200
    assert [c["type"] for c in made.json()["columns"]] == ["integer", "decimal", "integer"]
    listing = client.post(
        "/api/v1/listings/",
        {"dataset": made.json()["id"], "title": "Ages", "statistics": STATISTICS, "ceiling": "2", "price_per_epsilon": "3.50"},
        format="json",
    )
    assert listing.status_code == 201, listing.content
    assert listing.json()["price_curve"]["c"] == "3.50"
    # another owner cannot list this dataset, nor see it
    rival = api(users("rival", owner=True))
    answer = rival.post(
        "/api/v1/listings/",
        {"dataset": made.json()["id"], "title": "Stolen", "statistics": STATISTICS, "ceiling": "1", "price_per_epsilon": "1"},
        format="json",
    )
    assert_error(answer, 404, field="dataset")
    assert len(every(rival, "/api/v1/datasets/")) == 0
    # a buyer who is not an owner cannot upload
    upload = SimpleUploadedFile("visits.csv", make_csv(10), content_type="text/csv")
    assert_error(api(users("plain")).post("/api/v1/datasets/", {"name": "x", "file": upload, "total_budget": "100"}, format="multipart"), 403)
    assert Listing.objects.count() == 1


def test_an_empty_upload_is_refused_at_once_and_stores_nothing(api, owner):
    upload = SimpleUploadedFile("bad.csv", b"", content_type="text/csv")
    answer = api(owner).post("/api/v1/datasets/", {"name": "bad", "file": upload, "budget": "100"}, format="multipart")
    error = assert_error(answer, 400, field="file")
    assert "empty" in " ".join(error["fields"]["file"]).lower()
    assert Dataset.objects.count() == 0


@pytest.mark.queued_datasets
@pytest.mark.parametrize(
    "content,message",
    [
        (b"age,income\n", "no data"),
        (b"age,income\n1,2\n3,4\n5\n", "line 4: has 1 cells but the header has 2"),
        (b"age,income\n1,=SUM(A1)\n", "column 'income': 1 cell looks like a spreadsheet formula"),
        (b"\x00\x01\x02binary", "binary"),
        (b"PK\x03\x04zipped", "zip"),
        (b"age,age\n1,2\n", "same name"),
    ],
)
def test_broken_uploads_fail_with_the_reason(api, owner, content, message, eager_celery, django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("bad.csv", content, content_type="text/csv")
    with django_capture_on_commit_callbacks(execute=True):
        answer = api(owner).post("/api/v1/datasets/", {"name": "bad", "file": upload, "budget": "100"}, format="multipart")
    assert answer.status_code == 202, answer.content
    body = api(owner).get(f"/api/v1/datasets/{answer.json()['id']}/").json()
    assert body["status"] == "failed" and body["columns"] == [] and body["row_count"] is None
    assert message.lower() in " ".join(body["failure"]).lower(), body["failure"]
    assert not Dataset.objects.get().upload_file  # the upload is deleted


@pytest.mark.queued_datasets
def test_bad_listing_specs_are_refused(api, owner, eager_celery, django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("visits.csv", make_csv(50), content_type="text/csv")
    with django_capture_on_commit_callbacks(execute=True):
        ds = api(owner).post("/api/v1/datasets/", {"name": "v", "file": upload, "total_budget": "3"}, format="multipart").json()
    base = {"dataset": ds["id"], "title": "t", "statistics": STATISTICS, "ceiling": "2", "price_per_epsilon": "1"}
    for change, field in [
        ({"statistics": [{"kind": "sum", "column": "height", "lower": 0, "upper": 1}]}, "statistics"),
        ({"statistics": [{"kind": "median", "column": "age"}]}, "statistics"),
        ({"ceiling": "0"}, "ceiling"),
        ({"ceiling": "abc"}, "ceiling"),
        ({"price_per_epsilon": "-1"}, "price_per_epsilon"),
    ]:
        assert_error(api(owner).post("/api/v1/listings/", {**base, **change}, format="json"), 400, field=field)
    assert api(owner).post("/api/v1/listings/", base, format="json").status_code == 201
    # the dataset's total budget is 3: a second ceiling of 2 would exceed it
    assert_error(api(owner).post("/api/v1/listings/", base, format="json"), 400, field="ceiling")
    assert Listing.objects.count() == 1


def test_demo_top_up_and_staff_only_funding(api, buyer, settings):
    settings.DEMO_MODE = True
    answer = api(buyer).post("/api/v1/wallet/top-up/", {"amount": "25"}, format="json")
    assert answer.status_code == 201 and answer.json()["balance"] == "25.00"
    assert_error(api(buyer).post("/api/v1/wallet/top-up/", {"amount": "-5"}, format="json"), 400, field="amount")
    assert_error(api(buyer).post("/api/v1/wallet/top-up/", {"amount": "1.001"}, format="json"), 400, field="amount")
    settings.DEMO_MODE = False
    assert_error(api(buyer).post("/api/v1/wallet/top-up/", {"amount": "25"}, format="json"), 403)
    statement = api(buyer).get("/api/v1/wallet/statement/").json()
    assert [(r["kind"], r["amount"]) for r in statement["results"]] == [("top_up", "25.00")]


def test_pagination(api, make_listing):
    for _ in range(23):
        make_listing(rows=20)
    first = api().get("/api/v1/listings/").json()
    assert len(first["results"]) == 20 and first["next"] and first["previous"] is None
    second = api().get(first["next"]).json()
    assert len(second["results"]) == 3 and second["next"] is None and second["previous"]
    assert len({r["id"] for r in first["results"] + second["results"]}) == 23


def test_throttling_answers_429_in_the_same_shape(api, buyer, monkeypatch):
    from django.core.cache import cache
    from market.api.throttling import RateLimits

    cache.clear()
    # per day: a window's edge (midnight UTC) cannot fall between the requests of the test
    monkeypatch.setattr(RateLimits, "RATES", {"user": "3/day", "anon": "3/day", "purchases": "3/day", "auth": "3/day"})
    client = api(buyer)
    for _ in range(3):
        assert client.get("/api/v1/wallet/").status_code == 200
    error = assert_error(client.get("/api/v1/wallet/"), 429, "throttled")
    assert "second" in error["message"]
    cache.clear()


def test_unknown_api_paths_and_the_schema(api):
    assert_error(api().get("/api/v1/no-such-thing/"), 404, "not_found")
    schema = api().get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for p in ("/api/v1/purchases/", "/api/v1/listings/{listing_id}/quote/", "/api/v1/auth/token/", "/api/v1/wallet/"):
        assert p in paths
    docs = api().get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
