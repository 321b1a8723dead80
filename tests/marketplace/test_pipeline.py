"""The purchase pipeline of issue 14: statement budgets, releases group-committed per listing,
``Prefer: wait`` (RFC 7240) on the purchase endpoints, and rate limits in one cache round trip."""

import threading
import time
from unittest import mock
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from market.core.locks import check_order, recording
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create, purchase_release
from releases.models import NoisePoint, Release

from tests.fixtures.market import needs_postgres

pytestmark = pytest.mark.django_db

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def _statements(ctx) -> list[str]:
    """The SQL statements captured, without transaction control."""
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].upper().startswith(CONTROL)]


def _lost_task(buyer, listing, level, django_capture_on_commit_callbacks):
    """A purchase whose release task never ran (its on-commit callback is dropped)."""
    with django_capture_on_commit_callbacks(execute=False):
        return purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level).purchase


def test_a_purchase_takes_at_most_eight_statements_and_a_release_eleven(
    listing, buyer, fund, seeded_noise, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    first = _lost_task(buyer, listing, "0.5", django_capture_on_commit_callbacks)
    purchase_release(purchase_id=first.pk)  # the holding and both accounts exist from now on
    with django_capture_on_commit_callbacks(execute=False), CaptureQueriesContext(connection) as bought:
        second = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1").purchase
    with CaptureQueriesContext(connection) as released:
        purchase_release(purchase_id=second.pk)
    assert len(_statements(bought)) <= 8, "\n".join(_statements(bought))
    # the release: its claim, then its transaction (ten, the last noting its webhook events in the outbox)
    assert len(_statements(released)) <= 11, "\n".join(_statements(released))
    second.refresh_from_db()
    assert second.status == "released" and Release.objects.filter(purchase=second, level=Decimal("1")).exists()


def test_one_release_transaction_serves_every_queued_purchase_of_the_listing(
    listing, users, fund, seeded_noise, django_capture_on_commit_callbacks
):
    buyers = [users(f"batch-{i}") for i in range(4)]
    for who in buyers:
        fund(who, 100)
    levels = ["0.5", "2", "1", "2"]  # two buyers on one level: one point serves both
    purchases = [_lost_task(who, listing, level, django_capture_on_commit_callbacks) for who, level in zip(buyers, levels)]
    with recording() as locks:
        release = purchase_release(purchase_id=purchases[2].pk)
    check_order(locks)  # path, then the holdings, then the purchases
    assert release.purchase_id == purchases[2].pk and release.level == Decimal("1")
    assert Purchase.objects.filter(status="released").count() == 4
    assert NoisePoint.objects.filter(path__listing=listing).count() == 3
    for who, purchase, level in zip(buyers, purchases, levels):
        made = Release.objects.get(purchase=purchase)
        assert made.level == Decimal(level) and made.buyer_id == who.pk
        assert Holding.objects.get(buyer=who, listing=listing).released == Decimal(level)
    twins = Release.objects.filter(level=Decimal("2"))
    assert len({r.point_id for r in twins}) == 1 and len({tuple(r.values) for r in twins}) == 1
    # the other purchases' own tasks find them released and make nothing
    points = NoisePoint.objects.count()
    for purchase in purchases:
        assert purchase_release(purchase_id=purchase.pk) == Release.objects.get(purchase=purchase)
    assert NoisePoint.objects.count() == points and Release.objects.count() == 4


@pytest.mark.django_db(transaction=True)  # the purchase commits, and its task runs (eagerly) at the commit
def test_prefer_wait_answers_with_the_release(make_listing, users, fund, api, eager_celery):
    listing, buyer = make_listing(), users("eager")
    fund(buyer, 100)
    client = api(buyer)
    answer = client.post(
        "/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json", HTTP_PREFER="wait=5"
    )
    assert answer.status_code == 201, answer.content  # bought and released within the wait
    assert answer["Preference-Applied"] == "wait=5"
    body = answer.json()
    assert body["status"] == "released" and body["release"]["level"] == "1.0000"
    again = client.get(f"/api/v1/purchases/{body['id']}/", HTTP_PREFER="wait=5")
    assert again.status_code == 200 and again.json()["release"]["id"] == body["release"]["id"]
    plain = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "2"}, format="json")
    assert plain.status_code == 202 and "Preference-Applied" not in plain  # no wait asked: answered at once


