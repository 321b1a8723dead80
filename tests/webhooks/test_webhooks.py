"""Webhooks end to end against a real HTTP receiver: signed, delivered only to the event's user,
retried on failure until it succeeds or gives up, replayed, and carrying only what the API shows."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from market.trading.models import Purchase
from market.trading.services import purchase_create, purchase_fail, purchase_release
from market.webhooks import tasks
from market.webhooks.models import Attempt, Delivery, Endpoint, Event, Outbox
from market.webhooks.services import (
    MAX_ATTEMPTS,
    RETRY_DELAYS,
    deliveries_sweep,
    delivery_attempt,
    endpoint_create,
    endpoint_update,
    events_record,
    outbox_sweep,
)
from market.webhooks.signing import verify

pytestmark = pytest.mark.django_db


def add_endpoint(client, url, events):
    answer = client.post("/api/v1/webhooks/endpoints/", {"url": url, "events": events}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()


def buy(listing, buyer, epsilon="1", release=True):
    result = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=epsilon)
    if release:
        purchase_release(purchase_id=result.purchase.pk)
    return Purchase.objects.get(pk=result.purchase.pk)


def send(items):
    """Record events and send each new delivery once (as the webhook worker would)."""
    return [delivery_attempt(delivery_id=i) for i in events_record(items=items)]


@pytest.fixture
def bought(listing, buyer, fund, seeded_noise):
    fund(buyer, 1000)
    return buy(listing, buyer)


def listen(user, events, url):
    """An active endpoint of ``user``'s subscribed to ``events`` (made through the service)."""
    return endpoint_create(user=user, url=url, events=events)[0]


def test_a_release_emits_its_events_when_it_commits(listing, owner, buyer, fund, seeded_noise, monkeypatch,
                                                     django_capture_on_commit_callbacks, receiver):
    sent = []
    monkeypatch.setattr(tasks.events_record_task, "delay", lambda items: sent.append([tuple(i) for i in items]))
    listen(buyer, ["purchase.released", "purchase.failed"], receiver.url())
    listen(owner, ["listing.sold"], receiver.url())
    fund(buyer, 1000)
    purchase = buy(listing, buyer, release=False)
    with django_capture_on_commit_callbacks(execute=False):
        purchase_release(purchase_id=purchase.pk)
    assert sent == []  # nothing before the commit
    with django_capture_on_commit_callbacks(execute=True):
        purchase_release(purchase_id=buy(listing, buyer, epsilon="2", release=False).pk)
    second = Purchase.objects.filter(level_to=2).get()
    assert sent == [[("purchase.released", str(second.pk), buyer.pk), ("listing.sold", str(second.pk), owner.pk)]]

    sent.clear()
    third = buy(listing, buyer, epsilon="3", release=False)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_fail(purchase_id=third.pk, reason="test")
    assert sent == [[("purchase.failed", str(third.pk), buyer.pk)]]


def test_an_event_nobody_listens_to_is_not_noted(listing, owner, buyer, fund, seeded_noise, monkeypatch,
                                                 django_capture_on_commit_callbacks, receiver):
    """Events are noted (and a task sent) only for users with an active endpoint subscribed to their
    type: without one a release writes no outbox note and queues nothing; a disabled endpoint, or
    one subscribed to other events, does not count."""
    sent = []
    monkeypatch.setattr(tasks.events_record_task, "delay", lambda items: sent.append([tuple(i) for i in items]))
    Outbox.objects.all().delete()  # the listing's dataset.ready, if its owner listened
    fund(buyer, 1000)
    first = buy(listing, buyer, release=False)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_release(purchase_id=first.pk)
    assert sent == [] and not Outbox.objects.exists()

    quiet = listen(buyer, ["purchase.released"], receiver.url())
    endpoint_update(user=buyer, endpoint_id=quiet.pk, is_active=False)
    listen(owner, ["listing.sold"], receiver.url())
    second = buy(listing, buyer, epsilon="2", release=False)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_release(purchase_id=second.pk)
    assert sent == [[("listing.sold", str(second.pk), owner.pk)]]  # the owner's only


