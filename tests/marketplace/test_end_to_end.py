"""Through the API, with a real Celery worker consuming the broker (Redis in CI)."""

import time
from decimal import Decimal

import numpy as np
import pytest
from celery.contrib.testing.worker import start_worker

from market.catalog.models import Listing
from releases.models import NoisePoint
from tests.paging import every

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(seeded_noise):
    from market.celery import app

    app.conf.task_always_eager = False
    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=20):
        yield app


def token_client(api, username):
    client = api()
    answer = client.post("/api/v1/auth/token/", {"username": username, "password": "a-long-password-1"}, format="json")
    assert answer.status_code == 200, answer.content
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {answer.json()['token']}")
    return client


def buy_and_wait(client, listing_id, eps, timeout=30.0):
    answer = client.post("/api/v1/purchases/", {"listing": listing_id, "epsilon": eps}, format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json()["status"] in ("queued", "computing", "released")
    url = f"/api/v1/purchases/{answer.json()['id']}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = client.get(url)
        body = got.json()
        if got.status_code == 409 and body["error"]["code"] == "busy":  # documented: try again (SQLite's
            time.sleep(0.05)  # table locks, while the worker's release transaction writes the purchase)
            continue
        assert "status" in body, body
        if body["status"] == "released":
            return body
        assert body["status"] != "failed", body
        time.sleep(0.05)
    raise AssertionError(f"purchase not released within {timeout}s: {body}")


def errors(release, truth, labels):
    values = {v["label"]: v["value"] for v in release["values"]}
    return np.array([abs(values[label] - t) for label, t in zip(labels, truth) if label in values])


def test_buying_step_by_step_through_the_api(worker, listing, users, fund, api):
    first, second = users("first"), users("second")
    fund(first, 1000)
    fund(second, 1000)
    alice, bea = token_client(api, "first"), token_client(api, "second")
    truth = listing.true_answer()

    quote = alice.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=0.5").json()
    assert Decimal(quote["price"]) == Decimal("5.00")
    r05 = buy_and_wait(alice, listing.pk, "0.5")["release"]
    quote = alice.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=1").json()
    assert Decimal(quote["current_level"]) == Decimal("0.5") and Decimal(quote["price"]) == Decimal("5.00")
    r10 = buy_and_wait(alice, listing.pk, "1.0")["release"]
    r20 = buy_and_wait(alice, listing.pk, "2.0")["release"]

    # each answer is closer on average (52 coordinates: count and 51 bins)
    e05, e10, e20 = (errors(r, truth, listing.labels).mean() for r in (r05, r10, r20))
    assert e05 > e10 > e20
    # ... and the bound shrinks with the level
    assert r05["values"][0]["error_bound"] > r10["values"][0]["error_bound"] > r20["values"][0]["error_bound"]

    # the owner has spent 2.0 on this listing: the largest level, not 0.5 + 1 + 2
    listing = Listing.objects.get(pk=listing.pk)
    assert listing.noise_path.released_max == Decimal("2.0")

    # a second buyer at 1.0 receives exactly the first buyer's 1.0 answer
    b10 = buy_and_wait(bea, listing.pk, "1")["release"]
    assert b10["values"] == r10["values"]
    assert NoisePoint.objects.filter(path__listing=listing).count() == 3

    # both read their own releases, wallets and statements
    assert len(every(alice, "/api/v1/releases/")) == 3
    assert Decimal(alice.get("/api/v1/wallet/").json()["balance"]) == Decimal("980.00")
    statement = alice.get("/api/v1/wallet/statement/").json()
    assert [Decimal(r["amount"]) for r in statement["results"]] == [Decimal(-10), Decimal(-5), Decimal(-5), Decimal(1000)]