def test_prefer_wait_gives_up_after_its_seconds_and_reads_the_purchase_as_it_is(
    listing, buyer, fund, api, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    purchase = _lost_task(buyer, listing, "1", django_capture_on_commit_callbacks)
    start = time.monotonic()
    answer = api(buyer).get(f"/api/v1/purchases/{purchase.pk}/", HTTP_PREFER="wait=1")
    took = time.monotonic() - start
    assert took >= 0.9, (took, answer.content)
    assert answer.status_code == 200 and answer.json()["status"] == "queued" and answer["Preference-Applied"] == "wait=1"
    # another buyer's purchase is 404 at once, without waiting
    start = time.monotonic()
    assert api().get(f"/api/v1/purchases/{purchase.pk}/", HTTP_PREFER="wait=5").status_code in (401, 403, 404)
    assert time.monotonic() - start < 1


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_waiting_client_wakes_when_the_release_commits(make_listing, users, fund, api):
    listing = make_listing()
    buyer = users("waiter")
    fund(buyer, 100)
    with mock.patch("market.trading.services.purchase_queue", return_value=True):  # the task is "lost"
        purchase = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1").purchase
    seen = {}

    def wait():
        start = time.monotonic()
        seen["answer"] = api(buyer).get(f"/api/v1/purchases/{purchase.pk}/", HTTP_PREFER="wait=20").json()
        seen["took"] = time.monotonic() - start
        connection.close()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    purchase_release(purchase_id=purchase.pk)
    waiter.join(30)
    assert seen["answer"]["status"] == "released"
    assert seen["took"] < 10  # woken by the release, not by the end of its 20 s


def test_every_rate_limit_of_a_request_is_counted_in_one_cache_round_trip(make_listing, buyer, fund, api, monkeypatch):
    from django.core.cache import cache

    from market.api.throttling import RateLimits

    cache.clear()
    monkeypatch.setattr(RateLimits, "RATES", {"user": "1000/day", "anon": "1000/day", "purchases": "2/day", "auth": None})
    fund(buyer, 100)
    client = api(buyer)
    trips = []
    if settings.REDIS_URL:
        from redis.client import Pipeline

        real = Pipeline.execute

        def counted(self, *args, **kwargs):
            trips.append(len(self.command_stack))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(Pipeline, "execute", counted)
        before = len(trips)
        assert client.get("/api/v1/wallet/").status_code == 200
        assert trips[before:] == [2]  # the user's limit: INCR and EXPIRE, one round trip
        before = len(trips)
    listings = [make_listing() for _ in range(3)]  # one purchase on each: none waits for another's release
    for listing in listings[:2]:
        assert client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json").status_code == 202
    if settings.REDIS_URL:
        assert trips[before:] == [4, 4]  # the user's and the purchases' limits together
    # the third purchase of the day is over the purchases limit: 429 in the one error shape, nothing bought
    refused = client.post("/api/v1/purchases/", {"listing": listings[2].pk, "epsilon": "1"}, format="json")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) > 0 and Purchase.objects.count() == 2
    cache.clear()


@pytest.mark.django_db(transaction=True)  # purchases commit, so their tasks are sent at the commit
def test_purchases_on_a_listing_with_a_release_task_waiting_send_no_task_of_their_own(
    make_listing, users, fund, seeded_noise, monkeypatch
):
    from django.core.cache import cache

    from market.trading.tasks import purchase_release_task

    cache.clear()
    listing = make_listing()
    buyers = [users(f"flag-{i}") for i in range(3)]
    for who in buyers:
        fund(who, 100)
    sent = []
    monkeypatch.setattr(purchase_release_task, "delay", lambda *args: sent.append(args))
    for who in buyers:
        purchase_create(buyer=who, listing_id=listing.pk, epsilon="1")
    if settings.REDIS_URL:  # a shared cache holds the listing's flag: one task for the three
        assert len(sent) == 1 and sent[0][1] == listing.pk
    else:  # web and worker share no cache: every purchase sends its task
        assert len(sent) == 3
    # the one task releases all three (it lowers the flag first: the next purchase sends a task again)
    purchase_release(purchase_id=sent[0][0], listing_id=sent[0][1])
    assert Purchase.objects.filter(listing=listing, status="released").count() == 3
    late = users("late")
    fund(late, 100)
    purchase_create(buyer=late, listing_id=listing.pk, epsilon="1")
    assert len(sent) == (2 if settings.REDIS_URL else 4)
    cache.clear()


