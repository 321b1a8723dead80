"""Purchases racing the release worker: never a deadlock, never a 5xx.

Before the lock order (``market.core.locks``), a purchase held its listing
``FOR UPDATE`` and waited for the buyer's holding, while the release
transaction held the holding and, at commit, checked its foreign key to the
listing with ``FOR KEY SHARE``: PostgreSQL broke the cycle by killing one of
them, and the buyer got a 500. These tests replay the three ways it was seen
from outside, against real worker processes, many times over:

* a step-up sent at once after a purchase on the same listing;
* six step-ups by one buyer at once;
* thirty buyers buying one listing at once, each at its own level.

Every answer must be 200, 202, a 409 (``busy``) that carries ``Retry-After``,
or a 400 for a step that a concurrent step of the same buyer overtook; afterwards every purchase is released and the ledger's and
the releases' invariants (``market.core.invariants``) all hold.
"""

import threading
from collections import Counter
from decimal import Decimal

import pytest
from django.db import connection, connections

from market.core.invariants import violations
from market.trading.models import Purchase

from .conftest import needs_services, wait_for

pytestmark = [needs_services, pytest.mark.django_db(transaction=True)]


class Answers:
    """Every answer the clients got: status counts, and the 409s' headers."""

    def __init__(self):
        self.statuses = Counter()
        self.busy_without_retry_after = 0
        self.lock = threading.Lock()

    def post(self, client, listing, eps):
        try:
            answer = client.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": str(eps)}, format="json")
            status = answer.status_code
            if status == 409 and not answer.headers.get("Retry-After"):
                with self.lock:
                    self.busy_without_retry_after += 1
            if status == 409 and answer.json()["error"]["code"] != "busy":
                status = "409 not busy"
            if status == 400 and "Must be above your current level" not in str(answer.json()["error"]["fields"]):
                status = "400 not overtaken"
        except Exception:  # noqa: BLE001 - an exception escaping the view is a 5xx to a client
            status = 500
        with self.lock:
            self.statuses[status] += 1
        return status

    def assert_clean(self, at_least: int):
        assert sum(self.statuses.values()) >= at_least, self.statuses
        # 400 only for a step overtaken by a concurrent step of the same buyer to a higher level
        assert set(self.statuses) <= {200, 202, 400, 409}, f"answers: {dict(self.statuses)}"
        assert self.busy_without_retry_after == 0


def at_once(calls):
    """Run the calls at the same moment, each on its own thread and database connection."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        try:
            barrier.wait()
            call()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def drained(timeout=120):
    wait_for(lambda: not Purchase.objects.filter(status__in=Purchase.IN_FLIGHT).exists(), timeout, "every release")


def assert_invariants():
    with connection.cursor() as cursor:
        broken = {name: n for name, n in violations(cursor).items() if n}
    assert not broken, broken
    assert not Purchase.objects.filter(status="failed").exists()


@pytest.fixture
def storm(make_listing, users, fund, api, workers):
    workers()
    workers()  # two release workers: releases commit while purchases wait

    def buyers(n, prefix):
        made = []
        for i in range(n):
            b = users(f"{prefix}{i}")
            fund(b, 50_000)
            made.append(api(b))
        return made

    return make_listing, buyers


def test_a_step_up_sent_at_once_after_a_purchase_never_fails(storm):
    make_listing, buyers = storm
    listing = make_listing(ceiling="20", price="1.00")
    (client,) = buyers(1, "stepper")
    answers = Answers()
    for r in range(50):
        first, second = Decimal("0.1") + Decimal("0.2") * r, Decimal("0.2") + Decimal("0.2") * r
        assert answers.post(client, listing, first) == 202
        answers.post(client, listing, second)  # at once: the first is still being released
        drained()
    answers.assert_clean(at_least=100)
    assert answers.statuses[202] >= 50
    assert_invariants()


def test_six_step_ups_by_one_buyer_at_once_never_fail(storm):
    make_listing, buyers = storm
    listing = make_listing(ceiling="20", price="1.00")
    (client,) = buyers(1, "rusher")
    answers = Answers()
    for r in range(10):
        levels = [Decimal("0.1") * (6 * r + i + 1) for i in range(6)]
        at_once([lambda eps=eps: answers.post(client, listing, eps) for eps in levels])
        drained()
    answers.assert_clean(at_least=60)
    assert answers.statuses[202] >= 10  # at least one step per round went through
    assert_invariants()


def test_thirty_buyers_at_thirty_levels_on_one_listing_never_fail(storm):
    make_listing, buyers = storm
    listing = make_listing(ceiling="10", price="1.00")
    clients = buyers(30, "crowd")
    answers = Answers()
    for r in range(2):
        at_once([lambda c=c, i=i: answers.post(c, listing, Decimal("0.1") * (i + 1) + 4 * r) for i, c in enumerate(clients)])
        drained()
    answers.assert_clean(at_least=60)
    # different buyers never wait on each other's in-flight purchases: all are taken
    assert answers.statuses[202] == 60, dict(answers.statuses)
    assert_invariants()
