"""Every response, page or API or static file or error, carries the Content-Security-Policy,
and the policy allows nothing inline and no eval."""

import pytest
from django.test import Client

from tests.security.conftest import PASSWORD, api, buyer, listing, make_listing, owner, users  # noqa: F401 - fixtures

PATHS = [
    "/",
    "/signup/",
    "/accounts/login/",
    "/no-such-page/",
    "/static/css/site.css",
    "/static/js/charts.js",
    "/admin/login/",
    "/api/v1/listings/",
    "/api/v1/wallet/",  # 401 in the error shape
    "/api/v1/no-such-thing/",
    "/api/schema/",
    "/api/docs/",
    "/api/docs/?script=",
]


def assert_policy(response):
    policy = response.headers.get("Content-Security-Policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("script-src") == ["'self'"] and directives.get("style-src") == ["'self'"], policy
    assert directives.get("object-src") == ["'none'"] and directives.get("frame-ancestors") == ["'none'"], policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


@pytest.mark.parametrize("path", PATHS)
def test_every_response_has_the_policy(db, path):
    assert_policy(Client().get(path))


def test_signed_in_pages_and_api_answers_have_it(listing, buyer, api):
    client = Client()
    client.login(username="bob", password=PASSWORD)
    for path in ("/", "/library/", f"/listings/{listing.pk}/", "/accounts/password/"):
        response = client.get(path)
        assert response.status_code == 200
        assert_policy(response)
    assert_policy(api(buyer).get("/api/v1/wallet/"))
    assert_policy(api().post("/api/v1/auth/token/", {"username": "bob", "password": "wrong"}, format="json"))


def test_the_api_docs_load_their_script_from_a_url():
    """The split Swagger view: the page's start-up script is a file, not inline."""
    page = Client().get("/api/docs/").content.decode()
    assert "<script>" not in page and "<style>" not in page
    assert '<script src="/api/docs/?script="></script>' in page
