"""The site's own pages in a real browser, at desktop (1280 px) and phone (390 x 844) size: How it
works (reached from a listing and from the navigation), the 404 page, the favicon."""

import re

import pytest
from playwright.sync_api import expect

from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = [pytest.param((1280, 900), id="desktop"), pytest.param((390, 844), id="phone")]


@pytest.fixture
def listing(users):
    from market.catalog.services import listing_create

    owner = users("olivia", owner=True)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="100")
    return listing_create(owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS,
                          ceiling="5", price_per_epsilon="10")


def fits(page, width):
    """Nothing sticks out sideways: the page scrolls only down."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("size", SIZES)
def test_how_it_works_is_linked_from_a_listing_and_the_navigation(browse, listing, shot, size):
    width, height = size
    page = browse(width, height)
    page.goto(f"/listings/{listing.pk}/")
    page.locator("#how-it-works-link").click()
    page.wait_for_url("**/how-it-works/")
    expect(page.get_by_role("heading", name="How it works", level=1)).to_be_visible()
    for section in ("What a privacy level ε buys", "What “± 6 at 95%” means", "Buying step by step costs you no accuracy",
                    "Whom a release protects"):
        expect(page.get_by_role("heading", name=section)).to_be_visible()
    # the worked example is computed: a count sold alone, on exact integer noise
    rows = page.locator("#example-bounds tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_text("ε 0.5± 6")
    expect(rows.nth(1)).to_have_text("ε 1± 3")
    # the page's own links take a reader to each part
    page.get_by_role("link", name="Whom a release protects").click()
    expect(page).to_have_url(re.compile(r"/how-it-works/#protects$"))
    fits(page, width)
    shot(page, f"how-it-works-{'phone' if width < 500 else 'desktop'}")

    page.goto("/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="How it works").click()
    page.wait_for_url("**/how-it-works/")


@pytest.mark.parametrize("size", SIZES)
def test_an_unknown_address_gets_the_site_s_404_page(browse, shot, size):
    width, height = size
    page = browse(width, height)
    answer = page.goto("/no-such-page/")
    assert answer.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalogue")).to_be_visible()
    assert "URLconf" not in page.content() and "urlpatterns" not in page.content()
    # styled: the site's stylesheet applies (the CSP lets it through)
    assert page.locator("#not-found").evaluate("e => getComputedStyle(e).borderTopLeftRadius") == "10px"
    fits(page, width)
    shot(page, f"not-found-{'phone' if width < 500 else 'desktop'}")
    page.get_by_role("link", name="Browse the catalogue").click()
    page.wait_for_url(re.compile(r"^http://[^/]+/$"))  # the catalogue, at the site's root


@pytest.mark.parametrize("size", SIZES)
def test_the_favicon_is_linked_and_draws(browse, size):
    width, height = size
    page = browse(width, height)
    page.goto("/")
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href == "/static/img/favicon.svg"
    # drawn as an image under the site's CSP: it loads and has a size
    drawn = page.evaluate("""href => new Promise(done => {
        const img = new Image();
        img.onload = () => done(img.naturalWidth);
        img.onerror = () => done(-1);
        img.src = href;
    })""", href)
    assert drawn > 0
    old = page.request.get("/favicon.ico")  # what browsers ask for by themselves; redirects followed
    assert old.ok and old.headers["content-type"].startswith("image/svg+xml")
