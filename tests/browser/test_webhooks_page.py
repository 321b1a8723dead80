"""Webhooks on the account page, in a real browser (issue 16): a buyer adds an address and sees its
signing secret once, a release is sent to a real local receiver signed with that secret, the
send is listed with its answer, and "Send again" sends it once more."""

import pytest
from playwright.sync_api import expect

from market.trading.services import purchase_create, purchase_release
from market.webhooks import tasks
from market.webhooks.models import Delivery
from market.webhooks.services import delivery_attempt, events_record
from market.webhooks.signing import verify
from tests.browser.test_buyer_flow import log_in
from tests.browser.test_wallet_pages import listing  # noqa: F401
from tests.webhooks.conftest import receiver  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def sends(page):
    """The row of the release's event in the table of recent sends."""
    return page.locator("h3:has-text('Recent sends') + .table-wrap tbody tr", has_text="purchase.released")


def test_a_buyer_adds_a_webhook_sees_its_sends_and_sends_one_again(
    browse, listing, users, fund, seeded_noise, receiver, settings, monkeypatch, shot  # noqa: F811
):
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # the receiver listens on 127.0.0.1
    queued = []  # no webhook worker here: the test sends what would be queued, by hand
    monkeypatch.setattr(tasks.events_record_task, "delay", lambda items: None)
    monkeypatch.setattr(tasks.delivery_attempt_task, "delay", queued.append)
    buyer = users("wendy")
    fund(buyer, 50)
    page = browse()
    log_in(page, "wendy")

    page.goto("/account/")
    page.get_by_label("Address").fill(receiver.url())
    page.get_by_label("purchase.released", exact=False).check()
    page.get_by_role("button", name="Add webhook address").click()
    secret = page.locator("#new-webhook-secret").input_value()
    assert secret.startswith("whsec_")
    page.reload()
    expect(page.locator("#new-webhook-secret")).to_have_count(0)  # shown once
    expect(page.get_by_text(receiver.url())).to_be_visible()

    purchase = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1").purchase
    purchase_release(purchase_id=purchase.pk)
    [delivery_id] = events_record(items=[("purchase.released", str(purchase.pk), buyer.pk)])
    delivery_attempt(delivery_id=delivery_id)
    [request] = receiver.requests
    assert verify(secret, request.headers["gradual-signature"], request.body)  # the secret the page showed

    page.goto("/account/")
    row = sends(page)
    expect(row).to_contain_text("sent")
    expect(row.locator("td").nth(2)).to_have_text("200")
    expect(row.locator("td").nth(3)).to_have_text("1")
    shot(page, "account-webhooks")

    queued.clear()
    row.get_by_role("button", name="Send again").click()
    expect(sends(page)).to_contain_text("waiting")
    assert queued == [delivery_id]
    delivery_attempt(delivery_id=delivery_id)
    assert len(receiver.requests) == 2
    page.reload()
    row = sends(page)
    expect(row).to_contain_text("sent")
    expect(row.locator("td").nth(3)).to_have_text("2")
    assert Delivery.objects.get(pk=delivery_id).attempt_log.count() == 2
