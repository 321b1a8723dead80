"""A new password revokes every key and signs out the other sessions, whichever way it is set;
the account settings page manages roles and keys."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.test import Client

from market.accounts.models import ApiKey, User
from market.accounts.services import api_key_create, user_password_set

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

WALLET = "/api/v1/wallet/"
NEW = "another-long-pass-2"


def signed_in(username) -> Client:
    client = Client()
    assert client.post("/accounts/login/", {"username": username, "password": PASSWORD}).status_code == 302
    return client


def working(bearer, secret) -> bool:
    return bearer(secret).get(WALLET).status_code == 200


def test_the_password_page_revokes_keys_and_signs_out_other_sessions(bearer, buyer, owner):
    keys = [api_key_create(user=buyer, name=str(i))[1] for i in range(2)]
    rotating, _ = api_key_create(user=buyer, name="rotating")
    theirs = api_key_create(user=owner, name="theirs")[1]
    here, elsewhere = signed_in("bob"), signed_in("bob")
    changed = here.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW})
    assert changed.status_code == 302
    assert not any(working(bearer, k) for k in keys)
    assert ApiKey.objects.filter(user=buyer).exclude(revoked_at=None).count() == 3
    assert working(bearer, theirs)
    assert here.get("/library/").status_code == 200  # this session stays
    assert elsewhere.get("/library/").status_code == 302  # the other one is signed out
    assert elsewhere.get(WALLET).status_code in (401, 403)


def test_a_wrong_old_password_changes_nothing(bearer, buyer):
    secret = api_key_create(user=buyer, name="kept")[1]
    here = signed_in("bob")
    refused = here.post("/accounts/password/", {"old_password": "nope", "new_password1": NEW, "new_password2": NEW})
    assert refused.status_code == 200
    assert working(bearer, secret)


def test_the_password_service_revokes_keys(bearer, buyer):
    secret = api_key_create(user=buyer, name="k")[1]
    elsewhere = signed_in("bob")
    user = User.objects.get(pk=buyer.pk)
    user_password_set(user=user, raw_password=NEW)
    assert not working(bearer, secret)
    assert User.objects.get(pk=buyer.pk).check_password(NEW)
    assert elsewhere.get("/library/").status_code == 302
    # keys made after the change work; an unusable password (no password sign-in) revokes them too
    fresh = api_key_create(user=user, name="after")[1]
    assert working(bearer, fresh)
    user_password_set(user=user, raw_password=None)
    assert not working(bearer, fresh)
    assert not User.objects.get(pk=buyer.pk).has_usable_password()


def test_saving_a_user_has_no_side_effects(bearer, buyer):
    """``User.save()`` only saves: even a new password set on the object revokes nothing by itself
    (the product sets passwords through ``user_password_set``)."""
    secret = api_key_create(user=buyer, name="k")[1]
    user = User.objects.get(pk=buyer.pk)
    user.email = "new@example.com"
    user.save()
    user.set_password(NEW)
    user.save()
    User.objects.get(pk=buyer.pk).save(update_fields=["email"])
    assert working(bearer, secret)
    assert ApiKey.objects.filter(user=buyer, revoked_at=None).count() == 1


def test_manage_changepassword_revokes_keys(bearer, buyer, monkeypatch):
    from django.contrib.auth.management.commands import changepassword
    from django.core.management import call_command

    secret = api_key_create(user=buyer, name="k")[1]
    theirs_kept = api_key_create(user=User.objects.create_user("carol", password=PASSWORD), name="c")[1]
    monkeypatch.setattr(changepassword.Command, "_get_pass", lambda self, prompt="Password: ": NEW)
    call_command("changepassword", "bob", stdout=StringIO())
    assert User.objects.get(pk=buyer.pk).check_password(NEW)
    assert not working(bearer, secret)
    assert working(bearer, theirs_kept)


def test_the_admin_changing_a_password_revokes_keys(bearer, buyer, users):
    staff = users("sam")
    User.objects.filter(pk=staff.pk).update(is_staff=True, is_superuser=True)
    secret = api_key_create(user=buyer, name="k")[1]
    admin = Client()
    admin.force_login(User.objects.get(pk=staff.pk))
    answer = admin.post(f"/admin/accounts/user/{buyer.pk}/password/", {"password1": NEW, "password2": NEW, "usable_password": "true"})
    assert answer.status_code == 302, answer.content[:2000]
    assert User.objects.get(pk=buyer.pk).check_password(NEW)
    assert not working(bearer, secret)


def test_signing_in_with_a_rehashed_password_revokes_nothing(bearer, buyer, settings):
    # the stored hash is MD5 (tests' fast hasher); make PBKDF2 preferred so that signing in upgrades it
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher", "django.contrib.auth.hashers.MD5PasswordHasher"]
    secret = api_key_create(user=buyer, name="k")[1]
    signed_in("bob")
    assert User.objects.get(pk=buyer.pk).password.startswith("pbkdf2_")
    assert working(bearer, secret)


# --- the account settings page


def page_text(response) -> str:
    return response.content.decode()


def test_the_page_creates_shows_once_rotates_and_revokes_keys(bearer, buyer):
    client = signed_in("bob")
    page = page_text(client.get("/account/"))
    assert "No API keys yet" in page and "/accounts/password/" in page
    made = client.post("/account/keys/", {"name": "laptop", "expires_in_days": "30"})
    assert made.status_code == 302 and made["Location"] == "/account/"
    shown = page_text(client.get("/account/"))
    secret = re.search(r'value="(gradual_[0-9A-Za-z]+)"', shown).group(1)
    assert "Copy it now: it will not be shown again" in shown and "laptop" in shown
    assert working(bearer, secret)
    again = page_text(client.get("/account/"))
    assert secret not in again and "laptop" in again and secret[:12] in again  # only the prefix from now on
    key = ApiKey.objects.get(user=buyer)
    assert key.expires_at is not None

    rotated = client.post(f"/account/keys/{key.pk}/rotate/", {"grace_hours": "0"})
    assert rotated.status_code == 302
    new_secret = re.search(r'value="(gradual_[0-9A-Za-z]+)"', page_text(client.get("/account/"))).group(1)
    assert new_secret != secret and not working(bearer, secret) and working(bearer, new_secret)

    new_key = ApiKey.objects.get(user=buyer, revoked_at=None)
    assert client.post(f"/account/keys/{new_key.pk}/revoke/").status_code == 302
    assert not working(bearer, new_secret)
    assert "revoked" in page_text(client.get("/account/"))


def test_the_page_refuses_bad_input_and_other_users_keys(buyer, owner):
    theirs, _ = api_key_create(user=owner, name="theirs")
    client = signed_in("bob")
    assert client.post("/account/keys/", {"name": ""}).status_code == 400
    assert client.post("/account/keys/", {"name": "x", "expires_in_days": "0"}).status_code == 400
    assert not ApiKey.objects.filter(user=buyer).exists()
    assert client.post(f"/account/keys/{theirs.pk}/revoke/").status_code == 404
    assert client.post(f"/account/keys/{theirs.pk}/rotate/", {"grace_hours": "1"}).status_code == 404
    assert ApiKey.objects.get(pk=theirs.pk).status() == "active"
    assert client.get(f"/account/keys/{theirs.pk}/revoke/").status_code == 405
    assert Client().get("/account/").status_code == 302  # log in first


def test_a_buyer_becomes_an_owner_from_the_page(buyer):
    client = signed_in("bob")
    assert client.get("/owner/").status_code == 403
    page = page_text(client.get("/account/"))
    assert "Become an owner too" in page and "Become a buyer too" not in page
    assert client.post("/account/roles/", {"role": "owner"}).status_code == 302
    user = User.objects.get(pk=buyer.pk)
    assert user.is_owner and user.is_buyer
    assert client.get("/owner/").status_code == 200
    assert "Become an owner too" not in page_text(client.get("/account/"))
    assert client.post("/account/roles/", {"role": "staff"}).status_code == 302
    assert not User.objects.get(pk=buyer.pk).is_staff


def test_an_owner_becomes_a_buyer_from_the_page(users):
    olivia = users("olivia", owner=True)
    User.objects.filter(pk=olivia.pk).update(is_buyer=False)
    client = signed_in("olivia")
    assert "Become a buyer too" in page_text(client.get("/account/"))
    client.post("/account/roles/", {"role": "buyer"})
    assert User.objects.get(pk=olivia.pk).is_buyer


def test_the_page_has_no_inline_script_style_or_handlers(buyer):
    client = signed_in("bob")
    api_key_create(user=buyer, name="k")
    client.post("/account/keys/", {"name": "shown"})
    html = page_text(client.get("/account/"))
    assert "gradual_" in html
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert not re.search(r"\sstyle\s*=", html)
    assert not re.search(r"\son[a-z]+\s*=", html, re.I)
    assert 'href="/account/"' in html  # the header links to the page


def test_a_buyer_at_the_owner_tools_adds_the_owner_role_there_and_lands_on_the_dashboard(client, django_user_model):
    buyer = django_user_model.objects.create_user("becky", "becky@example.com", "a-long-password-1")
    client.force_login(buyer)
    page = client.get("/owner/")
    assert page.status_code == 403
    assert 'action="/account/roles/"' in page.content.decode() and "sign up a new account" not in page.content.decode()
    answer = client.post("/account/roles/", {"role": "owner"})
    assert answer.status_code == 302 and answer["Location"] == "/owner/"
    buyer.refresh_from_db()
    assert buyer.is_owner and buyer.is_buyer
    assert client.get("/owner/").status_code == 200
