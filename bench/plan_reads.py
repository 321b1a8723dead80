"""CPU per read of a listing's quote and of a released purchase (what reading the statistics plan costs).

    python -m bench.plan_reads                  # a throw-away database (SQLite in memory without DATABASE_URL)
    python -m bench.plan_reads --in-place       # the configured database, with the demo data (seeded if absent)

The demo data (``seed_demo``) is seeded; the demo buyer buys and is released up to eps 0.5 on the
two largest demo listings (44 and 35 values). Then, through Django's test client signed in as
that buyer, ``GET /api/v1/listings/{id}/quote/?epsilon=1`` and ``GET /api/v1/purchases/{id}/`` are
each called ``--calls`` times, ``--repeat`` times over, with the plan stored with the listing and
with it laid out again from the dataset on every read (``Listing.plan`` set to null, as every read
did before it was stored), the two in turn so that both meet the same load; the figure is the least
CPU time (``time.process_time``) per call over the repeats, with the queries of one call, and the
cost of ``listing_plan`` alone.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from bench.stamp import write_json

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
os.environ.setdefault("THROTTLE_USER", "1000000/minute")

import django

django.setup()

from django.db import connection
from django.test.utils import setup_test_environment

LISTINGS = ("Clinic patients by district, sex and smoking", "Penguins by species and island")


def _released(buyer, listing):
    from market.trading.models import Purchase
    from market.trading.services import purchase_create, purchase_release

    purchase = Purchase.objects.filter(buyer=buyer, listing=listing, status="released").first()
    if purchase is None:
        purchase = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="0.5").purchase
        purchase_release(purchase_id=purchase.pk)  # done at the commit already (eager): returns its release
        purchase.refresh_from_db()
    assert purchase.status == "released", purchase.failure_reason
    return purchase


def _timed(client, url: str, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        client.get(url)
    return (time.process_time() - start) / calls * 1e3


def _queries(client, url: str) -> int:
    queries = []  # counted by a wrapper: a request resets the connection's own query log
    with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
        answer = client.get(url)
    assert answer.status_code == 200, answer.content[:300]
    return len(queries)


def run(calls: int, repeat: int) -> list[tuple]:
    from django.core.management import call_command
    from django.test import Client

    from market.accounts.models import User
    from market.catalog.models import Listing
    from market.catalog.selectors import listing_plan
    from market.celery import app

    app.conf.task_always_eager = True  # a purchase is released at its commit, in place: nothing queued
    call_command("seed_demo", verbosity=0)
    buyer = User.objects.get(username="demo-buyer")
    client = Client()
    client.force_login(buyer)
    rows = []
    for title in LISTINGS:
        listing = Listing.objects.get(title=title)
        stored = listing.plan
        purchase = _released(buyer, listing)
        urls = {"quote": f"/api/v1/listings/{listing.pk}/quote/?epsilon=1", "purchase": f"/api/v1/purchases/{purchase.pk}/"}
        best = {(what, way): float("inf") for what in urls for way in ("stored", "rebuilt")}
        queries = {}
        try:
            for _ in range(repeat):  # the two ways alternate, so that both meet the same load on the machine
                for way, plan in (("rebuilt", None), ("stored", stored)):
                    Listing.objects.filter(pk=listing.pk).update(plan=plan)
                    for what, url in urls.items():
                        queries[what, way] = _queries(client, url)
                        best[what, way] = min(best[what, way], _timed(client, url, calls))
        finally:
            Listing.objects.filter(pk=listing.pk).update(plan=stored)
        for what in urls:
            rows.append((f"GET {what} ({listing.dim} values)", best[what, "rebuilt"], best[what, "stored"],
                         queries[what, "rebuilt"], queries[what, "stored"]))
        plan_ms = {}
        for way, plan in (("rebuilt", None), ("stored", stored)):
            fresh = Listing.objects.select_related("dataset").get(pk=listing.pk)
            fresh.plan = plan
            start = time.process_time()
            for _ in range(calls):
                listing_plan(fresh)
            plan_ms[way] = (time.process_time() - start) / calls * 1e3
        rows.append((f"listing_plan ({listing.dim} values)", plan_ms["rebuilt"], plan_ms["stored"], 0, 0))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--in-place", action="store_true", help="use the configured database, not a throw-away one")
    args = parser.parse_args(argv)

    setup_test_environment()
    old_name = None
    if not args.in_place:
        connection.settings_dict.setdefault("TEST", {})["NAME"] = None if connection.vendor == "sqlite" else "bench_plan_reads"
        old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        rows = run(args.calls, args.repeat)
    finally:
        if old_name is not None:
            connection.creation.destroy_test_db(old_name, verbosity=0)
    print(f"database: {connection.vendor}; Python {platform.python_version()}; {os.cpu_count()} cores; "
          f"least of {args.repeat} runs of {args.calls} calls")
    print(f"{'CPU ms per call (queries)':<36}{'rebuilt (before)':>18}{'stored':>14}")
    for name, before, after, q_before, q_after in rows:
        shown = [f"{ms:.2f}" + (f" ({q})" if q else "") for ms, q in ((before, q_before), (after, q_after))]
        print(f"{name:<36}{shown[0]:>18}{shown[1]:>14}")
    if args.json:
        write_json(args.json, "plan_reads", {
            "database": connection.vendor, "calls": args.calls, "repeat": args.repeat,
            "rows": [{"call": name, "rebuilt_cpu_ms": before, "stored_cpu_ms": after,
                      "rebuilt_queries": q_before, "stored_queries": q_after}
                     for name, before, after, q_before, q_after in rows],
        })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