def test_a_failing_broker_never_fails_a_release(listing, buyer, fund, seeded_noise, monkeypatch,
                                                django_capture_on_commit_callbacks):
    def down(items):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.events_record_task, "delay", down)
    fund(buyer, 1000)
    purchase = buy(listing, buyer, release=False)
    with django_capture_on_commit_callbacks(execute=True):
        release = purchase_release(purchase_id=purchase.pk)
    assert release is not None
    assert Purchase.objects.get(pk=purchase.pk).status == "released"


def test_an_event_whose_task_is_lost_is_sent_by_the_sweeper(api, listing, owner, buyer, fund, seeded_noise,
                                                           monkeypatch, django_capture_on_commit_callbacks,
                                                           receiver, clock):
    """The broker is down when the release commits: its events wait in the outbox (written with the
    release) and the sweeper records and sends them; nothing is lost, nothing is sent twice."""
    def down(items):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.events_record_task, "delay", down)
    monkeypatch.setattr(tasks.delivery_attempt_task, "delay", lambda delivery_id: None)  # sent below, by hand
    Outbox.objects.all().delete()  # the listing's dataset.ready, had its owner listened
    add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    owners = listen(owner, ["listing.sold"], receiver.url())
    fund(buyer, 1000)
    purchase = buy(listing, buyer, release=False)
    with django_capture_on_commit_callbacks(execute=True):
        # the owner's endpoint is disabled after the event was noted: the sweeper then records nothing for it
        purchase_release(purchase_id=purchase.pk)
    endpoint_update(user=owner, endpoint_id=owners.pk, is_active=False)
    notes = set(Outbox.objects.values_list("type", "object_id", "user_id"))
    assert notes == {("purchase.released", str(purchase.pk), buyer.pk), ("listing.sold", str(purchase.pk), owner.pk)}
    assert not Event.objects.exists()

    assert outbox_sweep(now=clock.now) == 0  # a note just written still has its task coming
    clock.advance(minutes=3)
    assert outbox_sweep(now=clock.now) == 2
    assert not Outbox.objects.exists()  # recorded (the buyer's) or wanted by no one any more (the owner's)
    [delivery] = Delivery.objects.all()
    delivery_attempt(delivery_id=delivery.pk)
    [request] = receiver.requests
    assert request.headers["gradual-event-type"] == "purchase.released"
    assert json.loads(request.body)["data"]["id"] == str(purchase.pk)
    clock.advance(minutes=3)
    assert outbox_sweep(now=clock.now) == 0 and Delivery.objects.count() == 1


def test_an_event_is_noted_only_if_its_change_commits(listing, owner, buyer, fund, seeded_noise, receiver):
    """The outbox note is written in the release's transaction: a release that rolls back leaves none."""
    from django.db import transaction

    listen(buyer, ["purchase.released"], receiver.url())
    listen(owner, ["listing.sold"], receiver.url())
    fund(buyer, 1000)
    purchase = buy(listing, buyer, release=False)
    with pytest.raises(RuntimeError), transaction.atomic():
        purchase_release(purchase_id=purchase.pk)
        assert Outbox.objects.filter(object_id=str(purchase.pk)).count() == 2
        raise RuntimeError("the transaction fails after the release")
    assert not Outbox.objects.filter(object_id=str(purchase.pk)).exists()
    assert Purchase.objects.get(pk=purchase.pk).status != "released"


