"""Production settings, as the environment gives them (``DJANGO_ENV=production``).

Each test starts a fresh Python process, since ``market.settings`` is read once per
process: ``manage.py check --deploy --fail-level WARNING`` must find no issue;
production must refuse to start without ``DJANGO_SECRET_KEY``; a weakened setting
must make the check fail (so the check is really looking); and the answers of a
production process carry the security headers and redirect plain HTTP to HTTPS.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
HOST = "market.example.com"
#: variables that loosen production on purpose; a test sets them only when it means to
LOOSENERS = (
    "DJANGO_DEBUG", "DJANGO_SECURE_SSL_REDIRECT", "DJANGO_HSTS_SECONDS", "DEMO_MODE", "DJANGO_SECRET_KEY",
    "DJANGO_ALLOW_ASYNC_UNSAFE",  # set by the browser tests for their own thread; never in deployment
    "GRADUAL_ENCRYPTION_KEYS", "WEBHOOKS_ALLOW_PRIVATE",
)


def production_env(**changes) -> dict:
    """The current environment (its DATABASE_URL, if any) with production settings."""
    env = {k: v for k, v in os.environ.items() if k not in LOOSENERS and k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS=HOST,
        DJANGO_SETTINGS_MODULE="market.settings",
        GRADUAL_ENCRYPTION_KEYS=f"k1:{base64.b64encode(secrets.token_bytes(32)).decode()}",
    )
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(args, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )


def deploy_check(env) -> subprocess.CompletedProcess:
    return run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)


def test_the_deploy_check_finds_no_issue_in_production():
    done = deploy_check(production_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def test_the_deploy_check_finds_no_issue_on_sqlite_either():
    """Without DATABASE_URL (the SQLite default), the same."""
    done = deploy_check(production_env(DATABASE_URL=None))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize("secret", [None, ""])
def test_production_refuses_to_start_without_a_secret_key(secret):
    done = run(["manage.py", "check"], production_env(DJANGO_SECRET_KEY=secret))
    assert done.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured: DJANGO_SECRET_KEY must be set in production" in done.stderr


def test_development_starts_without_a_secret_key():
    """The refusal is production's: development has its own (insecure, named so) key."""
    done = run(["manage.py", "check"], production_env(DJANGO_ENV="development", DJANGO_SECRET_KEY=None))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "changes,issue",
    [
        ({"DJANGO_SECRET_KEY": "short-and-guessable"}, "security.W009"),
        ({"DJANGO_DEBUG": "true"}, "security.W018"),
        ({"DJANGO_HSTS_SECONDS": "0"}, "security.W004"),
        ({"DJANGO_SECURE_SSL_REDIRECT": "false"}, "security.W008"),
        ({"GRADUAL_ENCRYPTION_KEYS": None}, "gradual.W001"),
        ({"GRADUAL_ENCRYPTION_KEYS": "k1:too-short"}, "gradual.E001"),
        ({"WEBHOOKS_ALLOW_PRIVATE": "1"}, "gradual.E101"),
        ({"DEMO_MODE": "1"}, "gradual.E002"),
    ],
    ids=["weak-secret-key", "debug-on", "no-hsts", "no-ssl-redirect", "derived-encryption-key", "malformed-keys",
         "webhooks-to-private-addresses", "demo-mode"],
)
def test_a_weakened_production_fails_the_deploy_check(changes, issue):
    done = deploy_check(production_env(**changes))
    assert done.returncode != 0
    assert f"({issue})" in done.stdout + done.stderr


@pytest.mark.parametrize("changes,issue", [
    ({"DEMO_MODE": "1"}, "gradual.E002"),
    ({"WEBHOOKS_ALLOW_PRIVATE": "1"}, "gradual.E101"),
], ids=["demo-mode", "webhooks-to-private-addresses"])
def test_demo_mode_or_private_webhooks_in_production_are_errors_not_warnings(changes, issue):
    """``check --deploy`` at its default level (errors only) fails: an operator who reads only errors, or a
    deploy script that runs the plain check, cannot miss them (issue 27: DEMO_MODE quietly allowed
    private webhook targets in production, with a warning at most)."""
    done = run(["manage.py", "check", "--deploy"], production_env(**changes))
    assert done.returncode != 0, done.stdout + done.stderr
    assert f"({issue})" in done.stderr and "ERRORS:" in done.stderr
    if "DEMO_MODE" in changes:  # demo mode no longer turns private webhook addresses on in production
        assert "gradual.E101" not in done.stderr


def test_private_webhooks_outside_production_are_a_warning():
    done = run(["manage.py", "check", "--deploy"],
               production_env(DJANGO_ENV="development", WEBHOOKS_ALLOW_PRIVATE="1", DEMO_MODE="1"))
    assert "(gradual.W101)" in done.stdout + done.stderr and "gradual.E101" not in done.stdout + done.stderr
    assert "gradual.E002" not in done.stdout + done.stderr


PROBE = r"""
import json, logging
import django
logging.disable(logging.CRITICAL)  # the DisallowedHost report
django.setup()
from django.conf import settings
from django.test import Client

client = Client()
URL = "/api/v1/no-such-thing/"  # answered without the database or a template
def seen(r):
    return {"status": r.status_code, "location": r.get("Location"), "headers": {k.lower(): v for k, v in r.items()}}
print(json.dumps({
    "plain": seen(client.get(URL, HTTP_HOST="market.example.com")),
    "secure": seen(client.get(URL, HTTP_HOST="market.example.com", secure=True)),
    "proxied": seen(client.get(URL, HTTP_HOST="market.example.com", HTTP_X_FORWARDED_PROTO="https")),
    "other_host": seen(client.get(URL, HTTP_HOST="evil.example.com", secure=True)),
    "settings": {name: getattr(settings, name) for name in (
        "DEBUG", "DEMO_MODE", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY",
        "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "ALLOWED_HOSTS")},
}))
"""


def test_a_production_process_answers_securely():
    done = run(["-c", PROBE], production_env())
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["settings"] == {
        "DEBUG": False,
        "DEMO_MODE": False,  # buyers cannot top themselves up in production
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "ALLOWED_HOSTS": [HOST],
    }
    # plain HTTP goes to HTTPS
    assert seen["plain"]["status"] == 301
    assert seen["plain"]["location"] == f"https://{HOST}/api/v1/no-such-thing/"
    # over HTTPS (directly, or behind a proxy that says so): the answer, with its headers
    for how in ("secure", "proxied"):
        answer = seen[how]
        assert answer["status"] == 404, how
        headers = answer["headers"]
        assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload", how
        assert headers["x-frame-options"] == "DENY", how
        assert headers["x-content-type-options"] == "nosniff", how
        assert headers["referrer-policy"] == "same-origin", how
        assert headers["cross-origin-opener-policy"] == "same-origin", how
    # another host name is refused
    assert seen["other_host"]["status"] == 400
