"""The site's own 404 and 500 pages, with DEBUG off as in production and in the demo: in the site's
layout, with its navigation, and never Django's debug pages (no URL patterns, no traceback)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
#: what Django's debug 404 page shows: the whole URL configuration
DEBUG_404 = ("URLconf", "urlpatterns", "Django tried these URL patterns", "admin/", "api/v1/")


@pytest.fixture
def demo(settings):
    """The settings the demo runs with (scripts/run.sh): DEBUG off, demo mode on."""
    settings.DEBUG = False
    settings.DEMO_MODE = True
    return settings


def test_the_demo_runs_with_debug_off():
    """scripts/run.sh exports what turns DEBUG off (and demo mode on): Django's settings, read in a
    fresh process with that environment and nothing else set, say so."""
    exports = [line for line in (ROOT / "scripts/run.sh").read_text().splitlines() if line.startswith("export ")]
    assert exports, "scripts/run.sh exports its settings"
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_DEBUG", "DEMO_MODE", "DJANGO_ENV")}
    script = "\n".join([*exports, f'"{sys.executable}" -c "$1"'])
    read = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'market.settings'); django.setup(); "
            "from django.conf import settings; print(settings.DEBUG, settings.DEMO_MODE)")
    out = subprocess.run(["bash", "-c", script, "run", read], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_an_unknown_address_gets_the_styled_404_without_url_patterns(client, demo):
    answer = client.get("/no-such-page/")
    page = answer.content.decode()
    assert answer.status_code == 404 and answer["Content-Type"].startswith("text/html")
    assert "<h1>Page not found</h1>" in page
    assert '<nav class="bar" aria-label="Main">' in page and 'href="/how-it-works/"' in page  # the site's navigation
    assert "/static/css/site.css" in page
    for shown in DEBUG_404:
        assert shown not in page


def test_a_missing_row_and_someone_elses_get_the_same_styled_404(client, demo, buyer):
    client.force_login(buyer)
    for address in ("/listings/999999/", "/purchases/00000000-0000-0000-0000-000000000000/"):
        answer = client.get(address)
        page = answer.content.decode()
        assert answer.status_code == 404 and "<h1>Page not found</h1>" in page
        assert buyer.username in page and "Log out" in page  # the header knows who is signed in
        assert "999999" not in page.replace(address, "")


def test_the_api_keeps_its_own_404(client, demo):
    answer = client.get("/api/v1/no-such-thing/")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


@pytest.mark.urls("tests.web.error_urls")
def test_a_view_that_fails_gets_the_styled_500_without_its_details(demo, buyer):
    client = Client(raise_request_exception=False)
    client.force_login(buyer)
    answer = client.get("/fails/")
    page = answer.content.decode()
    assert answer.status_code == 500 and "Something went wrong on our side" in page
    assert '<nav class="bar" aria-label="Main">' in page and "/static/css/site.css" in page
    assert 'href="/library/"' in page  # where to check whether a purchase went through
    for detail in ("RuntimeError", "secret_answers", "Traceback", "row 42"):
        assert detail not in page


@pytest.mark.urls("tests.web.error_urls")
def test_the_500_page_falls_back_to_plain_html_when_its_template_fails(demo, monkeypatch):
    from market.web import error_views

    def broken(name):
        raise RuntimeError("the template loader is down too")

    monkeypatch.setattr(error_views.loader, "get_template", broken)
    answer = Client(raise_request_exception=False).get("/fails/")
    assert answer.status_code == 500
    assert answer.content.decode() == error_views.PLAIN_500


def test_the_favicon_is_linked_and_answers(client, demo):
    page = client.get("/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in page
    old = client.get("/favicon.ico")
    assert old.status_code == 301 and old["Location"] == "/static/img/favicon.svg"
    icon = client.get("/static/img/favicon.svg")
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert body.lstrip().startswith(b"<svg") and b"<script" not in body and b"style=" not in body


def test_a_form_sent_without_its_token_gets_the_styled_403_that_says_nothing_changed(demo, buyer):
    """A stale or forged form (no CSRF token): the site's page, in its layout, saying nothing was changed."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(buyer)
    answer = browser.post("/wallet/top-up/", {"amount": "5"})
    page = answer.content.decode()
    assert answer.status_code == 403
    assert "<h1>This form has expired</h1>" in page and "Nothing was changed" in page
    assert '<nav class="bar" aria-label="Main">' in page and "/static/css/site.css" in page
    from market.ledger.selectors import wallet_balance

    assert wallet_balance(user=buyer) == 0


def test_the_header_shows_a_buyer_their_wallet_and_an_owner_only_account_its_earnings(client, demo, users):
    buyer_only = users("bea")
    owner_only = users("oona", owner=True)
    owner_only.is_buyer = False
    owner_only.save(update_fields=["is_buyer"])
    client.force_login(buyer_only)
    page = client.get("/how-it-works/").content.decode()
    assert 'title="Your wallet"' in page and "0.00 credits" in page and "/owner/earnings/" not in page
    client.force_login(owner_only)
    page = client.get("/how-it-works/").content.decode()
    assert 'title="Your wallet"' not in page and "credits</a>" not in page
    assert 'href="/owner/earnings/">Earnings</a>' in page