def test_the_privacy_figures_are_stored_with_the_release_and_read_back(
    listing, buyer, fund, api, seeded_noise, django_capture_on_commit_callbacks, monkeypatch
):
    from market.catalog import risk

    fund(buyer, 100)
    purchase = _lost_task(buyer, listing, "1", django_capture_on_commit_callbacks)
    release = purchase_release(purchase_id=purchase.pk)
    expected = risk.level_at_risk(listing, Decimal("1"))
    assert release.privacy_at_risk["gamma"] == expected["gamma"]
    assert release.privacy_at_risk["epsilon0"] == "1.0000" and release.privacy_at_risk["dimension"] == expected["dimension"]

    def not_again(*args, **kwargs):
        raise AssertionError("the figures were computed again on a read")

    monkeypatch.setattr("market.api.serializers.readings.level_at_risk", not_again)
    shown = api(buyer).get(f"/api/v1/purchases/{purchase.pk}/").json()["release"]["privacy_at_risk"]
    assert shown["gamma"] == expected["gamma"] and shown["epsilon0"] == "1.0000"


@pytest.mark.django_db(transaction=True)  # revocations commit, as in production
def test_a_remembered_api_key_signs_in_without_a_query_and_a_revocation_applies_at_once(users):
    from django.core.cache import cache
    from rest_framework.test import APIClient

    from market.accounts.services import api_key_create, api_key_revoke, api_keys_revoke_all, user_role_add

    cache.clear()
    buyer = users("keyed")
    key, secret = api_key_create(user=buyer, name="cli")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def wallet_queries():
        with CaptureQueriesContext(connection) as ctx:
            answer = client.get("/api/v1/wallet/")
        return answer.status_code, [q["sql"] for q in ctx.captured_queries if "accounts_apikey" in q["sql"]]

    status, first = wallet_queries()
    assert status == 200 and first  # looked up in the database, then remembered (with Redis)
    status, second = wallet_queries()
    assert status == 200
    if settings.REDIS_URL:
        assert second == []  # remembered: no query for the key
        from redis import Redis
        from redis.client import Pipeline

        trips = []
        real_eval, real_execute = Redis.eval, Pipeline.execute
        with mock.patch.object(Redis, "eval", lambda self, *a, **k: trips.append("eval") or real_eval(self, *a, **k)), \
                mock.patch.object(Pipeline, "execute", lambda self, *a, **k: trips.append("pipe") or real_execute(self, *a, **k)):
            assert client.get("/api/v1/wallet/").status_code == 200
        assert trips == ["eval"]  # the key and the user's rate limit: one round trip
    else:
        assert second  # nothing is remembered without Redis
    # a role given (the remembered key carries its user) and a revocation both apply at once
    user_role_add(user=buyer, role="owner")
    assert client.get("/api/v1/wallet/").status_code == 200
    api_key_revoke(user=buyer, key_id=key.pk)
    assert client.get("/api/v1/wallet/").status_code == 401
    other, secret2 = api_key_create(user=buyer, name="second")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret2}")
    assert client.get("/api/v1/wallet/").status_code == 200 and client.get("/api/v1/wallet/").status_code == 200
    api_keys_revoke_all(user=buyer)
    assert client.get("/api/v1/wallet/").status_code == 401
    _, secret3 = api_key_create(user=buyer, name="third")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret3}")
    assert client.get("/api/v1/wallet/").status_code == 200 and client.get("/api/v1/wallet/").status_code == 200
    buyer.is_active = False
    buyer.save()
    assert client.get("/api/v1/wallet/").status_code == 401
    cache.clear()
