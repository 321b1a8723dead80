"""Every kind of page works under the Content-Security-Policy (no 'unsafe-inline', no
'unsafe-eval'): in the real browser, no page reports a violation, and the charts show."""

from tests.datasets import ready_dataset
import re

import pytest
from playwright.sync_api import expect

from market.catalog.services import listing_create
from market.trading.services import purchase_create
from tests.fixtures.market import STATISTICS, eager_celery, make_csv  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-password-1"

#: collects violations in the page (Playwright's init scripts are not subject to the page's policy)
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


@pytest.fixture
def marketplace(users, fund, eager_celery, seeded_noise):
    owner = users("olivia", owner=True)
    buyer = users("bea")
    staff = users("sam")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    fund(buyer, 500)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(800), total_budget="100")
    listing = listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS, ceiling="5",
        price_per_epsilon="10", compensation={"E": "40", "rate": "1", "E_min": "0"},
    )
    purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="0.5")  # released at commit (eager)
    purchase.refresh_from_db()
    assert purchase.status == "released"
    return {"owner": owner, "buyer": buyer, "staff": staff, "listing": listing, "purchase": purchase}


@pytest.fixture
def visit(browse):
    """A page that records every CSP violation (events and console errors) of everything it loads."""

    def open_page(username=None):
        page = browse()
        page.context.add_init_script(LISTEN)
        page.violations = []
        page.on(
            "console",
            lambda message: page.violations.append(message.text)
            if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text
            else None,
        )
        if username:
            page.goto("/accounts/login/")
            page.get_by_label("Username").fill(username)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            expect(page.get_by_role("button", name="Log out")).to_be_visible()
        return page

    return open_page


def check(page, path, *, charts=0):
    response = page.goto(path)
    assert response.status == 200, path
    assert "'unsafe-inline'" not in response.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")
    for summary in page.locator("details.reference > summary").all():  # folded reference sections, unfolded
        summary.click()
    if charts:
        # the charts are SVG drawn by the server: in the page as it arrives, with no style attribute
        drawn = page.locator("figure svg.plot")
        expect(drawn.first).to_be_visible()
        assert drawn.count() >= charts
        for i in range(drawn.count()):
            box = drawn.nth(i).bounding_box()
            assert box and box["width"] > 200 and box["height"] > 40, f"chart {i} on {path} is not drawn: {box}"
        assert page.locator("svg [style], figure [style]").count() == 0
    violations = page.evaluate("window.__csp") + page.violations
    assert violations == [], f"{path}: {violations}"


def test_every_kind_of_page_works_under_the_policy(visit, marketplace, live_server):
    listing, purchase = marketplace["listing"], marketplace["purchase"]

    anonymous = visit()
    for path in ("/", "/accounts/login/", "/signup/"):
        check(anonymous, path)
    check(anonymous, f"/listings/{listing.pk}/", charts=2)
    check(anonymous, "/api/docs/")
    expect(anonymous.locator(".swagger-ui .info .title")).to_contain_text("Gradual buyer API")
    expect(anonymous.locator(".swagger-ui .opblock").first).to_be_visible()
    assert anonymous.evaluate("window.__csp") == [] and anonymous.violations == []

    buyer = visit("bea")
    for path in ("/", "/library/", f"/purchases/{purchase.pk}/", "/accounts/password/"):
        check(buyer, path)
    check(buyer, f"/listings/{listing.pk}/", charts=2)
    check(buyer, "/account/")
    buyer.locator("input[name=name]").fill("nightly report")
    buyer.get_by_role("button", name="Create key").click()  # the page that shows the new secret once
    expect(buyer.locator("input.secret")).to_have_value(re.compile(r"^gradual_"))
    assert buyer.evaluate("window.__csp") == [] and buyer.violations == []

    owner = visit("olivia")
    for path in ("/owner/", "/owner/trust/"):
        check(owner, path)
    check(owner, f"/owner/listings/{listing.pk}/", charts=3)

    staff = visit("sam")
    for path in ("/admin/", f"/admin/accounts/user/{marketplace['buyer'].pk}/change/", f"/admin/catalog/listing/{listing.pk}/change/"):
        check(staff, path)
    # the admin's scripts ran (its collapsible fieldsets and widgets come from its own files)
    expect(staff.locator("#content-main form")).to_be_visible()


def test_a_page_that_breaks_the_policy_is_caught(visit, marketplace, live_server):
    """The check itself can fail: an inline style set the way the policy forbids is reported."""
    page = visit()
    page.goto("/")
    page.wait_for_load_state("networkidle")
    page.evaluate("document.body.setAttribute('style', 'color: red')")
    page.wait_for_timeout(300)
    assert any(re.search("style-src", v) for v in page.evaluate("window.__csp") + page.violations)
