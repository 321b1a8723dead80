"""The API's conventions (issue 16): RateLimit headers on every counted answer, and deprecations
announced with Deprecation, Sunset and Link headers and ``deprecated`` in the schema."""

import calendar
from datetime import date, datetime, timezone

import pytest
from django.core.cache import cache
from django.urls import include, path
from django.utils.http import parse_http_date
from drf_spectacular.generators import SchemaGenerator
from rest_framework.response import Response
from rest_framework.views import APIView

from market.accounts.services import api_key_create
from market.api.deprecation import deprecated
from market.api.throttling import RateLimits

from .test_api import assert_error

pytestmark = pytest.mark.django_db

DAY = 86400
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")


@pytest.fixture
def small_rates(monkeypatch):
    cache.clear()
    # per day: a window's edge (midnight UTC) cannot fall between the requests of a test
    monkeypatch.setattr(RateLimits, "RATES", {"user": "6/day", "anon": "4/day", "purchases": "3/day", "auth": "2/day"})
    yield
    cache.clear()


def limits(answer) -> tuple[int, int, str]:
    reset = int(answer["RateLimit-Reset"])
    assert 1 <= reset <= DAY
    return int(answer["RateLimit-Limit"]), int(answer["RateLimit-Remaining"]), answer["RateLimit-Policy"]


@pytest.fixture
def keyed(api, buyer):
    """The buyer's client with a real API key (with Redis, its limits are counted in the key's look-up)."""
    _, secret = api_key_create(user=buyer, name="limits")
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_each_counted_answer_says_the_tightest_limit_left(keyed, small_rates):
    assert limits(keyed.get("/api/v1/wallet/")) == (6, 5, "6;w=86400")
    assert limits(keyed.get("/api/v1/wallet/")) == (6, 4, "6;w=86400")
    # purchases are counted against the user's limit and their own; theirs is the tighter
    assert limits(keyed.get("/api/v1/purchases/")) == (3, 2, "6;w=86400, 3;w=86400")
    assert limits(keyed.get("/api/v1/purchases/")) == (3, 1, "6;w=86400, 3;w=86400")
    assert limits(keyed.get("/api/v1/purchases/?page_size=0")) == (3, 0, "6;w=86400, 3;w=86400")  # an error counts too
    assert limits(keyed.get("/api/v1/wallet/")) == (6, 0, "6;w=86400")
    refused = keyed.get("/api/v1/purchases/")
    assert_error(refused, 429, "throttled")
    assert limits(refused)[1] == 0 and int(refused["Retry-After"]) == int(refused["RateLimit-Reset"])


def test_anonymous_answers_count_against_the_address(api, small_rates, listing):
    client = api()
    for left in (3, 2, 1, 0):
        assert limits(client.get("/api/v1/listings/")) == (4, left, "4;w=86400")
    refused = client.get(f"/api/v1/listings/{listing.pk}/")
    assert refused.status_code == 429 and limits(refused) == (4, 0, "4;w=86400") and int(refused["Retry-After"]) >= 1
    token = client.post("/api/v1/auth/token/", {"username": "x", "password": "y"}, format="json")
    assert token.status_code == 429  # the address's limit is spent before the sign-in scope's
    assert limits(token)[1] == 0 and "2;w=86400" in token["RateLimit-Policy"]


def test_answers_not_counted_carry_no_rate_limit_headers(api, small_rates):
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Bearer gradual_not-a-key")
    refused = client.get("/api/v1/wallet/")  # refused before it is counted
    assert refused.status_code == 401 and not any(h in refused for h in RATE_HEADERS)
    page = api().get("/")  # the site's pages have their own limits
    assert page.status_code == 200 and not any(h in page for h in RATE_HEADERS)


def test_the_schema_names_the_rate_limit_headers(api):
    schema = api().get("/api/schema/?format=json").json()
    headers = schema["components"]["headers"]
    assert set(RATE_HEADERS) | {"Retry-After"} <= set(headers)
    wallet = schema["paths"]["/api/v1/wallet/"]["get"]["responses"]
    assert set(wallet["200"]["headers"]) == set(RATE_HEADERS)
    assert wallet["200"]["headers"]["RateLimit-Reset"] == {"$ref": "#/components/headers/RateLimit-Reset"}
    assert set(wallet["429"]["headers"]) == set(RATE_HEADERS) | {"Retry-After"}
    assert "headers" not in wallet["401"]


# --- deprecation: a test-only view
SINCE, SUNSET = date(2026, 1, 1), date(2026, 9, 30)
NOTES = "https://example.com/changelog#old"


class OldView(APIView):
    permission_classes = []

    @deprecated(since=SINCE, sunset=SUNSET, link=NOTES)
    def get(self, request):
        return Response({"old": True})

    def post(self, request):
        return Response({"new": True})


@deprecated(since=SINCE, sunset=SUNSET, link=NOTES)
class GoneView(APIView):
    permission_classes = []

    def get(self, request):
        return Response({"gone": "soon"})


class ByHandView(APIView):
    permission_classes = []
    deprecated = {"since": SINCE, "sunset": SUNSET, "link": NOTES}

    def get(self, request):
        return Response({})


v1 = [path("old/", OldView.as_view()), path("gone/", GoneView.as_view()), path("by-hand/", ByHandView.as_view())]
urlpatterns = [path("api/v1/", include(v1))]


def _announced(answer):
    assert answer["Deprecation"] == f"@{calendar.timegm(SINCE.timetuple())}"
    assert parse_http_date(answer["Sunset"]) == calendar.timegm(SUNSET.timetuple())
    assert answer["Sunset"] == "Wed, 30 Sep 2026 00:00:00 GMT"
    assert answer["Link"] == f'<{NOTES}>; rel="deprecation"; type="text/html"'


@pytest.mark.urls(__name__)
def test_deprecated_operations_carry_deprecation_sunset_and_link(api):
    _announced(api().get("/api/v1/old/"))
    fresh = api().post("/api/v1/old/", {}, format="json")
    assert fresh.status_code == 200 and not any(h in fresh for h in ("Deprecation", "Sunset", "Link"))
    _announced(api().get("/api/v1/gone/"))
    _announced(api().get("/api/v1/by-hand/"))
    assert datetime.fromtimestamp(int(api().get("/api/v1/gone/")["Deprecation"][1:]), timezone.utc).date() == SINCE


@pytest.mark.urls(__name__)
def test_deprecated_operations_are_marked_in_the_schema():
    schema = SchemaGenerator(patterns=urlpatterns).get_schema(request=None, public=True)
    assert schema["paths"]["/api/v1/old/"]["get"].get("deprecated") is True
    assert "deprecated" not in schema["paths"]["/api/v1/old/"]["post"]
    assert schema["paths"]["/api/v1/gone/"]["get"].get("deprecated") is True


def test_the_live_schema_marks_nothing_deprecated_that_does_not_say_so(api):
    """Every operation marked in the schema answers with the headers (none today)."""
    schema = api().get("/api/schema/?format=json").json()
    marked = [(p, m) for p, item in schema["paths"].items() for m, op in item.items() if op.get("deprecated")]
    assert marked == []


def test_a_sunset_must_follow_the_deprecation():
    with pytest.raises(ValueError):
        deprecated(since=SUNSET, sunset=SINCE, link=NOTES)
