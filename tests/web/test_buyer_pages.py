"""The buyer's pages, through Django's test client (the browser tests drive the same pages live)."""

import json
import re
import time
from decimal import Decimal

import pytest

from market.accounts.models import User
from market.ledger.selectors import wallet_balance
from market.trading.models import Purchase
from releases.models import NoisePoint

pytestmark = pytest.mark.django_db


def page_text(response) -> str:
    return response.content.decode()


def test_sign_up_as_buyer_owner_or_both(client):
    answer = client.post(
        "/signup/",
        {"username": "newbie", "email": "", "role": "both", "password1": "a-long-password-1", "password2": "a-long-password-1"},
    )
    assert answer.status_code == 302
    user = User.objects.get(username="newbie")
    assert user.is_owner and user.is_buyer
    assert client.get("/library/").status_code == 200  # signed in
    bad = client.post("/signup/", {"username": "x", "role": "buyer", "password1": "a", "password2": "b"})
    assert bad.status_code == 400 and "password fields didn" in page_text(bad)


def test_login_logout_and_password_change(client, buyer):
    assert client.post("/accounts/login/", {"username": "bob", "password": "wrong"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "bob", "password": "a-long-password-1"}).status_code == 302
    changed = client.post(
        "/accounts/password/",
        {"old_password": "a-long-password-1", "new_password1": "another-long-pass-2", "new_password2": "another-long-pass-2"},
    )
    assert changed.status_code == 302
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/library/").status_code == 302  # back to the login page


def test_catalogue_search_filter_sort_and_pages(client, make_listing, owner):
    cheap = make_listing(price="1.00", ceiling="1", rows=20)
    dear = make_listing(price="99.00", ceiling="8", rows=20, statistics=[{"kind": "count"}])
    from market.catalog.models import Listing

    Listing.objects.filter(pk=dear.pk).update(title="Heart rates", description="beats per minute")
    text = page_text(client.get("/"))
    assert "Clinic visits" in text and "Heart rates" in text
    assert "Heart rates" in page_text(client.get("/?q=beats"))
    assert "Clinic visits" not in page_text(client.get("/?q=beats"))
    only_histograms = page_text(client.get("/?kind=histogram"))
    assert "Clinic visits" in only_histograms and "Heart rates" not in only_histograms
    assert "Heart rates" not in page_text(client.get("/?max_price=50"))
    assert "Clinic visits" not in page_text(client.get("/?min_ceiling=5"))
    ordered = page_text(client.get("/?sort=-price"))
    assert ordered.index("Heart rates") < ordered.index("Clinic visits")
    for _ in range(11):
        make_listing(rows=20)
    first = page_text(client.get("/"))
    assert "Page 1 of 2" in first and "13 listings" in first
    assert f"/listings/{cheap.pk}/" in page_text(client.get("/?sort=price"))


def test_listing_page_shows_offer_charts_and_a_quote(client, listing, buyer, fund):
    text = page_text(client.get(f"/listings/{listing.pk}/"))
    assert "Histogram of age in 50 bins" in text and "Mean of age" in text
    assert "<dt>Records</dt><dd>private</dd>" in text
    assert "Protects any one record, whether or not they are in the data; the number of records stays private." in text
    assert 'id="price-chart"><figcaption>Price' in text and 'class="plot-figure error-chart"' in text
    last = re.findall(r'<tr><th scope="row">ε ([\d.]+)</th><td class="num">([\d.]+)</td>', text)[-1]
    # 10 credits per eps up to the highest level sold: 4.5, the ceiling 5 less the mean's size release
    assert last == ("4.5", "45.00")
    assert "ε = 5: buyers may buy up to ε 4.5; ε 0.5 went to its size release" in text
    # the true answer never appears: e.g. the exact count of 500 records (outside the size release, a DP
    # release of the count whose noise is 0 about a quarter of the time at eps 0.5)
    size = text.index('id="size-release"')
    outside = text[:size] + text[text.index("</section>", size):]
    assert ">500<" not in outside and "500.0" not in outside
    client.force_login(buyer)
    fund(buyer, 5)  # a wallet that can pay: the Confirm button (an empty one gets a way to add credits instead)
    quoted = page_text(client.get(f"/listings/{listing.pk}/?epsilon=0.5"))
    assert "5.00 credits" in quoted and "Confirm: pay 5.00 credits" in quoted
    assert 'name="idempotency_key"' in quoted and "csrfmiddlewaretoken" in quoted
    too_high = client.get(f"/listings/{listing.pk}/?epsilon=6")
    assert too_high.status_code == 400 and "At most 4.5 (the ceiling less the size release)." in page_text(too_high)
    assert "not a number" in page_text(client.get(f"/listings/{listing.pk}/?epsilon=abc"))


def test_buying_from_the_page_then_the_next_step(
    client, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "0.5", "idempotency_key": "form-1"})
    assert answer.status_code == 302
    purchase = Purchase.objects.get()
    assert answer["Location"] == f"/purchases/{purchase.pk}/"
    # the form sent twice (a double click) charges once
    again = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "0.5", "idempotency_key": "form-1"})
    assert again.status_code == 302 and Purchase.objects.count() == 1
    assert wallet_balance(user=buyer) == Decimal("95.00")
    status = page_text(client.get(f"/purchases/{purchase.pk}/status/"))
    assert 'data-status="released"' in status and "hx-trigger" not in status and "Download CSV" in status
    listing_page = page_text(client.get(f"/listings/{listing.pk}/"))
    assert "Your level: ε = 0.5" in listing_page
    assert "Next step: going to ε = 1 costs <strong>5.00 credits</strong>" in listing_page
    refused = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "0.5", "idempotency_key": "form-2"})
    assert refused.status_code == 400 and "Must be above your current level 0.5." in page_text(refused)


