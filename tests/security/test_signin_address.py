"""Sign-ins limited per client address: password spraying (one password tried on many accounts
from one address) is stopped after LOGIN_ADDRESS_LIMIT failures, without the password being checked,
on the login page and on the API's token exchange alike."""

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from tests.security.conftest import PASSWORD, users  # noqa: F401 - fixtures

LOGIN = "/accounts/login/"
TOKEN = "/api/v1/auth/token/"
LIMIT = 10
SPRAYER = "203.0.113.9"


@pytest.fixture
def limits(settings):
    cache.clear()
    settings.LOGIN_ADDRESS_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_WINDOW = 900
    settings.LOGIN_FAILURE_LIMIT = 10  # per account: never reached here (one try per username)
    yield settings
    cache.clear()


def test_spraying_120_usernames_from_one_address_is_stopped_after_the_limit(limits, users):
    users("victim")  # its password is PASSWORD: the sprayer's one password, tried last
    client = Client(REMOTE_ADDR=SPRAYER)
    statuses = [client.post(LOGIN, {"username": f"user{i}", "password": PASSWORD}).status_code for i in range(120)]
    assert statuses[:LIMIT] == [200] * LIMIT  # the form again, "wrong username or password"
    assert set(statuses[LIMIT:]) == {429}
    refused = client.post(LOGIN, {"username": "victim", "password": PASSWORD})  # the right password: not checked
    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    wait = int(refused["Retry-After"])
    assert 1 <= wait <= 900
    minutes = -(-wait // 60)
    assert f"Too many sign-in attempts from your address; try again in {minutes} minute" in refused.content.decode()
    # another address is not affected, and signs in
    other = Client(REMOTE_ADDR="203.0.113.10")
    assert other.post(LOGIN, {"username": "victim", "password": PASSWORD}).status_code == 302


def test_the_address_is_the_socket_s_not_a_header_the_client_writes(limits, users):
    users("victim")
    for i in range(LIMIT):
        forged = Client(REMOTE_ADDR=SPRAYER, HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
        assert forged.post(LOGIN, {"username": f"user{i}", "password": "guess"}).status_code == 200
    forged = Client(REMOTE_ADDR=SPRAYER, HTTP_X_FORWARDED_FOR="198.51.100.200")
    assert forged.post(LOGIN, {"username": "victim", "password": PASSWORD}).status_code == 429


def test_the_token_exchange_is_limited_per_address_too(limits, users):
    users("victim")
    client = APIClient(REMOTE_ADDR=SPRAYER)
    for i in range(LIMIT):
        assert client.post(TOKEN, {"username": f"user{i}", "password": "guess"}, format="json").status_code == 400
    answer = client.post(TOKEN, {"username": "victim", "password": PASSWORD}, format="json")
    assert answer.status_code == 429
    error = answer.json()["error"]
    assert error["code"] == "too_many_attempts" and "from your address" in error["message"]
    assert int(answer["Retry-After"]) >= 1


def test_the_token_exchange_throttle_scope_counts_per_address(limits, users, settings):
    """The ``auth`` throttle (requests, not failures) is counted per client address for a request
    not signed in: another address has its own count."""
    from market.api.throttling import RateLimits

    original = dict(RateLimits.RATES)
    RateLimits.RATES = {**original, "auth": "3/minute", "anon": None}
    try:
        first = APIClient(REMOTE_ADDR="203.0.113.20")
        codes = [first.post(TOKEN, {"username": "x", "password": "y"}, format="json").status_code for _ in range(4)]
        assert codes == [400, 400, 400, 429]
        forged = APIClient(REMOTE_ADDR="203.0.113.20", HTTP_X_FORWARDED_FOR="198.51.100.1")
        assert forged.post(TOKEN, {"username": "x", "password": "y"}, format="json").status_code == 429
        other = APIClient(REMOTE_ADDR="203.0.113.21")
        assert other.post(TOKEN, {"username": "x", "password": "y"}, format="json").status_code == 400
    finally:
        RateLimits.RATES = original
