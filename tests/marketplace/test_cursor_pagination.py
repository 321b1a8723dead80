"""Cursor pagination on every list of the API (issue 16): walked by ``next`` (and back by
``previous``) every row comes exactly once, also when rows are added between two pages and
when rows share their time; statements keep their running balance across pages; a cursor
that is not one the API gave for that list is a 400 in the error shape."""

import base64
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from market.accounts.models import ApiKey
from market.accounts.services import api_key_create
from market.catalog.models import Listing
from market.ledger.payments import ManualPayout
from market.trading.services import purchase_create
from tests.datasets import ready_dataset

from tests.fixtures.market import make_csv
from .test_api import assert_error

pytestmark = pytest.mark.django_db

LISTS = (
    "/api/v1/listings/",
    "/api/v1/datasets/",
    "/api/v1/purchases/",
    "/api/v1/releases/",
    "/api/v1/wallet/statement/",
    "/api/v1/earnings/statement/",
    "/api/v1/earnings/payouts/",
    "/api/v1/keys/",
)


def identity(row: dict):
    return row.get("id") or row["transfer"]  # statement lines and payouts: their transfer


class Shop:
    """An owner with listings and datasets, a buyer with purchases, releases, keys and a
    statement, the owner's sales and payouts; ``add(path)`` adds one row to that list."""

    def __init__(self, owner, buyer, make_listing, fund, eager, capture):
        self.owner, self.buyer, self.make_listing, self.fund, self.capture = owner, buyer, make_listing, fund, capture
        self.listings = [make_listing(price="1.00") for _ in range(3)]
        self.level = Decimal("0")
        fund(buyer, 500)
        for _ in range(3):
            self.buy()
        purchase_create(buyer=buyer, listing_id=self.listings[1].pk, epsilon="1")  # in flight: no release
        for n in range(3):
            ManualPayout().pay_out(user=owner, amount=Decimal("0.10"))
            api_key_create(user=buyer, name=f"key {n}")

    def buy(self):
        self.level += Decimal("0.05")
        with self.capture(execute=True):
            purchase_create(buyer=self.buyer, listing_id=self.listings[0].pk, epsilon=str(self.level))

    def who(self, path):
        return self.owner if path.startswith(("/api/v1/datasets", "/api/v1/earnings")) else self.buyer

    def add(self, path):
        if path == "/api/v1/listings/":
            self.make_listing(price="1.00")
        elif path == "/api/v1/datasets/":
            ready_dataset(owner=self.owner, name="more", data=make_csv(30), total_budget="10")
        elif path in ("/api/v1/purchases/", "/api/v1/releases/"):
            self.buy()
        elif path == "/api/v1/wallet/statement/":
            self.fund(self.buyer, 1)
        elif path.startswith("/api/v1/earnings/"):
            ManualPayout().pay_out(user=self.owner, amount=Decimal("0.01"))
        elif path == "/api/v1/keys/":
            api_key_create(user=self.buyer, name="added")
        else:
            raise AssertionError(path)



@pytest.fixture
def moment(request):
    """None: rows are made as time goes; else every row of the shop is made at one moment this
    many days from now (so the lists' time orders are all ties, broken by the primary key)."""
    return getattr(request, "param", None)


@pytest.fixture
def shop(owner, buyer, make_listing, fund, eager_celery, django_capture_on_commit_callbacks, settings, moment, monkeypatch):
    settings.DEMO_MODE = True
    if moment is not None:
        at = timezone.now() + timedelta(days=moment)
        monkeypatch.setattr(timezone, "now", lambda: at)  # what auto_now_add reads
    made = Shop(owner, buyer, make_listing, fund, eager_celery, django_capture_on_commit_callbacks)
    if moment is not None:
        monkeypatch.undo()
        ApiKey.objects.update(created_at=at)  # its default was bound before the clock stopped
    return made