def test_signed_with_the_secret_shown_once(api, buyer, bought, receiver):
    client = api(buyer)
    created = add_endpoint(client, receiver.url(), ["purchase.released"])
    secret = created["secret"]
    assert secret.startswith("whsec_")
    assert "secret" not in client.get(f"/api/v1/webhooks/endpoints/{created['id']}/").json()
    assert secret.encode() not in bytes(Endpoint.objects.get(pk=created["id"]).secret)  # sealed at rest

    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert delivery.status == "succeeded" and delivery.last_status_code == 200
    [request] = receiver.requests
    signature = request.headers["gradual-signature"]
    assert verify(secret, signature, request.body)
    assert not verify(secret.replace("whsec_", "whsec_x"), signature, request.body)  # a wrong secret
    assert not verify(secret, signature, request.body.replace(b"released", b"releasex"))  # a tampered body
    assert not verify(secret, signature, request.body, now=int(signature.split(",")[0][2:]) + 3600)  # too old
    event = Event.objects.get()
    assert request.headers["gradual-event-id"] == event.pk
    assert request.headers["gradual-event-type"] == "purchase.released"
    assert request.headers["gradual-delivery-id"] == delivery.pk
    assert request.headers["content-type"] == "application/json"


def test_the_body_is_what_the_api_shows_that_user(api, buyer, owner, bought, listing, receiver):
    add_endpoint(api(buyer), receiver.url("/buyer"), ["purchase.released"])
    add_endpoint(api(owner), receiver.url("/owner"), ["listing.sold"])
    send([("purchase.released", str(bought.pk), buyer.pk), ("listing.sold", str(bought.pk), owner.pk)])
    by_path = {r.path: json.loads(r.body) for r in receiver.requests}

    as_buyer = by_path["/buyer"]
    assert as_buyer["type"] == "purchase.released"
    shown = api(buyer).get(f"/api/v1/purchases/{bought.pk}/").json()
    assert as_buyer["data"] == {"object": "purchase", **shown}
    assert as_buyer["data"]["release"]["values"]  # the released values: what the buyer bought

    sale = by_path["/owner"]["data"]
    assert sale["object"] == "sale"
    assert sale["listing"] == api(owner).get(f"/api/v1/listings/{listing.pk}/").json()
    assert (sale["epsilon"], sale["price"]) == ("1.0000", str(bought.price))
    assert "bob" not in json.dumps(sale) and str(bought.pk) not in json.dumps(sale)  # never who bought

    # never the true answer nor stored noise: no such field anywhere, and the true values are not sent
    def keys(value):
        if isinstance(value, dict):
            for k, v in value.items():
                yield k
                yield from keys(v)
        elif isinstance(value, list):
            for v in value:
                yield from keys(v)

    for body in by_path.values():
        assert not {"answer", "true_answer", "noise", "jumps", "raw_file", "typed_file"} & set(keys(body))
    truth = [float(v) for v in listing.true_answer()]
    values = [v["value"] for v in as_buyer["data"]["release"]["values"]]
    assert values != truth[: len(values)]


def test_only_the_events_user_is_sent_to(api, users, buyer, bought, receiver):
    other = users("mallory")
    add_endpoint(api(buyer), receiver.url("/mine"), ["purchase.released"])
    theirs = add_endpoint(api(other), receiver.url("/theirs"), ["purchase.released", "purchase.failed"])
    send([("purchase.released", str(bought.pk), buyer.pk)])
    assert [r.path for r in receiver.requests] == ["/mine"]
    assert not Delivery.objects.filter(endpoint_id=theirs["id"]).exists()
    # an event naming someone who cannot see the object makes nothing (the builder sees it as them)
    assert send([("purchase.released", str(bought.pk), other.pk)]) == []
    assert [r.path for r in receiver.requests] == ["/mine"]

    # and nobody else can see, change or replay them: 404, as if they did not exist
    delivery = Delivery.objects.get()
    mine = Endpoint.objects.get(owner=buyer)
    snoop = api(other)
    assert snoop.get("/api/v1/webhooks/deliveries/").json()["results"] == []
    assert [e["id"] for e in snoop.get("/api/v1/webhooks/endpoints/").json()["results"]] == [theirs["id"]]
    for method, url in [
        ("get", f"/api/v1/webhooks/endpoints/{mine.pk}/"),
        ("patch", f"/api/v1/webhooks/endpoints/{mine.pk}/"),
        ("delete", f"/api/v1/webhooks/endpoints/{mine.pk}/"),
        ("post", f"/api/v1/webhooks/endpoints/{mine.pk}/roll-secret/"),
        ("post", f"/api/v1/webhooks/endpoints/{mine.pk}/test/"),
        ("get", f"/api/v1/webhooks/deliveries/{delivery.pk}/"),
        ("post", f"/api/v1/webhooks/deliveries/{delivery.pk}/replay/"),
    ]:
        answer = getattr(snoop, method)(url, {"description": "x"} if method == "patch" else None, format="json")
        assert answer.status_code == 404, (method, url, answer.content)
        assert answer.json()["error"]["code"] == "not_found"
    assert Endpoint.objects.filter(pk=mine.pk, description="").exists()
    assert Delivery.objects.get().attempts == 1


