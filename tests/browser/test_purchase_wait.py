"""The purchase page waits for its release with a long-poll: one request, answered by the server when
the release is made, instead of a request every second; with JavaScript off the page refreshes itself."""

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_buyer_flow import log_in
from tests.browser.test_content_security_policy import LISTEN
from tests.fixtures.market import listing, make_listing, owner  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)
STATUS = re.compile(r"/purchases/[0-9a-f-]+/status/$")
PAGE = re.compile(r"/purchases/[0-9a-f-]+/$")


def confirm(page, listing_id, eps):
    page.goto(f"/listings/{listing_id}/?epsilon={eps}")
    page.get_by_role("button", name=re.compile("Confirm: pay")).click()
    page.wait_for_url(PAGE)


def test_the_page_shows_the_release_without_a_reload_and_without_polling(browse, late_worker, listing, users, fund):
    fund(users("bea"), 100)
    page = browse()
    page.context.add_init_script(LISTEN)  # and the policy holds while the page waits
    log_in(page, "bea")
    asked, loads = [], []
    page.on("request", lambda request: asked.append(time.monotonic()) if STATUS.search(request.url) else None)
    page.on("load", lambda _: loads.append(page.url))
    confirm(page, listing.pk, "0.5")
    expect(page.locator('#purchase-status[data-status="queued"]')).to_be_visible()
    page.wait_for_timeout(4000)  # no worker yet: the page's one request is waiting (a poll a second: 4)
    assert len(asked) == 1, asked
    started = time.monotonic()
    late_worker()
    expect(page.locator('#purchase-status[data-status="released"]')).to_be_visible(timeout=30_000)
    shown = time.monotonic() - started
    expect(page.get_by_role("row", name=re.compile(r"^count "))).to_be_visible()
    assert len(asked) == 1, f"{len(asked)} status requests"  # the waiting one was answered with the release
    assert [url for url in loads if PAGE.search(url)] == [page.url]  # loaded once: no reload
    assert page.evaluate("window.__csp") == []
    print(f"\n    released and shown {shown:.2f} s after the worker started, with {len(asked)} status request")


def test_a_failed_status_request_is_asked_again(browse, late_worker, listing, users, fund):
    """A proxy's 502 (or a restart) does not leave the page waiting forever: it asks again, a few seconds later."""
    fund(users("bea"), 100)
    page = browse()
    log_in(page, "bea")
    failed = []

    def once_502(route):
        if not failed:
            failed.append(route.request.url)
            route.fulfill(status=502, body="bad gateway")
        else:
            route.continue_()

    page.route(STATUS, once_502)
    confirm(page, listing.pk, "0.5")
    expect(page.locator('#purchase-status[data-status="queued"]')).to_be_visible()
    late_worker()
    expect(page.locator('#purchase-status[data-status="released"]')).to_be_visible(timeout=30_000)
    assert len(failed) == 1


def test_without_javascript_the_page_refreshes_until_released(chromium, live_server, late_worker, listing, users, fund):
    fund(users("bea"), 100)
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, "bea")
    confirm(page, listing.pk, "0.5")
    expect(page.locator('#purchase-status[data-status="queued"]')).to_be_visible()
    late_worker()
    expect(page.locator('#purchase-status[data-status="released"]')).to_be_visible(timeout=30_000)  # a meta refresh
    expect(page.get_by_role("row", name=re.compile(r"^count "))).to_be_visible()
    context.close()
