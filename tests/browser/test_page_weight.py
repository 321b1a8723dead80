"""Page weight and server time, measured in the browser against static files served as in production.

``collectstatic`` runs once into a temporary folder with the production storage (names with a hash of
the content, gzip copies); a live server of this test's own serves them through WhiteNoise, not through
the test server's static handler (which would send the sources uncompressed). Each page is opened in a
fresh browser context (an empty cache): the bytes are the Performance API's ``transferSize`` (headers and
the body as sent, compressed where it was) of the document and everything it loaded. The server's time
is its ``Server-Timing`` header (market/core/timing.py).

Run with ``-s`` to see the figures.
"""

import re
import statistics

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.test import Client
from django.test.testcases import LiveServerThread
from django.test.utils import modify_settings, override_settings

from tests.browser.test_content_security_policy import marketplace  # noqa: F401 - a fixture: a listing and a released purchase
from tests.fixtures.market import eager_celery  # noqa: F401 - a fixture (the marketplace's)

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_LOAD_LIMIT = 1_000_000  # bytes transferred on a first visit, any page
SERVER_TIME_LIMIT = 300  # milliseconds, a listing page
YEAR = 365 * 24 * 3600

#: everything the page loaded, as the browser counted it
MEASURE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const loaded = performance.getEntriesByType("resource");
  return {
    document: nav.transferSize,
    server: nav.serverTiming.filter(t => t.name === "app").map(t => t.duration)[0],
    resources: loaded.map(r => ({name: r.name, transfer: r.transferSize, body: r.decodedBodySize})),
  };
}"""


def _production_static(root):
    storages = {**settings.STORAGES, "staticfiles": {"BACKEND": "market.core.static.CollectedStaticFiles"}}
    return override_settings(STATIC_ROOT=root, STORAGES=storages, WHITENOISE_USE_FINDERS=False,
                             WHITENOISE_AUTOREFRESH=False)


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    root = tmp_path_factory.mktemp("staticfiles")
    with _production_static(root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


@pytest.fixture
def server(collected, transactional_db):
    """A live server whose static files WhiteNoise serves from the collected folder, as in production."""
    shared = {c.alias: c for c in connections.all() if c.vendor == "sqlite" and c.is_in_memory_db()}
    with _production_static(collected), modify_settings(ALLOWED_HOSTS={"append": "127.0.0.1"}):
        thread = LiveServerThread("127.0.0.1", static_handler=lambda app: app, connections_override=shared)
        thread.daemon = True
        for connection in shared.values():
            connection.inc_thread_sharing()
        thread.start()
        thread.is_ready.wait()
        if thread.error:
            raise thread.error
        yield f"http://127.0.0.1:{thread.port}"
        thread.terminate()
        for connection in shared.values():
            connection.dec_thread_sharing()


@pytest.fixture
def shop(request):
    """A listing and a released purchase: the policy test's marketplace."""
    return request.getfixturevalue("marketplace")


@pytest.fixture
def first_visit(chromium, server):
    """Open ``path`` in a new context (nothing cached), signed in as ``user`` if given; what it weighed."""
    contexts = []

    def visit(path, user=None, width=1280, height=900):
        context = chromium.new_context(base_url=server, viewport={"width": width, "height": height})
        contexts.append(context)
        if user is not None:
            client = Client()
            client.force_login(user)
            context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                                  "url": server}])
        page = context.new_page()
        static = []
        page.on("response", lambda r: static.append(r) if "/static/" in r.url else None)
        response = page.goto(path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
        figures = page.evaluate(MEASURE)
        figures["total"] = figures["document"] + sum(r["transfer"] for r in figures["resources"])
        figures["uncompressed"] = sum(r["body"] for r in figures["resources"])
        figures["static"] = static
        figures["page"] = page
        return figures

    yield visit
    for context in contexts:
        context.close()


def test_every_first_load_is_under_a_megabyte_with_static_files_compressed_and_cached(first_visit, shop):
    listing, purchase = shop["listing"], shop["purchase"]
    pages = [
        ("catalogue", "/", None),
        ("listing", f"/listings/{listing.pk}/", None),
        ("listing, signed in", f"/listings/{listing.pk}/", shop["buyer"]),
        ("purchase", f"/purchases/{purchase.pk}/", shop["buyer"]),
        ("owner dashboard", "/owner/", shop["owner"]),
        ("owner's listing", f"/owner/listings/{listing.pk}/", shop["owner"]),
        ("API docs", "/api/docs/", None),
    ]
    print("\nfirst load: bytes transferred (the page and its files, as sent), the files unpacked, server time")
    for name, path, user in pages:
        figures = first_visit(path, user)
        print(f"  {name:20} {figures['total']:>9,} B  (files unpacked {figures['uncompressed']:,} B)  "
              f"{len(figures['resources'])} files, server {figures['server']:.0f} ms")
        assert 0 < figures["total"] < FIRST_LOAD_LIMIT, f"{name}: {figures['total']:,} bytes"
        assert figures["static"], f"{name} loaded no static file"
        for response in figures["static"]:
            headers = response.headers
            assert response.status == 200, response.url
            if (headers.get("content-length") and int(headers["content-length"]) > 2000
                    and not response.url.endswith((".png", ".ico"))):
                assert headers.get("content-encoding") == "gzip", f"{response.url} sent uncompressed"
            max_age = int(headers["cache-control"].split("max-age=")[1].split(",")[0])
            assert max_age >= YEAR and "immutable" in headers["cache-control"], f"{response.url}: {headers['cache-control']}"
    # a listing page draws its charts without a chart library: a few kilobytes of its own
    listing_page = first_visit(f"/listings/{listing.pk}/")
    assert listing_page["total"] < 150_000
    assert not [r for r in listing_page["resources"] if "plotly" in r["name"]]


def test_a_second_visit_downloads_no_static_file_again(chromium, server, shop):
    context = chromium.new_context(base_url=server)
    try:
        page = context.new_page()
        page.goto(f"/listings/{shop['listing'].pk}/")
        page.wait_for_load_state("networkidle")
        page.goto("/")
        page.wait_for_load_state("networkidle")
        loaded = page.evaluate("() => performance.getEntriesByType('resource').map(r => [r.name, r.transferSize])")
        assert loaded and all("/static/" in name for name, _ in loaded)
        assert [name for name, size in loaded if size > 0] == [], "fetched again instead of read from the cache"
    finally:
        context.close()


def test_the_listing_page_is_served_in_under_300_ms(first_visit, shop):
    """Wall time depends on what else the machine runs (the tests share two cores with other work):
    the limit holds for the fastest of seven loads, and for the median of the CPU time the page
    takes, which other work does not lengthen."""
    listing = shop["listing"]
    page = first_visit(f"/listings/{listing.pk}/", shop["buyer"])["page"]
    wall, cpu = [], []
    for _ in range(7):
        timing = dict(re.findall(r"(\w+);dur=([\d.]+)", page.goto(f"/listings/{listing.pk}/").headers["server-timing"]))
        wall.append(float(timing["app"]))
        cpu.append(float(timing["cpu"]))
    print(f"\nlisting page, server time of 7 loads (ms): {', '.join(f'{t:.0f}' for t in wall)}; median "
          f"{statistics.median(wall):.0f}, fastest {min(wall):.0f}; CPU median {statistics.median(cpu):.0f}")
    assert min(wall) < SERVER_TIME_LIMIT and statistics.median(cpu) < SERVER_TIME_LIMIT, (wall, cpu)
