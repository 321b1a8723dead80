"""What a greedy client may hold at once: concurrency slots (market/core/slots.py), the upload
slots taken before a body is read (market/web/edge.py) and the limit on open ``Prefer: wait``s
(market/trading/waits.py)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from market.accounts.services import api_key_create
from market.catalog.models import Dataset
from market.core import slots
from market.core.cache import Unavailable
from market.core.slots import Limit, SlotsFull, slot_give, slot_hold, slot_take
from market.trading.services import purchase_create
from tests.security.conftest import PASSWORD, buyer, fund, listing, make_listing, owner, users  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clean_slots():
    cache.clear()
    yield
    cache.clear()


# --- the slots themselves
def _no_redis(operation):
    raise Unavailable("no Redis")


@pytest.mark.parametrize("backend", ["redis", "process"])
def test_a_slot_is_refused_past_any_of_its_limits_and_free_again_once_given_back(backend, monkeypatch):
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    if backend == "process":
        monkeypatch.setattr(slots, "in_redis", _no_redis)
    owner_a = [Limit("t:owner:a", 2), Limit("t:all", 3)]
    owner_b = [Limit("t:owner:b", 2), Limit("t:all", 3)]
    first, second = slot_take(limits=owner_a, ttl=60), slot_take(limits=owner_a, ttl=60)
    with pytest.raises(SlotsFull) as full:
        slot_take(limits=owner_a, ttl=60)
    assert full.value.limit.key == "t:owner:a"
    third = slot_take(limits=owner_b, ttl=60)  # b has its own count, the deployment one left
    with pytest.raises(SlotsFull) as full:
        slot_take(limits=owner_b, ttl=60)
    assert full.value.limit.key == "t:all"
    slot_give(first)
    again = slot_take(limits=owner_b, ttl=60)  # nothing of the refused takes was kept
    for slot in (second, third, again):
        slot_give(slot)
    with slot_hold(limits=owner_a, ttl=60) as held:
        assert held is not None


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis (REDIS_URL)")
def test_a_slot_its_process_never_gave_back_expires_after_its_ttl(monkeypatch):
    limit = [Limit("t:expiring", 1)]
    slot_take(limits=limit, ttl=30)  # its process "died": never given back
    with pytest.raises(SlotsFull):
        slot_take(limits=limit, ttl=30)
    real = slots.time.time
    monkeypatch.setattr(slots.time, "time", lambda: real() + 31)
    slot_give(slot_take(limits=limit, ttl=30))


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis (REDIS_URL)")
def test_when_redis_fails_slots_are_counted_in_the_process_never_an_error(monkeypatch):
    import redis
    from django.core.cache import caches

    class Broken:  # every command fails
        def __getattr__(self, name):
            def command(*args, **kwargs):
                raise redis.ConnectionError("Redis is down")

            return command

    backend = caches["default"]
    backend.breaker.reset()
    monkeypatch.setattr(backend._cache, "get_client", lambda *args, **kwargs: Broken())  # the cache's own client
    monkeypatch.setattr(backend.breaker, "cooldown", 0)
    limit = [Limit("t:fallback", 1)]
    taken = slot_take(limits=limit, ttl=60)
    assert slots.slots_held("t:fallback") == 1
    with pytest.raises(SlotsFull):
        slot_take(limits=limit, ttl=60)
    slot_give(taken)
    assert slots.slots_held("t:fallback") == 0
    backend.breaker.reset()


# --- uploads: refused before the body is read
def _upload(name="visits"):
    return {"name": name, "description": "", "total_budget": "2", "relation": "private_size",
            "file": SimpleUploadedFile("v.csv", b"age\n30\n31\n", content_type="text/csv")}


def _hold_uploads(who: str, n: int):
    return [slot_take(limits=[Limit(f"upload:{who}", 99)], ttl=60) for _ in range(n)]


def test_an_owner_s_third_upload_at_once_is_429_before_its_body_is_read(owner, settings):
    settings.UPLOAD_MAX_CONCURRENT_PER_OWNER = 2
    _, secret = api_key_create(user=owner, name="uploads")
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
    held = _hold_uploads(f"user:{owner.pk}", 2)  # two of the owner's uploads still arriving
    with mock.patch("rest_framework.request.Request._load_data_and_files") as parsed:
        answer = client.post("/api/v1/datasets/", _upload(), format="multipart")
    assert answer.status_code == 429, answer.content
    assert not parsed.called  # the body was never parsed
    error = answer.json()["error"]
    assert error["code"] == "too_many_uploads" and "2 uploads in progress" in error["message"]
    assert int(answer["Retry-After"]) >= 1
    assert not Dataset.objects.filter(owner=owner).exists()
    slot_give(held.pop())
    assert client.post("/api/v1/datasets/", _upload(), format="multipart").status_code == 202
    # the upload's own slot was given back: with one still held, the owner's second is free
    held.append(slot_take(limits=[Limit(f"upload:user:{owner.pk}", 2)], ttl=60))
    for slot in held:
        slot_give(slot)


def test_the_deployment_wide_limit_refuses_any_owner(owner, users, settings):
    settings.UPLOAD_MAX_CONCURRENT = 2
    held = [slot_take(limits=[Limit("upload:all", 99)], ttl=60) for _ in range(2)]
    client = APIClient()
    client.force_authenticate(owner)
    answer = client.post("/api/v1/datasets/", _upload(), format="multipart")
    assert answer.status_code == 429 and "receiving 2 uploads already" in answer.json()["error"]["message"]
    for slot in held:
        slot_give(slot)


def test_the_page_refuses_before_the_csrf_check_reads_the_body(owner, settings):
    """Django's CSRF check reads a form's body: the page's refusal comes first (without a token
    this would otherwise be the CSRF 403), with a page that says why."""
    settings.UPLOAD_MAX_CONCURRENT_PER_OWNER = 1
    client = Client(enforce_csrf_checks=True)
    client.login(username=owner.username, password=PASSWORD)
    held = _hold_uploads(f"user:{owner.pk}", 1)
    with mock.patch("django.http.request.HttpRequest._load_post_and_files") as parsed:
        answer = client.post("/owner/datasets/new/", _upload())
    assert answer.status_code == 429
    assert not parsed.called
    assert "You already have 1 uploads in progress" in answer.content.decode()
    assert "Nothing of this upload was received or kept." in answer.content.decode()
    slot_give(held.pop())


# --- Prefer: wait held open at once
@pytest.fixture
def queued(buyer, listing, fund, django_capture_on_commit_callbacks):
    """A purchase whose release never comes (its task is dropped): a wait on it lasts its seconds."""
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=False):
        return purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1").purchase


def _ask(buyer, purchase):
    client = APIClient()
    client.force_authenticate(buyer)
    return client.get(f"/api/v1/purchases/{purchase.pk}/", HTTP_PREFER="wait=1")


def test_a_buyer_past_their_open_waits_is_answered_at_once_without_waiting(buyer, queued, settings):
    settings.WAIT_MAX_PER_BUYER = 2
    held = [slot_take(limits=[Limit(f"wait:buyer:{buyer.pk}", 99)], ttl=60) for _ in range(2)]
    with mock.patch("market.trading.selectors.release_wait") as waited:
        answer = _ask(buyer, queued)
    assert answer.status_code == 200 and answer.json()["status"] == "queued"
    assert not waited.called
    assert "Preference-Applied" not in answer and answer["Retry-After"] == "1"
    slot_give(held.pop())
    with mock.patch("market.trading.selectors.release_wait") as waited:
        answer = _ask(buyer, queued)
    assert waited.called and answer["Preference-Applied"] == "wait=1"
    assert slots.slots_held("wait:process") == 0  # given back after the wait
    slot_give(held.pop())


def test_a_process_past_its_open_waits_answers_every_buyer_at_once(buyer, queued, settings):
    settings.WAIT_MAX_PER_PROCESS = 3
    held = [slot_take(limits=[Limit("wait:process", 99, local=True)], ttl=60) for _ in range(3)]
    with mock.patch("market.trading.selectors.release_wait") as waited:
        answer = _ask(buyer, queued)
    assert not waited.called and "Preference-Applied" not in answer
    for slot in held:
        slot_give(slot)


def test_a_post_with_prefer_wait_is_bought_and_answered_at_once_when_no_wait_is_free(buyer, listing, fund, settings):
    settings.WAIT_MAX_PER_BUYER = 1
    fund(buyer, 100)
    held = slot_take(limits=[Limit(f"wait:buyer:{buyer.pk}", 99)], ttl=60)
    client = APIClient()
    client.force_authenticate(buyer)
    with mock.patch("market.trading.selectors.release_wait") as waited:
        answer = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json",
                             HTTP_PREFER="wait=5")
    assert answer.status_code in (201, 202) and not waited.called  # bought all the same
    assert "Preference-Applied" not in answer
    slot_give(held)