def pages(client, url, *, key="next", between=None):
    """The rows of each page, following ``key`` links; ``between()`` runs before each next page."""
    seen = []
    while url:
        answer = client.get(url)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert set(body) == {"next", "previous", "results"}
        assert url.startswith("http") or body["previous"] is None  # the first page has none before it
        seen.append([identity(r) for r in body["results"]])
        url = body[key]
        if url:
            assert url.startswith("http://testserver/api/v1/") and "cursor=" in url
            if between:
                between()
    return seen


def everything(api, shop, path):
    return [identity(r) for r in api(shop.who(path)).get(f"{path}?page_size=100").json()["results"]]


@pytest.mark.parametrize("path", LISTS)
def test_every_list_is_walked_by_cursor_once_each_row(api, shop, path):
    rows = everything(api, shop, path)
    assert len(rows) >= 3 and len(set(rows)) == len(rows)
    for size in (1, 2, 3):
        walked = pages(api(shop.who(path)), f"{path}?page_size={size}")
        assert all(len(page) == size for page in walked[:-1]) and 1 <= len(walked[-1]) <= size
        assert [r for page in walked for r in page] == rows  # the list's own order, every row once


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("moment", [-3, 3], ids=["past", "future"], indirect=True)
def test_rows_added_between_pages_neither_repeat_nor_skip_the_others(api, shop, path, moment):
    """All old rows share one moment (so only the primary key orders them); rows added while the
    client walks sort before them (old rows in the past) or after them (in the future)."""
    for size in (1, 2, 3):
        old = everything(api, shop, path)
        walked = [r for page in pages(api(shop.who(path)), f"{path}?page_size={size}", between=lambda: shop.add(path))
                  for r in page]
        assert len(walked) == len(set(walked)), "a row came twice"
        assert [r for r in walked if r in old] == old, "an old row was skipped or moved"
        now = everything(api, shop, path)
        assert set(walked) - set(old) <= set(now) - set(old)
        if moment > 0:  # the rows added sort after the old ones: the walk reaches them
            assert len(walked) > len(old)


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("moment", [None, 0], ids=["apart", "tied"], indirect=True)
def test_previous_links_walk_back_over_the_same_rows(api, shop, path):
    client = api(shop.who(path))
    rows = everything(api, shop, path)
    url, last = f"{path}?page_size=2", None
    while url:
        last = client.get(url).json()
        url = last["next"]
    back = pages(client, last["previous"], key="previous")
    assert [r for page in reversed(back) for r in page] + [identity(r) for r in last["results"]] == rows
    assert [len(page) for page in back] == [2] * len(back)


@pytest.mark.parametrize("path", ["/api/v1/wallet/statement/", "/api/v1/earnings/statement/"])
@pytest.mark.parametrize("moment", [None, 0], ids=["apart", "tied"], indirect=True)
def test_statements_keep_their_running_balance_across_pages(api, shop, path):
    """``balance_after`` is a window over the whole statement: a page read after a cursor shows
    the balances of the whole statement, not of the rows left after the cursor."""
    client = api(shop.who(path))
    whole = [(r["transfer"], Decimal(r["amount"]), Decimal(r["balance_after"]))
             for r in client.get(f"{path}?page_size=100").json()["results"]]
    assert len(whole) >= 4
    for i, (_, amount, after) in enumerate(whole):  # newest first: each balance is the one below plus the movement
        assert after == (whole[i + 1][2] if i + 1 < len(whole) else 0) + amount
    def line(r):
        return r["transfer"], Decimal(r["amount"]), Decimal(r["balance_after"])

    for size in (1, 2, 3):
        url, lines = f"{path}?page_size={size}", []
        while url:
            body = client.get(url).json()
            lines += [line(r) for r in body["results"]]
            url = body["next"]
        assert lines == whole
        url, back = body["previous"], [line(r) for r in body["results"]]  # and back from the last page
        while url:
            body = client.get(url).json()
            back = [line(r) for r in body["results"]] + back
            url = body["previous"]
        assert back == whole


