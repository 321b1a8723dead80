"""Charts a person can read, in the real browser at desktop and phone size, with JavaScript on and off:
one chart per statistic (a sum's thousands do not flatten a count), each filling its own height and
fitting the screen, the figures table starting at cheap levels, ε written as people write it."""

import re

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from market.catalog.services import listing_create
from market.trading.services import purchase_create
from tests.datasets import ready_dataset
from tests.fixtures.market import eager_celery, make_csv  # noqa: F401 - eager_celery: a fixture

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
STATISTICS = [
    {"kind": "count"},
    {"kind": "sum", "column": "age", "lower": 0, "upper": 100},  # its bound: 100 times the count's
    {"kind": "histogram", "column": "age", "bins": [0, 18, 65, 100]},
]

#: per chart on the page: its box, and the share of the plotting height its curves cover
GEOMETRY = """() => [...document.querySelectorAll("figure svg.plot")].map(svg => {
  const box = svg.getBoundingClientRect();
  const lines = [...svg.querySelectorAll("polyline, rect")].filter(e => !e.closest(".axes")).map(e => e.getBoundingClientRect());
  const axis = [...svg.querySelectorAll(".axes line.axis")].map(e => e.getBoundingClientRect());
  const ticks = [...svg.querySelectorAll("text.tick")].map(e => e.getBoundingClientRect().height);
  const plot = axis.length ? Math.max(...axis.map(a => a.height)) : box.height;
  const top = Math.min(...lines.map(l => l.top)), bottom = Math.max(...lines.map(l => l.bottom));
  return {id: svg.closest("figure").id, caption: (svg.closest("figure").querySelector("figcaption") || {}).textContent,
          left: box.left, right: box.right, width: box.width, span: (bottom - top) / plot, smallest_text: Math.min(...ticks)};
})"""


@pytest.fixture
def shop(request, users, fund, seeded_noise):
    request.getfixturevalue("eager_celery")
    owner, buyer = users("olivia", owner=True), users("bea")
    fund(buyer, 100)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(400), total_budget="100")
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS,
                             ceiling="5", price_per_epsilon="10", compensation={"E": "40", "rate": "1", "E_min": "0"})
    purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    purchase.refresh_from_db()
    assert purchase.status == "released"
    return {"owner": owner, "buyer": buyer, "listing": listing}


@pytest.fixture
def open_as(chromium, live_server):
    contexts = []

    def open_page(user, size, javascript=True):
        width, height = SIZES[size]
        context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": height},
                                       java_script_enabled=javascript)
        context.set_default_timeout(20_000)
        contexts.append(context)
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                              "url": live_server.url}])
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
@pytest.mark.parametrize("size", SIZES)
def test_each_statistic_has_a_chart_of_its_own_that_fits_the_screen(open_as, shop, shot, size, javascript):
    page = open_as(shop["buyer"], size, javascript)
    page.goto(f"/listings/{shop['listing'].pk}/")
    section = page.locator("section", has=page.get_by_role("heading", name="Price and accuracy against ε"))
    expect(section.locator("#charts-note")).to_contain_text("they need no JavaScript")
    charts = page.evaluate(GEOMETRY)
    captions = [c["caption"] for c in charts]
    assert captions == ["Price of the whole path up to ε", "± count", "± sum(age)",
                        "± each bin of the age histogram"]
    width = SIZES[size][0]
    for chart in charts:
        assert chart["span"] > 0.6, f"{chart['caption']}: its curve covers {chart['span']:.0%} of its height"
        assert 0 <= chart["left"] and chart["right"] <= width and chart["width"] > 250, chart
        assert chart["smallest_text"] >= 9, f"{chart['caption']}: text {chart['smallest_text']:.1f} px high"
    if size == "desktop":
        assert len({round(c["left"]) for c in charts}) >= 3  # side by side, not one long column
    assert fits(page)
    for chart in section.locator("svg.plot").all():
        expect(chart.locator(".mark text")).to_have_text("you hold ε 1")  # the level the buyer holds, on every chart
    # the figures table: cheap levels first, ε as people write it
    rows = section.locator("#figures tbody th")
    expect(rows).to_have_text(["ε 0.2", "ε 0.5", "ε 1", "ε 2", "ε 5"])
    assert not re.search(r"\beps\b|\d\.\d{4}\b", section.inner_text())  # ε 0.5, not eps 0.5000
    shot(page, f"listing-charts-{size}-{'js' if javascript else 'no-js'}")


@pytest.mark.parametrize("size", SIZES)
def test_the_owners_charts_fit_and_write_levels_as_people_do(open_as, shop, shot, size):
    page = open_as(shop["owner"], size)
    page.goto(f"/owner/listings/{shop['listing'].pk}/")
    for summary in page.locator("details.reference > summary").all():  # the reference sections, unfolded
        summary.click()
    charts = {c["id"]: c for c in page.evaluate(GEOMETRY)}
    assert set(charts) == {"privacy-gauge", "revenue-chart", "profile-chart", "budget-chart"}
    for chart in charts.values():
        assert 0 <= chart["left"] and chart["right"] <= SIZES[size][0] and chart["width"] > 250, chart
        assert chart["smallest_text"] >= 9, chart
    expect(page.locator("#privacy-gauge")).to_contain_text("ε 1 spent of ε 5")
    assert "<title>released at ε 1</title>" in page.locator("#profile-chart").inner_html()  # its one curve, named
    assert ".0000" not in page.locator("main").inner_text()
    shot(page, f"owner-listing-charts-{size}")