def test_retried_with_backoff_until_it_succeeds(api, buyer, bought, receiver, clock):
    receiver.fail_next = 2
    add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    wait = (delivery.next_attempt_at - clock.now).total_seconds()
    assert RETRY_DELAYS[0] * 0.9 <= wait <= RETRY_DELAYS[0] * 1.1

    sent = []
    queue = lambda *, delivery_ids: sent.extend(delivery_ids) or len(delivery_ids)  # noqa: E731

    import market.webhooks.services as services

    original = services.deliveries_queue
    services.deliveries_queue = queue
    try:
        clock.advance(seconds=30)
        assert deliveries_sweep() == 0 and delivery_attempt(delivery_id=delivery.pk) is None  # not due yet
        clock.advance(seconds=RETRY_DELAYS[0] * 1.1)
        assert deliveries_sweep() == 1 and sent == [delivery.pk]
    finally:
        services.deliveries_queue = original
    second = delivery_attempt(delivery_id=delivery.pk)
    assert (second.status, second.attempts) == ("pending", 2)
    assert (second.next_attempt_at - clock.now).total_seconds() >= RETRY_DELAYS[1] * 0.9
    clock.advance(seconds=RETRY_DELAYS[1] * 1.1)
    third = delivery_attempt(delivery_id=delivery.pk)
    assert (third.status, third.attempts, third.last_status_code, third.next_attempt_at) == ("succeeded", 3, 200, None)
    log = list(Attempt.objects.filter(delivery_id=delivery.pk).order_by("number"))
    assert [(a.number, a.status_code, a.succeeded) for a in log] == [(1, 500, False), (2, 500, False), (3, 200, True)]
    assert log[0].response == "failing on purpose"
    # every attempt carries the same event, signed afresh
    assert len({r.headers["gradual-event-id"] for r in receiver.requests}) == 1

    # a delivery that succeeded is never sent again by the retries
    clock.advance(days=2)
    assert delivery_attempt(delivery_id=delivery.pk) is None
    assert deliveries_sweep() == 0
    assert len(receiver.requests) == 3


def test_gives_up_after_about_a_day(api, buyer, bought, receiver, clock):
    receiver.fail_next = 100
    add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    started = clock.now
    while delivery.status == "pending":
        clock.now = delivery.next_attempt_at
        delivery = delivery_attempt(delivery_id=delivery.pk)
    assert (delivery.status, delivery.attempts) == ("failed", MAX_ATTEMPTS)
    assert 0.85 < (clock.now - started).total_seconds() / 86400 < 1.1
    assert len(receiver.requests) == MAX_ATTEMPTS


def test_redirects_are_not_followed(api, buyer, bought, receiver):
    receiver.redirect_to = receiver.url("/elsewhere")
    add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert (delivery.status, delivery.last_status_code) == ("pending", 302)
    assert [r.path for r in receiver.requests] == ["/hook"]


def test_an_unreachable_or_slow_receiver_is_an_attempt_that_failed(api, buyer, bought, receiver, monkeypatch):
    from market.webhooks import transport

    monkeypatch.setattr(transport, "TOTAL_TIMEOUT", 0.5)
    receiver.hold = 2
    add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert (delivery.status, delivery.last_status_code, delivery.last_error) == ("pending", None, "no answer in time")


