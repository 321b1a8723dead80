"""Throttles key on the client's address, which a client cannot choose by sending
X-Forwarded-For: the header counts only behind TRUSTED_PROXY_COUNT proxies of our own."""

import pytest
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.test import APIClient
from market.api.throttling import RateLimits

from market.core.clients import client_address

TOKEN = "/api/v1/auth/token/"


@pytest.fixture
def tight_auth_throttle(db, monkeypatch):
    """Five sign-in attempts a day per address; the other rates out of the way."""
    cache.clear()
    monkeypatch.setattr(  # per day: no window edge falls inside the test
        RateLimits, "RATES", {"auth": "5/day", "anon": "100000/day", "user": "100000/day", "purchases": "100000/day"}
    )
    yield
    cache.clear()


def wrong_password(client, i, **headers):
    # a different unknown username each time: the per-account lockout stays out of it
    return client.post(TOKEN, {"username": f"nobody-{i}", "password": "wrong"}, format="json", **headers)


def test_a_forged_forwarded_for_does_not_escape_the_throttle(tight_auth_throttle):
    client = APIClient()
    assert [wrong_password(client, i).status_code for i in range(5)] == [400] * 5
    assert wrong_password(client, 5).status_code == 429
    # the repro of issue 10: a new X-Forwarded-For on every request
    answers = [wrong_password(client, 100 + i, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code for i in range(20)]
    assert answers == [429] * 20
    throttled = wrong_password(client, 200, HTTP_X_FORWARDED_FOR="203.0.113.250")
    assert throttled.json()["error"]["code"] == "throttled" and int(throttled["Retry-After"]) > 0


def test_behind_one_trusted_proxy_the_rightmost_entry_is_the_client(tight_auth_throttle, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    client = APIClient()  # REMOTE_ADDR 127.0.0.1: our proxy
    # the client forges the left part; our proxy appended the address it saw
    forged = [
        wrong_password(client, i, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}, 198.51.100.7").status_code for i in range(8)
    ]
    assert forged == [400] * 5 + [429] * 3
    # another client behind the same proxy has its own allowance
    assert wrong_password(client, 50, HTTP_X_FORWARDED_FOR="198.51.100.8").status_code == 400


@pytest.mark.parametrize(
    ("trusted", "forwarded", "remote", "expected"),
    [
        (0, "203.0.113.9", "192.0.2.1", "192.0.2.1"),  # no proxy trusted: the header is ignored
        (0, None, "192.0.2.1", "192.0.2.1"),
        (1, "203.0.113.9", "192.0.2.1", "203.0.113.9"),
        (1, "1.2.3.4, 203.0.113.9", "192.0.2.1", "203.0.113.9"),  # the left part is the client's own words
        (2, "1.2.3.4, 203.0.113.9, 10.0.0.2", "10.0.0.3", "203.0.113.9"),
        (2, "203.0.113.9", "192.0.2.1", "192.0.2.1"),  # shorter than the proxies: not theirs
        (1, None, "192.0.2.1", "192.0.2.1"),
        (1, "not-an-address", "192.0.2.1", "192.0.2.1"),  # malformed: the socket's address
        (1, "", "192.0.2.1", "192.0.2.1"),
        (1, " 2001:DB8::1 ", "192.0.2.1", "2001:db8::1"),
        (1, "198.51.100.7:4711", "192.0.2.1", "198.51.100.7"),
        (1, "[2001:db8::2]:443", "192.0.2.1", "2001:db8::2"),
    ],
)
def test_client_address(settings, trusted, forwarded, remote, expected):
    settings.TRUSTED_PROXY_COUNT = trusted
    headers = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_address(RequestFactory().get("/", **headers)) == expected