def test_search_is_kept_across_pages(api, shop):
    shop.listings[0].title = "Penguins"
    shop.listings[0].save(update_fields=["title"])
    Listing.objects.filter(pk=shop.listings[2].pk).update(title="Penguins too")
    walked = pages(api(), "/api/v1/listings/?search=penguin&page_size=1")
    assert sorted(r for page in walked for r in page) == sorted([shop.listings[0].pk, shop.listings[2].pk])


def test_releases_are_filtered_by_listing_and_moment_across_pages(api, shop):
    from releases.models import Release

    with shop.capture(execute=True):
        purchase_create(buyer=shop.buyer, listing_id=shop.listings[2].pk, epsilon="0.5")
    first = shop.listings[0].pk
    walked = pages(api(shop.buyer), f"/api/v1/releases/?listing={first}&page_size=1")
    assert len(walked) == 3 and all(len(page) == 1 for page in walked)  # the filter is kept in the next links
    mine = api(shop.buyer).get(f"/api/v1/releases/?listing={first}&page_size=100").json()["results"]
    assert [row["listing"] for row in mine] == [first] * 3
    middle = Release.objects.filter(listing_id=first).order_by("created_at")[1]
    since = api(shop.buyer).get("/api/v1/releases/", {"since": middle.created_at.isoformat(), "page_size": 100})
    assert sorted(row["id"] for row in since.json()["results"]) == sorted(
        Release.objects.filter(created_at__gte=middle.created_at).values_list("public_id", flat=True))
    assert len(since.json()["results"]) == 3  # the last two on the first listing and the one on the third
    for query in ({"listing": "x"}, {"listing": "0"}, {"since": "yesterday"}, {"listing": ""}):
        error = api(shop.buyer).get("/api/v1/releases/", query)
        assert error.status_code == 400 and set(error.json()["error"]["fields"]) == set(query), query
    assert api(shop.owner).get(f"/api/v1/releases/?listing={first}").json()["results"] == []  # scoped: not theirs


def _cursor(url: str) -> str:
    return parse_qs(urlsplit(url).query)["cursor"][0]


def _altered(cursor: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[len(raw) // 2] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def test_a_cursor_the_api_did_not_give_for_this_list_is_a_400(api, shop):
    client = api(shop.buyer)
    good = _cursor(client.get("/api/v1/purchases/?page_size=1").json()["next"])
    assert client.get(f"/api/v1/purchases/?page_size=1&cursor={good}").status_code == 200
    for bad in ("", "x", "not-a-cursor", "%00", "é", good[:-4], good + "AAAA", _altered(good), "A" * 4000):
        assert_error(client.get("/api/v1/purchases/", {"cursor": bad}), 400, code="invalid", field="cursor")
    # a cursor is bound to its list: another list's is refused, never read as a position there
    assert_error(client.get(f"/api/v1/releases/?cursor={good}"), 400, field="cursor")
    assert_error(client.get(f"/api/v1/keys/?cursor={good}"), 400, field="cursor")


@pytest.mark.parametrize("size", ["0", "101", "-1", "1.5", "abc", "", "٣"])
def test_page_sizes_outside_1_to_100_are_a_400(api, shop, size):
    assert_error(api(shop.buyer).get("/api/v1/purchases/", {"page_size": size}), 400, field="page_size")


def test_the_schema_describes_the_cursor_and_the_envelope(api):
    schema = api().get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    for path in LISTS:
        operation = schema["paths"][path]["get"]
        parameters = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        assert parameters["cursor"]["schema"] == {"type": "string"}
        assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 100}
        assert "page" not in parameters
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        envelope = components[ref.rsplit("/", 1)[1]]
        assert envelope["required"] == ["next", "previous", "results"]
        assert set(envelope["properties"]) == {"next", "previous", "results"}
        assert envelope["properties"]["results"]["type"] == "array"
