"""Webhooks with real Celery workers: the release worker consumes the default queue only, the
webhook worker, a process of its own, the ``webhooks`` queue only (as in the demo and in
production). A receiver that holds its answer, or keeps failing, never holds up or fails a purchase."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from market.trading.models import Purchase
from market.webhooks.models import Delivery
from tests.faults.conftest import ROOT, broker, database_url, needs_services, wait_for  # noqa: F401

# the webhook worker is a process of its own (as in the demo and in production), so it needs a
# database and a broker that another process can reach
pytestmark = [pytest.mark.django_db(transaction=True), needs_services]


@pytest.fixture
def workers(broker, seeded_noise):  # noqa: F811 (the broker fixture, imported)
    """The release worker (default queue, in this process) and the webhook worker (``webhooks``
    queue, its own process)."""
    from celery.contrib.testing.worker import start_worker

    from market.celery import app

    env = {**os.environ, "DATABASE_URL": database_url(), "WEBHOOKS_ALLOW_PRIVATE": "1"}
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / "webhook-worker.log", "w")
    hooks = subprocess.Popen([sys.executable, "-m", "tests.faults.worker", "--queues=webhooks", "--hostname=webhooks@test"],
                             cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=20,
                          queues=["celery"], hostname="celery@test"):
            yield
    finally:
        hooks.kill()
        hooks.wait(10)
        log.close()


def buy(client, listing_id, epsilon):
    answer = client.post("/api/v1/purchases/", {"listing": listing_id, "epsilon": epsilon}, format="json",
                         HTTP_PREFER="wait=30")
    assert answer.status_code in (201, 202), answer.content
    return answer.json()["id"]


def released(purchase_id):
    return Purchase.objects.filter(pk=purchase_id, status="released").exists()


def test_a_slow_receiver_never_slows_a_release(workers, api, buyer, fund, make_listing, receiver):
    """The receiver holds its first answer until the test lets it go (at most 120 s): a purchase
    made meanwhile is released while that answer is still held, whatever the machine's speed."""
    receiver.hold = 120
    fund(buyer, 1000)
    first, second = make_listing(), make_listing()
    client = api(buyer)
    endpoint = client.post("/api/v1/webhooks/endpoints/", {"url": receiver.url(), "events": ["purchase.released"]},
                           format="json")
    assert endpoint.status_code == 201

    a = buy(client, first.pk, "1")
    wait_for(lambda: released(a), 60, what="the first release")
    wait_for(receiver.arrived.is_set, 60, what="the first webhook to reach the receiver")
    # the receiver now holds its answer; a purchase made now is released meanwhile
    b = buy(client, second.pk, "1")
    wait_for(lambda: released(b), 60, what="the second release")
    assert receiver.requests[0].finished is None, "the release waited for the slow receiver"
    held = time.monotonic() - receiver.requests[0].started
    receiver.let_go.set()

    requests = receiver.wait_for(2, timeout=90)
    assert sorted(r.headers["gradual-event-type"] for r in requests) == ["purchase.released"] * 2
    wait_for(lambda: Delivery.objects.filter(status="succeeded").count() == 2, 60, what="both deliveries recorded")
    # the slow answer's attempt is logged with the time it took
    assert Delivery.objects.order_by("created_at").first().last_duration_ms >= int(held * 1000) - 50


def test_a_failing_receiver_never_fails_a_purchase(workers, api, buyer, fund, listing, receiver):
    receiver.fail_next = 1000
    fund(buyer, 1000)
    client = api(buyer)
    client.post("/api/v1/webhooks/endpoints/", {"url": receiver.url(), "events": ["purchase.released"]}, format="json")
    purchase = buy(client, listing.pk, "1")
    wait_for(lambda: released(purchase), 60, what="the release")
    receiver.wait_for(1)
    delivery = wait_for(lambda: Delivery.objects.filter(attempts=1, last_status_code=500).first(), 60, what="the attempt")
    assert delivery.status == "pending" and delivery.next_attempt_at is not None
    body = client.get(f"/api/v1/purchases/{purchase}/").json()
    assert body["status"] == "released" and body["release"]["values"]
