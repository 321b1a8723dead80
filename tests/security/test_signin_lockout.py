"""Sign-ins limited per account, across addresses: after LOGIN_FAILURE_LIMIT failures
the account is locked (even for the right password) until a time the user is told,
on the API's token exchange, the login page and the admin's login page alike."""

import re
import time

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from tests.security.conftest import PASSWORD, users  # noqa: F401 - fixtures

TOKEN = "/api/v1/auth/token/"
LOGIN = "/accounts/login/"
LIMIT = 4


@pytest.fixture
def limits(settings):
    cache.clear()
    settings.LOGIN_FAILURE_LIMIT = LIMIT
    settings.LOGIN_FAILURE_WINDOW = 900
    settings.LOGIN_LOCKOUT_SECONDS = 900
    yield settings
    cache.clear()


@pytest.fixture
def bob(users):
    return users("bob")


def address(i):
    return f"198.51.100.{i + 1}"


def api_sign_in(username, password, i):
    return APIClient(REMOTE_ADDR=address(i)).post(TOKEN, {"username": username, "password": password}, format="json")


def page_sign_in(username, password, i, path=LOGIN):
    client = Client(REMOTE_ADDR=address(i))
    return client, client.post(path, {"username": username, "password": password})


def assert_locked(response, lockout=900):
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "too_many_attempts" and error["status"] == 429
    wait = int(response["Retry-After"])
    assert lockout - 5 <= wait <= lockout
    until = time.gmtime(time.time() + wait)
    assert time.strftime("%H:%M", until) in error["message"] and "UTC" in error["message"]
    return error


def test_the_api_locks_an_account_across_addresses(limits, bob):
    for i in range(LIMIT):  # each guess from a new address: the per-address throttle never sees two
        assert api_sign_in("bob", "wrong", i).status_code == 400
    assert_locked(api_sign_in("bob", PASSWORD, 50))  # the right password, from yet another address
    assert_locked(api_sign_in("bob", "wrong", 51))
    # other accounts are not affected
    assert api_sign_in("nobody", "wrong", 52).status_code == 400


def test_case_variants_of_a_username_share_one_count(limits, bob):
    for i, name in enumerate(["bob", "BOB", "Bob", "bOb"]):
        assert api_sign_in(name, "wrong", i).status_code == 400
    assert_locked(api_sign_in("bob", PASSWORD, 9))


def test_a_success_before_the_lockout_clears_the_count(limits, bob):
    for i in range(LIMIT - 1):
        assert api_sign_in("bob", "wrong", i).status_code == 400
    assert api_sign_in("bob", PASSWORD, 10).status_code == 200
    for i in range(LIMIT - 1):
        assert api_sign_in("bob", "wrong", 20 + i).status_code == 400
    assert api_sign_in("bob", PASSWORD, 30).status_code == 200


def test_the_lockout_ends_by_itself(limits, bob):
    limits.LOGIN_LOCKOUT_SECONDS = 1
    for i in range(LIMIT):
        api_sign_in("bob", "wrong", i)
    assert_locked(api_sign_in("bob", PASSWORD, 10), lockout=1)
    time.sleep(1.2)
    assert api_sign_in("bob", PASSWORD, 11).status_code == 200


def test_the_login_page_locks_an_account_and_says_until_when(limits, bob):
    for i in range(LIMIT):
        _, page = page_sign_in("bob", "wrong", i)
        assert page.status_code == 200 and "correct username and password" in page.content.decode()
    client, page = page_sign_in("bob", PASSWORD, 40)
    assert page.status_code == 429 and int(page["Retry-After"]) > 800
    text = page.content.decode()
    assert "locked until" in text and re.search(r"\d\d:\d\d:\d\d UTC", text)
    assert '<ul class="errorlist" role="alert">' in text  # in the form's errors
    assert "_auth_user_id" not in client.session  # not signed in


def test_a_page_sign_in_before_the_lockout_clears_the_count(limits, bob):
    for i in range(LIMIT - 1):
        page_sign_in("bob", "wrong", i)
    _, page = page_sign_in("bob", PASSWORD, 10)
    assert page.status_code == 302
    for i in range(LIMIT - 1):
        page_sign_in("bob", "wrong", 20 + i)
    client, page = page_sign_in("bob", PASSWORD, 30)
    assert page.status_code == 302 and client.session["_auth_user_id"] == str(bob.pk)


def test_the_page_and_the_api_share_one_count(limits, bob):
    for i in range(LIMIT // 2):
        page_sign_in("bob", "wrong", i)
    for i in range(LIMIT - LIMIT // 2):
        api_sign_in("bob", "wrong", 10 + i)
    assert_locked(api_sign_in("bob", PASSWORD, 20))
    _, page = page_sign_in("bob", PASSWORD, 21)
    assert page.status_code == 429


def test_the_admin_login_is_limited_too(limits, users):
    staff = users("sam")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    for i in range(LIMIT):
        page_sign_in("sam", "wrong", i, path="/admin/login/")
    client, page = page_sign_in("sam", PASSWORD, 10, path="/admin/login/")
    assert "locked until" in page.content.decode()
    assert "_auth_user_id" not in client.session