def test_progress_page_long_polls_while_in_flight(client, listing, buyer, users, fund, django_capture_on_commit_callbacks, monkeypatch):
    from market.web import views

    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=False):  # no worker yet
        client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"})
    purchase = Purchase.objects.get()
    text = page_text(client.get(f"/purchases/{purchase.pk}/"))
    # the page asks once, at once, and the server holds the answer until the release (no poll a second)
    assert 'data-status="queued"' in text and 'hx-trigger="load, htmx:responseError' in text and "every" not in text
    assert '<noscript><meta http-equiv="refresh"' in text  # without JavaScript: the page refreshes itself
    # still in flight when the wait is over: the same fragment, which asks again (at most once a second)
    monkeypatch.setattr(views, "STATUS_WAIT", 0.3)
    started = time.monotonic()
    status = page_text(client.get(f"/purchases/{purchase.pk}/status/"))
    assert time.monotonic() - started >= 0.3
    assert 'data-status="queued"' in status and 'hx-trigger="load delay:1s, htmx:responseError' in status
    # someone else's purchase is 404 at once, in flight or not
    client.force_login(users("eve"))
    monkeypatch.setattr(views, "STATUS_WAIT", 25)
    started = time.monotonic()
    assert client.get(f"/purchases/{purchase.pk}/status/").status_code == 404
    assert time.monotonic() - started < 2


def test_the_status_of_a_released_purchase_is_answered_at_once(client, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"})
    purchase = Purchase.objects.get()
    started = time.monotonic()
    status = page_text(client.get(f"/purchases/{purchase.pk}/status/"))
    assert time.monotonic() - started < 2  # the wait is up to 25 s
    assert 'data-status="released"' in status and "hx-get" not in status and "Download CSV" in status


def test_library_downloads_and_top_up(client, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks, settings):
    settings.DEMO_MODE = True
    client.force_login(buyer)
    assert client.post("/wallet/top-up/", {"amount": "40"}).status_code == 302
    assert wallet_balance(user=buyer) == Decimal("40.00")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "2"})
    release = Purchase.objects.get().release
    text = page_text(client.get("/library/"))
    assert "Clinic visits" in text and "bought ε = 2, released ε = 2" in text and "20.00" in text
    as_json = json.loads(client.get(f"/library/releases/{release.public_id}.json").content)
    assert as_json["epsilon"] == "2.0000" and len(as_json["values"]) == 52
    assert {"label", "kind", "value", "noise_scale", "error_bound"} <= set(as_json["values"][0])
    as_csv = client.get(f"/library/releases/{release.public_id}.csv")
    assert as_csv["Content-Disposition"].endswith('.csv"')
    lines = as_csv.content.decode().strip().splitlines()
    assert lines[0] == "label,kind,value,noise_scale,error_bound_95" and len(lines) == 53
    # stored noise never leaves the server: the point's integer noise does not appear as a sequence
    # (its values are small whole numbers, which any page holds one by one)
    noise = [int(v) for v in NoisePoint.objects.get().integers()]
    assert len(noise) == 52 and any(noise)
    for page in (text, as_csv.content.decode(), json.dumps(as_json)):
        assert ", ".join(map(str, noise)) not in page and ",".join(map(str, noise)) not in page


def test_another_buyers_purchase_and_release_are_404(client, listing, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"})
    purchase = Purchase.objects.get()
    client.force_login(users("eve"))
    assert client.get(f"/purchases/{purchase.pk}/").status_code == 404
    assert client.get(f"/purchases/{purchase.pk}/status/").status_code == 404
    assert client.get(f"/library/releases/{purchase.release.public_id}.json").status_code == 404


def test_pages_need_login_and_forms_carry_csrf(client, listing):
    for url in ("/library/", "/owner/"):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    assert client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"}).status_code == 302
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(User.objects.create_user("csrf", password="a-long-password-1"))
    assert strict.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"}).status_code == 403


def test_the_confirm_button_binds_the_price_it_shows(
    client, listing, owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    """Confirm sends the quoted price; if the owner raised it meanwhile, nothing is charged and the page
    shows the new price with a Confirm of its own (issue 27)."""
    from market.catalog.services import listing_update

    fund(buyer, 100)
    client.force_login(buyer)
    quoted = page_text(client.get(f"/listings/{listing.pk}/?epsilon=1"))
    shown = re.search(r'<input type="hidden" name="max_price" value="([\d.]+)">', quoted)
    assert shown and shown.group(1) == "10.00"
    key = re.search(r'name="idempotency_key" value="(\w+)"', quoted).group(1)
    listing_update(owner=owner, listing_id=listing.pk, price_per_epsilon="30.00")  # the owner, meanwhile

    asked_again = client.post(f"/listings/{listing.pk}/buy/",
                              {"epsilon": "1", "idempotency_key": key, "max_price": shown.group(1)})
    assert asked_again.status_code == 409
    text = page_text(asked_again)
    assert "The price changed" in text and "now costs 30.00 credits, not the 10.00 credits shown" in text
    assert "Nothing was charged" in text and "Confirm: pay 30.00 credits" in text
    assert 'name="max_price" value="30.00"' in text
    assert not Purchase.objects.exists() and wallet_balance(user=buyer) == Decimal("100.00")

    new_key = re.search(r'name="idempotency_key" value="(\w+)"', text).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1", "idempotency_key": new_key,
                                                               "max_price": "30.00"})
    assert bought.status_code == 302
    assert Purchase.objects.get().price == Decimal("30.00") and wallet_balance(user=buyer) == Decimal("70.00")
