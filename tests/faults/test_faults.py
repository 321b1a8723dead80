"""Faults against the real PostgreSQL, Redis and worker processes.

Recovery from a lost or killed release has two layers:

* late acknowledgement (``acks_late``, ``reject_on_worker_lost``): a task is
  acknowledged only when it has finished, so when its worker dies the broker
  hands it to another worker (Redis: after the visibility timeout);
* the sweeper (``trading.sweep_pending``, every minute with the beat): it
  queues again any purchase still in flight after ``RELEASE_SWEEP_AFTER``.
  It covers what redelivery cannot: a task that never reached the broker
  (the broker was down at commit) or a message lost with the broker.

Either way the release task is idempotent and holds the path's row lock, so a
redelivered or re-sent task releases once and samples once.
"""

import os
import signal
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connections

from market.ledger.models import Transfer
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Holding, Purchase
from releases.models import NoisePath, NoisePoint, Release
from market.trading.services import purchases_sweep

from .conftest import needs_services, wait_for

pytestmark = [needs_services, pytest.mark.django_db(transaction=True)]


def post_purchase(api, buyer, listing, eps, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    answer = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": eps}, format="json", **headers)
    assert answer.status_code in (200, 202), answer.content
    return Purchase.objects.get(pk=answer.json()["id"]), answer.json()


def status_of(purchase):
    return Purchase.objects.values_list("status", flat=True).get(pk=purchase.pk)


def test_a_worker_killed_mid_release_is_replaced_and_releases_once(listing, buyer, fund, api, workers):
    fund(buyer, 100)
    doomed = workers("sleep:60")  # stops inside the release transaction, after the noise step
    purchase, _ = post_purchase(api, buyer, listing, "1")
    wait_for(lambda: status_of(purchase) == "computing", 30, "the first worker to start the release")
    os.kill(doomed.pid, signal.SIGKILL)  # no chance to acknowledge, roll back or clean up
    doomed.wait(10)
    assert NoisePoint.objects.count() == 0 and Release.objects.count() == 0  # its transaction died with it

    workers()  # a new worker: the unacknowledged task is delivered to it
    wait_for(lambda: status_of(purchase) == "released", 60, "the redelivered task to release")
    purchase.refresh_from_db()
    assert purchase.attempts >= 2
    assert Release.objects.filter(purchase=purchase).count() == 1
    assert NoisePoint.objects.filter(path__listing=listing).count() == 1
    assert wallet_balance(user=buyer) == Decimal("90.00") and ledger_is_balanced()


def test_a_purchase_made_while_redis_is_down_is_charged_then_completes(listing, buyer, fund, api, workers, monkeypatch):
    from kombu import Connection

    from market.trading.tasks import purchase_release_task

    fund(buyer, 100)
    # the purchase's task is sent to a Redis that does not answer (nothing listens there)
    unreachable = Connection("redis://127.0.0.1:6390/0", connect_timeout=1)
    monkeypatch.setattr(
        purchase_release_task, "delay", lambda *args: purchase_release_task.apply_async(args, connection=unreachable)
    )
    purchase, body = post_purchase(api, buyer, listing, "1")
    monkeypatch.undo()  # Redis is back
    # the API says what happened: paid, recorded, released when the queue is back
    assert body["status"] == "queued" and "cannot be reached" in body["note"]
    assert wallet_balance(user=buyer) == Decimal("90.00")
    assert Holding.objects.get(buyer=buyer, listing=listing).purchased == Decimal("1")

    workers()  # Redis is back; the sweeper (every minute with the beat) sends the purchase again
    assert purchases_sweep(older_than=timedelta(0)) == 1
    wait_for(lambda: status_of(purchase) == "released", 60, "the swept purchase to release")
    assert Release.objects.count() == 1 and Transfer.objects.filter(kind="purchase").count() == 1
    assert ledger_is_balanced()


def test_a_write_refused_mid_release_leaves_nothing_partial(listing, buyer, fund, api, workers, tmp_path):
    fund(buyer, 100)
    flag = tmp_path / "refuse"
    flag.touch()
    workers(f"refuse-while:{flag}")
    purchase, _ = post_purchase(api, buyer, listing, "1")
    wait_for(lambda: Purchase.objects.get(pk=purchase.pk).attempts >= 2, 30, "two refused attempts")
    # nothing of the refused transactions is visible: no point, no release, nothing spent
    assert NoisePoint.objects.count() == 0 and Release.objects.count() == 0
    assert NoisePath.objects.get(listing=listing).released_max == 0
    holding = Holding.objects.get(buyer=buyer, listing=listing)
    assert holding.released == 0 and holding.purchased == Decimal("1")
    assert status_of(purchase) in ("queued", "computing") and ledger_is_balanced()

    flag.unlink()  # the database accepts writes again: the task's next retry succeeds
    wait_for(lambda: status_of(purchase) == "released", 60, "a retry to release")
    assert Release.objects.count() == 1 and NoisePoint.objects.count() == 1
    assert wallet_balance(user=buyer) == Decimal("90.00") and ledger_is_balanced()


def test_the_same_purchase_sent_twice_at_once_with_one_key_charges_once(listing, buyer, fund, api, workers):
    fund(buyer, 100)
    workers()
    barrier, answers = threading.Barrier(2), []

    def send():
        try:
            barrier.wait()
            answers.append(post_purchase(api, buyer, listing, "1", key="double-click")[0].pk)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(answers) == 2 and answers[0] == answers[1]
    assert Transfer.objects.filter(kind="purchase").count() == 1
    assert wallet_balance(user=buyer) == Decimal("90.00")
    wait_for(lambda: status_of(Purchase.objects.get()) == "released", 60, "the release")
    assert Release.objects.count() == 1
