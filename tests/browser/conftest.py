"""Browser tests: the system Chromium, driven by Playwright, against a live server
with a real Celery worker. No tool downloads a browser: Playwright is pointed at
``/usr/bin/chromium`` (Debian's package, installed by ``.ci/run``), or $CHROMIUM.
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
#: set to a folder (e.g. docs/screenshots) to keep screenshots of the main pages
SCREENSHOTS = os.environ.get("SCREENSHOT_DIR")


# Playwright's synchronous API runs an event loop in this thread; the ORM calls the
# tests (and their fixtures) make between page actions are synchronous and safe.
# Tests only: the deploy check refuses this variable, and its test drops it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from tests.fixtures.market import STATISTICS, make_csv  # noqa: E402,F401 - names the browser tests import from here


@pytest.fixture(scope="session")
def chromium():
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (.ci/run installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browse(chromium, live_server):
    """New browser contexts (separate cookies: separate people) on the live server."""
    contexts = []

    def open_page(width=1280, height=900):
        context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": height})
        context.set_default_timeout(20_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def shot():
    def take(page, name):
        if SCREENSHOTS:
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)

    return take
