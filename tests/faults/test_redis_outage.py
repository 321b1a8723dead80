"""Redis is not a single point of failure for answers (``market.core.cache``).

Each test runs its own redis-server (``own_redis``) as the cache and the Celery broker, and kills
or hangs it: API keys sign in from the database, rate limits are counted in the process's memory,
a purchase is answered 202, charged once, and released by the sweeper once Redis is back.
"""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from market.accounts.services import api_key_create
from market.api.throttling import RateLimits
from market.ledger.models import Transfer
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Purchase
from market.trading.services import purchases_sweep
from releases.models import Release

from .conftest import needs_services, wait_for

pytestmark = [needs_services, pytest.mark.django_db(transaction=True)]


def key_client(user) -> APIClient:
    _, secret = api_key_create(user=user, name="outage")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def buy(client, listing, key):
    return client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json",
                       HTTP_IDEMPOTENCY_KEY=key)


def test_without_redis_the_api_answers_a_purchase_is_charged_once_and_released_when_it_is_back(
    own_redis, listing, buyer, fund, workers
):
    fund(buyer, 100)
    client = key_client(buyer)
    assert client.get("/api/v1/wallet/").status_code == 200  # the key is remembered in Redis now

    own_redis.kill()
    assert APIClient().get("/api/v1/listings/").status_code == 200  # anonymous: counted by address
    quote = client.get(f"/api/v1/listings/{listing.pk}/quote/", {"epsilon": "1"})
    assert quote.status_code == 200 and quote.json()["price"] == "10.00"
    answer = buy(client, listing, "during-the-outage")
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "queued" and "cannot be reached" in body["note"]
    # a repeat is the same purchase, charged once
    assert buy(client, listing, "during-the-outage").json()["id"] == body["id"]
    assert wallet_balance(user=buyer) == Decimal("90.00") and Transfer.objects.filter(kind="purchase").count() == 1
    # the pages' sign-in counts failures per account in the process's memory meanwhile
    assert Client().post("/accounts/login/", {"username": "bob", "password": "a-long-password-1"}).status_code == 302

    own_redis.start()  # back (empty: nothing of the outage was queued there)
    workers()
    wait_for(lambda: purchases_sweep(older_than=timedelta(0)) == 1, 10, "the sweeper to reach the broker again")
    wait_for(lambda: Purchase.objects.get(pk=body["id"]).status == "released", 60, "the swept purchase to release")
    assert Release.objects.count() == 1 and Transfer.objects.filter(kind="purchase").count() == 1
    assert ledger_is_balanced()


def test_without_redis_rate_limits_are_counted_in_the_process(own_redis, listing, buyer, monkeypatch):
    monkeypatch.setattr(RateLimits, "RATES", {"user": "3/hour", "anon": "2/hour"})
    client = key_client(buyer)
    own_redis.kill()
    assert [client.get("/api/v1/wallet/").status_code for _ in range(4)] == [200, 200, 200, 429]
    refused = client.get("/api/v1/wallet/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["error"]["status"] == 429
    anonymous = APIClient()
    assert [anonymous.get("/api/v1/listings/").status_code for _ in range(3)] == [200, 200, 429]


def test_a_hung_redis_holds_no_request_for_long(own_redis, listing, buyer, fund):
    """A Redis that accepts connections but never answers (stopped) costs a request at most its
    socket timeout, then nothing while the breaker is open: requests are not held for seconds."""
    fund(buyer, 100)
    client = key_client(buyer)
    own_redis.hang()
    answers = []

    def send():
        try:
            for _ in range(5):
                answers.append(client.get(f"/api/v1/listings/{listing.pk}/quote/", {"epsilon": "1"}).status_code)
            answers.append(buy(client, listing, "hung").status_code)
        finally:
            connections.close_all()

    thread = threading.Thread(target=send, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(15)
    took = time.monotonic() - started
    own_redis.resume()
    assert answers == [200] * 5 + [202], answers
    assert took < 5, f"six requests took {took:.1f}s with Redis hung"
    assert wallet_balance(user=buyer) == Decimal("90.00")