def test_replayed_from_the_api_and_the_account_page(api, client, buyer, bought, receiver, eager_celery,
                                                    django_capture_on_commit_callbacks):
    api_client = api(buyer)
    add_endpoint(api_client, receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert delivery.status == "succeeded"

    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client.post(f"/api/v1/webhooks/deliveries/{delivery.pk}/replay/", format="json")
    assert answer.status_code == 202, answer.content
    assert len(receiver.requests) == 2
    detail = api_client.get(f"/api/v1/webhooks/deliveries/{delivery.pk}/").json()
    assert detail["status"] == "succeeded" and [a["number"] for a in detail["attempt_log"]] == [1, 2]
    assert detail["payload"]["data"]["id"] == str(bought.pk)

    client.force_login(buyer)
    page = client.get("/account/")
    assert f"/account/webhooks/deliveries/{delivery.pk}/replay/".encode() in page.content
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/account/webhooks/deliveries/{delivery.pk}/replay/")
    assert answer.status_code == 302
    assert len(receiver.requests) == 3
    assert receiver.requests[0].headers["gradual-event-id"] == receiver.requests[2].headers["gradual-event-id"]


def test_rolling_the_secret(api, buyer, bought, receiver):
    client = api(buyer)
    created = add_endpoint(client, receiver.url(), ["purchase.released"])
    rolled = client.post(f"/api/v1/webhooks/endpoints/{created['id']}/roll-secret/", format="json")
    assert rolled.status_code == 200 and rolled.json()["secret"] != created["secret"]
    send([("purchase.released", str(bought.pk), buyer.pk)])
    [request] = receiver.requests
    assert verify(rolled.json()["secret"], request.headers["gradual-signature"], request.body)
    assert not verify(created["secret"], request.headers["gradual-signature"], request.body)


def test_a_test_event(api, buyer, receiver, eager_celery, django_capture_on_commit_callbacks):
    client = api(buyer)
    created = add_endpoint(client, receiver.url(), ["purchase.released"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/api/v1/webhooks/endpoints/{created['id']}/test/", format="json")
    assert answer.status_code == 202, answer.content
    [request] = receiver.requests
    assert request.headers["gradual-event-type"] == "ping"
    assert verify(created["secret"], request.headers["gradual-signature"], request.body)
    assert client.get(f"/api/v1/webhooks/deliveries/{answer.json()['id']}/").json()["status"] == "succeeded"


def test_strict_input_and_roles(api, buyer, owner, receiver):
    client = api(buyer)
    owner.is_buyer = False
    owner.save(update_fields=["is_buyer"])

    def refused(body, field):
        answer = client.post("/api/v1/webhooks/endpoints/", body, format="json")
        assert answer.status_code == 400, answer.content
        assert field in answer.json()["error"]["fields"], answer.json()
        return answer.json()

    refused({"url": receiver.url(), "events": ["listing.sold"]}, "events")  # a buyer's events only
    refused({"url": receiver.url(), "events": []}, "events")
    refused({"url": receiver.url(), "events": ["purchase.released"], "extra": 1}, "extra")
    refused({"url": "ftp://example.com/x", "events": ["purchase.released"]}, "url")
    refused({"url": "http://user:pw@example.com/x", "events": ["purchase.released"]}, "url")
    refused({"url": receiver.url(), "events": "purchase.released"}, "events")
    assert not Endpoint.objects.exists()

    answer = api(owner).post("/api/v1/webhooks/endpoints/", {"url": receiver.url(), "events": ["purchase.released"]},
                             format="json")
    assert answer.status_code == 400  # an owner who is not a buyer
    assert api(owner).post("/api/v1/webhooks/endpoints/", {"url": receiver.url(), "events": ["dataset.ready", "listing.sold"]},
                           format="json").status_code == 201
    created = add_endpoint(client, receiver.url(), ["purchase.released"])
    patched = client.patch(f"/api/v1/webhooks/endpoints/{created['id']}/", {"is_active": "yes"}, format="json")
    assert patched.status_code == 400 and "is_active" in patched.json()["error"]["fields"]
    patched = client.patch(f"/api/v1/webhooks/endpoints/{created['id']}/",
                           {"is_active": False, "events": ["purchase.failed"]}, format="json")
    assert patched.status_code == 200 and patched.json()["events"] == ["purchase.failed"]
    assert client.delete(f"/api/v1/webhooks/endpoints/{created['id']}/").status_code == 204
    assert client.get(f"/api/v1/webhooks/endpoints/{created['id']}/").status_code == 404
    assert api().get("/api/v1/webhooks/endpoints/").status_code == 401


@override_settings(WEBHOOKS_ALLOW_PRIVATE=False)
def test_private_addresses_refused_unless_allowed(api, buyer, bought, receiver):
    client = api(buyer)
    for url in (receiver.url(), "http://10.1.2.3/x", "http://169.254.169.254/latest/meta-data/", "http://[::1]:8000/"):
        answer = client.post("/api/v1/webhooks/endpoints/", {"url": url, "events": ["purchase.released"]}, format="json")
        assert answer.status_code == 400 and "url" in answer.json()["error"]["fields"], (url, answer.content)
    # an endpoint made while allowed is refused at sending time once the setting is off
    with override_settings(WEBHOOKS_ALLOW_PRIVATE=True):
        add_endpoint(client, receiver.url(), ["purchase.released"])
    [delivery] = send([("purchase.released", str(bought.pk), buyer.pk)])
    assert delivery.status == "pending" and "private or local" in delivery.last_error
    assert receiver.requests == []


def test_account_page_adds_an_endpoint_and_shows_its_secret_once(client, buyer, receiver):
    client.force_login(buyer)
    page = client.get("/account/")
    assert b"Webhooks" in page.content and b"purchase.released" in page.content and b"listing.sold" not in page.content
    answer = client.post("/account/webhooks/", {"url": receiver.url(), "events": ["purchase.released"]})
    assert answer.status_code == 302
    endpoint = Endpoint.objects.get(owner=buyer)
    secret = endpoint.signing_secret()
    shown = client.get("/account/").content.decode()
    assert secret in shown and receiver.url() in shown
    assert secret not in client.get("/account/").content.decode()  # once

    bad = client.post("/account/webhooks/", {"url": "ftp://x", "events": ["purchase.released"]})
    assert bad.status_code == 400 and b"http://" in bad.content
    client.post(f"/account/webhooks/{endpoint.pk}/roll/")
    assert endpoint.signing_secret() != Endpoint.objects.get(pk=endpoint.pk).signing_secret()
    client.post(f"/account/webhooks/{endpoint.pk}/delete/")
    assert not Endpoint.objects.exists()


def test_the_documented_verification_snippet_checks_a_real_delivery(api, buyer, bought, receiver):
    """The ten lines in docs/webhooks.md, run as written, on a delivery the receiver got."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    [snippet] = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "def verify" in block]
    assert len(snippet.strip().splitlines()) <= 10
    namespace: dict = {}
    exec(snippet, namespace)  # noqa: S102 - our own documentation
    documented = namespace["verify"]
    created = add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    send([("purchase.released", str(bought.pk), buyer.pk)])
    [request] = receiver.requests
    signature = request.headers["gradual-signature"]
    assert documented(created["secret"], signature, request.body)
    assert not documented(created["secret"], signature, request.body + b" ")
    assert not documented("whsec_wrong", signature, request.body)


def test_a_dataset_ready_event_to_its_owner(api, owner, users, receiver, monkeypatch, django_capture_on_commit_callbacks):
    from tests.datasets import ready_dataset
    from tests.fixtures.market import make_csv

    sent = []
    monkeypatch.setattr(tasks.events_record_task, "delay", lambda items: sent.extend(tuple(i) for i in items))
    owner_client = api(owner)
    add_endpoint(owner_client, receiver.url(), ["dataset.ready"])
    add_endpoint(api(users("eve", owner=True)), receiver.url("/eve"), ["dataset.ready"])
    with django_capture_on_commit_callbacks(execute=True):
        dataset = ready_dataset(owner=owner, name="visits", data=make_csv(50), total_budget="10")
    assert sent == [("dataset.ready", dataset.public_id, owner.pk)]
    send(sent)
    [request] = receiver.requests
    assert request.path == "/hook"
    body = json.loads(request.body)
    assert body["data"] == {"object": "dataset", **owner_client.get(f"/api/v1/datasets/{dataset.public_id}/").json()}
    # a re-run of the same task makes no second event and no second delivery
    assert send(sent) == [] and Event.objects.count() == 1 and len(receiver.requests) == 1


def test_secrets_move_to_a_new_encryption_key(settings, api, buyer, receiver):
    import io

    from django.core.management import call_command

    from market.core import crypto

    old, new = crypto.new_key_entry("old"), crypto.new_key_entry("new")
    settings.GRADUAL_ENCRYPTION_KEYS = old
    created = add_endpoint(api(buyer), receiver.url(), ["purchase.released"])
    settings.GRADUAL_ENCRYPTION_KEYS = f"{new},{old}"
    out = io.StringIO()
    call_command("rotate_encryption_keys", stdout=out)
    assert "webhook secrets: 1 re-encrypted" in out.getvalue()
    settings.GRADUAL_ENCRYPTION_KEYS = new  # the old key removed
    endpoint = Endpoint.objects.get(pk=created["id"])
    assert crypto.key_id_of(bytes(endpoint.secret)) == "new"
    assert endpoint.signing_secret() == created["secret"]


def test_webhook_tasks_have_their_own_queue_and_a_scheduled_sweeper():
    from market.celery import app

    for name in ("webhooks.events_record", "webhooks.delivery_attempt", "webhooks.sweep"):
        assert app.amqp.router.route({}, name)["queue"].name == "webhooks", name
    assert app.amqp.router.route({}, "trading.release_purchase")["queue"].name == "celery"
    assert any(entry["task"] == "webhooks.sweep" for entry in app.conf.beat_schedule.values())


def test_a_prepared_listing_tells_its_owner_it_is_ready_or_failed(owner, settings, monkeypatch, receiver,
                                                                   django_capture_on_commit_callbacks):
    """A listing prepared by a task (a large table) notes listing.ready or listing.failed for its owner,
    carrying the listing as the owner's GET shows it (its status, and why it failed)."""
    from market.catalog import services
    from market.catalog.services import dataset_budget_set, listing_create, listing_prepare
    from market.webhooks.events import payload_builder
    from tests.datasets import ready_dataset
    from tests.fixtures.market import STATISTICS, make_csv

    settings.LISTING_PREPARE_INLINE_ROWS = 0
    monkeypatch.setattr(services.preparation, "queue", lambda *, listing_pk: None)
    monkeypatch.setattr(tasks.events_record_task, "delay", lambda items: None)
    listen(owner, ["listing.ready", "listing.failed"], receiver.url())
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="8")
    made = [listing_create(owner=owner, dataset_id=dataset.public_id, title=f"Visits {n}", statistics=STATISTICS[:1],
                           ceiling="1", price_per_epsilon="1.00") for n in (1, 2)]
    assert not Outbox.objects.exists()
    listing_prepare(listing_id=made[0].pk)
    dataset_budget_set(actor=owner, dataset_id=dataset.public_id, budget="7", reason="less")
    listing_prepare(listing_id=made[1].pk)  # the dataset moved: failed
    notes = sorted(Outbox.objects.values_list("type", "object_id", "user_id"))
    assert notes == [("listing.failed", str(made[1].pk), owner.pk), ("listing.ready", str(made[0].pk), owner.pk)]
    ready = payload_builder("listing.ready")(object_id=str(made[0].pk), user=owner)
    failed = payload_builder("listing.failed")(object_id=str(made[1].pk), user=owner)
    assert (ready["object"], ready["status"], ready["is_open"]) == ("listing", "ready", True)
    assert failed["status"] == "failed" and "the dataset changed" in failed["failure"]
