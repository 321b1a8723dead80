"""API keys: their format, how they are stored, and what the API does with them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from market.accounts.keycache import keys_forget
from market.accounts import keys
from market.accounts.models import ApiKey
from market.accounts.selectors import api_key_for_secret
from market.accounts.services import api_key_create, api_key_revoke, api_keys_revoke_all
from tests.marketplace.test_api import assert_error
from tests.paging import every

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

WALLET = "/api/v1/wallet/"
SECRET = re.compile(r"^gradual_[0-9A-Za-z]{46}$")
KEY_ID = re.compile(r"^key_[0-9A-Za-z]{22}$")


def assert_401(response):
    error = assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer"), response.headers
    return error


def create(client, **body):
    answer = client.post("/api/v1/keys/", body, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()


# --- format, checksum, storage


def test_secrets_are_prefixed_random_and_carry_a_checksum():
    made = {keys.new_secret() for _ in range(200)}
    assert len(made) == 200
    for secret in made:
        assert SECRET.match(secret) and keys.well_formed(secret)
    secret = made.pop()
    body = secret[len("gradual_"):]
    # any one character changed is caught by the checksum, without a query
    for i in range(len(body)):
        other = "A" if body[i] != "A" else "B"
        assert not keys.well_formed("gradual_" + body[:i] + other + body[i + 1:])
    for bad in ["", "gradual_", secret[:-1], secret + "x", "github_" + body, secret.replace("gradual_", "GRADUAL_"),
                secret[:-3] + "é" + secret[-2:], 12345, None]:
        assert not keys.well_formed(bad)
    ids = {keys.new_id() for _ in range(200)}
    assert len(ids) == 200 and all(KEY_ID.match(i) for i in ids)


def test_a_malformed_key_is_refused_without_a_query(django_assert_num_queries):
    secret = keys.new_secret()
    broken = secret[:-1] + ("a" if secret[-1] != "a" else "b")
    with django_assert_num_queries(0):
        assert api_key_for_secret(broken) is None


def test_only_a_hash_of_the_secret_is_stored(api, buyer):
    made = create(api(buyer), name="laptop")
    secret = made["secret"]
    key = ApiKey.objects.get(pk=made["id"])
    assert key.secret_hash == keys.digest(secret) and len(key.secret_hash) == 64
    assert key.prefix == secret[:12] and made["prefix"] == key.prefix
    # the secret is in no column of the table (nor any long piece of it)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiKey._meta.db_table}")
        stored = " ".join(str(v) for row in cursor.fetchall() for v in row)
    assert secret not in stored and secret[12:] not in stored and secret[12:30] not in stored
    # and the API shows it only when it is made
    listed = api(buyer).get("/api/v1/keys/").json()["results"]
    assert [k["id"] for k in listed] == [made["id"]] and "secret" not in listed[0]
    assert secret not in api(buyer).get(f"/api/v1/keys/{made['id']}/").content.decode()


def test_the_pepper_is_part_of_the_hash(settings, buyer):
    key, secret = api_key_create(user=buyer, name="before")
    assert api_key_for_secret(secret) == key
    settings.API_KEY_PEPPER = "another-pepper"
    assert api_key_for_secret(secret) is None


# --- the API: create, list, use, revoke, rotate


def test_create_list_use_revoke(api, bearer, buyer):
    client = api(buyer)
    made = create(client, name="nightly report", expires_in_days=30)
    assert KEY_ID.match(made["id"]) and SECRET.match(made["secret"])
    assert made["name"] == "nightly report" and made["status"] == "active"
    assert made["revoked_at"] is None and made["last_used_at"] is None
    expires = timezone.datetime.fromisoformat(made["expires_at"])
    assert timedelta(days=29, hours=23) < expires - timezone.now() <= timedelta(days=30)
    assert bearer(made["secret"]).get(WALLET).json() == {"balance": "0.00", "currency": "credits"}
    assert bearer(made["secret"], "Token").get(WALLET).status_code == 200  # the older clients' scheme
    assert bearer(made["secret"], "bearer").get(WALLET).status_code == 200
    assert len(every(client, "/api/v1/keys/")) == 1

    assert client.delete(f"/api/v1/keys/{made['id']}/").status_code == 204
    assert_401(bearer(made["secret"]).get(WALLET))
    assert client.get(f"/api/v1/keys/{made['id']}/").json()["status"] == "revoked"
    assert client.delete(f"/api/v1/keys/{made['id']}/").status_code == 204  # again: nothing changes


def test_create_takes_strict_input(api, buyer):
    client = api(buyer)
    assert_error(client.post("/api/v1/keys/", {}, format="json"), 400, field="name")
    assert_error(client.post("/api/v1/keys/", {"name": "x", "scope": "all"}, format="json"), 400, field="scope")
    at = (timezone.now() + timedelta(days=2)).isoformat()
    assert_error(client.post("/api/v1/keys/", {"name": "x", "expires_in_days": 2, "expires_at": at}, format="json"), 400, field="expires_at")
    for days in [0, -1, 3651, True, 2.5, "7"]:
        assert_error(client.post("/api/v1/keys/", {"name": "x", "expires_in_days": days}, format="json"), 400, field="expires_in_days")
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    assert_error(client.post("/api/v1/keys/", {"name": "x", "expires_at": past}, format="json"), 400, field="expires_at")
    assert_error(client.post("/api/v1/keys/", {"name": "x" * 101}, format="json"), 400, field="name")
    assert_error(client.post("/api/v1/keys/", ["x"], format="json"), 400)
    assert not ApiKey.objects.exists()
    made = create(client, name="until", expires_at=at)
    assert made["expires_at"] is not None


def test_rotate_at_once_and_with_a_grace_period(api, bearer, buyer):
    client = api(buyer)
    old = create(client, name="ci", expires_in_days=10)
    answer = client.post(f"/api/v1/keys/{old['id']}/rotate/", {}, format="json")
    assert answer.status_code == 201, answer.content
    new = answer.json()
    assert new["id"] != old["id"] and new["secret"] != old["secret"]
    assert new["name"] == "ci" and new["expires_at"] == old["expires_at"]
    assert_401(bearer(old["secret"]).get(WALLET))
    assert bearer(new["secret"]).get(WALLET).status_code == 200
    # a revoked key cannot be rotated
    assert_error(client.post(f"/api/v1/keys/{old['id']}/rotate/", {}, format="json"), 409)

    graceful = client.post(f"/api/v1/keys/{new['id']}/rotate/", {"grace_seconds": 3600}, format="json").json()
    assert bearer(new["secret"]).get(WALLET).status_code == 200  # still, for an hour
    assert bearer(graceful["secret"]).get(WALLET).status_code == 200
    shown = client.get(f"/api/v1/keys/{new['id']}/").json()
    assert shown["status"] == "rotating"
    left = timezone.datetime.fromisoformat(shown["revoked_at"]) - timezone.now()
    assert timedelta(minutes=59) < left <= timedelta(hours=1)
    # already rotated: not again; but it can be revoked at once
    assert_error(client.post(f"/api/v1/keys/{new['id']}/rotate/", {}, format="json"), 409)
    assert client.delete(f"/api/v1/keys/{new['id']}/").status_code == 204
    assert_401(bearer(new["secret"]).get(WALLET))


def test_rotate_takes_strict_input(api, buyer):
    client = api(buyer)
    made = create(client, name="ci")
    for body in [{"grace_seconds": 86401}, {"grace_seconds": -1}, {"grace_seconds": "60"}, {"grace": 60}]:
        assert_error(client.post(f"/api/v1/keys/{made['id']}/rotate/", body, format="json"), 400)
    assert ApiKey.objects.get().revoked_at is None
    assert client.post(f"/api/v1/keys/{made['id']}/rotate/", {"grace_seconds": 86400}, format="json").status_code == 201


def test_another_users_key_does_not_exist_for_them(api, bearer, buyer, owner):
    mine = create(api(buyer), name="mine")
    theirs = api(owner)
    assert_error(theirs.get(f"/api/v1/keys/{mine['id']}/"), 404)
    assert_error(theirs.delete(f"/api/v1/keys/{mine['id']}/"), 404)
    assert_error(theirs.post(f"/api/v1/keys/{mine['id']}/rotate/", {}, format="json"), 404)
    assert_error(theirs.get("/api/v1/keys/key_doesnotexist0000000000/"), 404)
    assert len(every(theirs, "/api/v1/keys/")) == 0
    assert ApiKey.objects.get().revoked_at is None and ApiKey.objects.count() == 1
    assert bearer(mine["secret"]).get(WALLET).status_code == 200
    assert_error(api().get("/api/v1/keys/"), 401)


# --- refused keys


def test_unknown_malformed_revoked_expired_keys_are_401(api, bearer, buyer):
    good = keys.new_secret()  # well formed, never issued
    for secret in [good, good[:-1] + ("x" if good[-1] != "x" else "y"), "not-a-key", "gradual_" + "a" * 46]:
        error = assert_401(bearer(secret).get(WALLET))
        assert error["code"] == "invalid_key"
    assert_401(api().get(WALLET, HTTP_AUTHORIZATION="Bearer"))
    assert_401(api().get(WALLET, HTTP_AUTHORIZATION="Bearer one two"))

    expiring, secret = api_key_create(user=buyer, name="short", expires_at=timezone.now() + timedelta(days=1))
    assert bearer(secret).get(WALLET).status_code == 200
    # the key's time runs out (written straight to the table, as time passing would leave it; a
    # remembered key lives at most until its expiry, so the entry goes with it: forgotten here)
    ApiKey.objects.filter(pk=expiring.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    keys_forget(digests=[expiring.secret_hash])
    assert_401(bearer(secret).get(WALLET))
    assert api(buyer).get(f"/api/v1/keys/{expiring.pk}/").json()["status"] == "expired"

    key, secret = api_key_create(user=buyer, name="revoked")
    api_key_revoke(user=buyer, key_id=key.pk)
    assert_401(bearer(secret).get(WALLET))
    # a key of a deactivated account
    key, secret = api_key_create(user=buyer, name="inactive")
    assert bearer(secret).get(WALLET).status_code == 200  # remembered from now on (with Redis)
    buyer.is_active = False
    buyer.save(update_fields=["is_active"])  # as the admin does: the user's remembered keys are forgotten
    assert_401(bearer(secret).get(WALLET))


def test_last_use_is_written_at_most_about_once_a_minute(bearer, buyer, django_assert_num_queries):
    key, secret = api_key_create(user=buyer, name="busy")
    assert key.last_used_at is None
    client = bearer(secret)
    assert client.get(WALLET).status_code == 200
    first = ApiKey.objects.get(pk=key.pk).last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=5)
    for _ in range(3):
        assert client.get(WALLET).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first  # no write within the minute
    # a minute on: the stamp is old, and the key's remembered entry (at most 60 s) has lapsed too
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(seconds=61))
    keys_forget(digests=[key.secret_hash])
    assert client.get(WALLET).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at > first


def test_a_recent_use_costs_one_query_and_no_write(buyer, django_assert_num_queries):
    from market.api.authentication import ApiKeyAuthentication
    from rest_framework.test import APIRequestFactory

    key, secret = api_key_create(user=buyer, name="busy")
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    request = APIRequestFactory().get(WALLET, HTTP_AUTHORIZATION=f"Bearer {secret}")
    with django_assert_num_queries(1):
        user, found = ApiKeyAuthentication().authenticate(request)
    assert user == buyer and found.pk == key.pk


# --- POST auth/token/


def test_token_exchange_returns_a_new_working_key_each_time(api, bearer, buyer, settings):
    settings.API_KEY_SIGN_IN_DAYS = 90
    client = api()
    first = client.post("/api/v1/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    second = client.post("/api/v1/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    assert first.status_code == second.status_code == 200
    a, b = first.json(), second.json()
    assert SECRET.match(a["token"]) and a["token"] != b["token"] and a["key"]["id"] != b["key"]["id"]
    assert a["key"]["name"].startswith("signed in ") and a["key"]["status"] == "active"
    assert "secret" not in a["key"] and a["key"]["prefix"] == a["token"][:12]
    left = timezone.datetime.fromisoformat(a["key"]["expires_at"]) - timezone.now()
    assert timedelta(days=89) < left <= timedelta(days=90)
    assert bearer(a["token"]).get(WALLET).status_code == 200
    assert bearer(b["token"], "Token").get(WALLET).status_code == 200
    assert {k["id"] for k in bearer(a["token"]).get("/api/v1/keys/").json()["results"]} == {a["key"]["id"], b["key"]["id"]}
    assert_error(client.post("/api/v1/auth/token/", {"username": "bob", "password": "wrong"}, format="json"), 400)
    assert ApiKey.objects.count() == 2


def test_the_number_of_active_keys_is_capped(api, buyer, settings):
    settings.API_KEY_MAX_ACTIVE = 2
    client = api(buyer)
    signed_in = client.post("/api/v1/auth/token/", {"username": "bob", "password": PASSWORD}, format="json").json()
    create(client, name="one")
    assert_error(client.post("/api/v1/keys/", {"name": "three"}, format="json"), 409, "too_many_keys")
    # signing in at the cap retires the oldest key made by signing in, not the user's own
    again = client.post("/api/v1/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    assert again.status_code == 200
    assert ApiKey.objects.get(pk=signed_in["key"]["id"]).status() == "revoked"
    assert ApiKey.objects.get(name="one").status() == "active"
    # revoking frees a place
    assert client.delete(f"/api/v1/keys/{again.json()['key']['id']}/").status_code == 204
    create(client, name="three")


def test_revoke_all_leaves_other_users_alone(buyer, owner):
    mine = [api_key_create(user=buyer, name=str(i))[0] for i in range(3)]
    theirs, _ = api_key_create(user=owner, name="theirs")
    assert api_keys_revoke_all(user=buyer) == 3
    assert all(ApiKey.objects.get(pk=k.pk).status() == "revoked" for k in mine)
    assert ApiKey.objects.get(pk=theirs.pk).status() == "active"
    assert api_keys_revoke_all(user=buyer) == 0
