"""Phases of one purchase, timed alone: what ``bench.load --phases`` runs after the load.

    python -m bench.load.phases --iterations 200 --out FILE     (with bench.load's environment)

On the database the load left behind (its size is the load's), with the
servers stopped, one thread steps fresh buyers up the listings through the
same Django stack the web workers run (middleware, DRF, token
authentication, throttling in Redis), via Django's test client:

* ``quote``: ``GET listings/{id}/quote/``;
* ``purchase``: ``POST purchases/`` (the transaction, and the release task
  sent to the broker on commit; no worker consumes it here);
* ``poll queued``: ``GET purchases/{id}/`` before the release;
* ``release``: ``market.trading.services.purchase_release``, the Celery task's work;
* ``poll released (first)``: the first ``GET purchases/{id}/`` after it (the
  release's privacy-at-risk figures are computed here, then cached per
  process by level);
* ``poll released (again)``: the same request once more.

Each call starts and ends with ``close_old_connections()``, as a request in
gunicorn and a Celery task do (so the connection's health check runs once per
call). For each phase: CPU and wall time per call (p50 and mean), SQL
statements (those Django runs; the health check's ``SELECT 1`` is not among
them) and their wall time, from N timed iterations; and a cProfile
(wall-clock timer: in one thread, that is CPU plus waiting on PostgreSQL and
Redis) with its top items, from N other iterations (interleaved, so the
profiler's overhead stays out of the timings). The first ``--skip``
iterations warm up and are not counted. The test client adds a little of its
own to each request (building the request, copying the response).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import time
from decimal import Decimal
from pathlib import Path

from bench.load.profile_figures import cprofile_hot_spots, product_code, where
from bench.load.server_profile import SqlCounter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

import django  # noqa: E402

django.setup()

PHASES = ["quote", "purchase", "poll queued", "release", "poll released (first)", "poll released (again)"]


class Phase:
    def __init__(self, name: str, timer=None):
        self.name = name
        self.profile = cProfile.Profile(timer) if timer else cProfile.Profile()
        self.profiled = 0
        self.rows: list[tuple[float, float, int, float]] = []  # wall, cpu, statements, sql seconds

    def run(self, fn, count: bool, profile: bool = False):
        """Time ``fn`` (counted calls), or profile it: the profiler's overhead stays out of the timings."""
        from django.db import close_old_connections, connection

        if profile:
            count, self.profiled = False, self.profiled + 1
        counter = SqlCounter()
        wall, cpu = time.perf_counter(), time.thread_time()
        with connection.execute_wrapper(counter):
            if profile:
                self.profile.enable()
            try:
                # as gunicorn's request_started/finished and Celery's task hooks do (the test client
                # leaves it out): so the connection's health check (SELECT 1) runs once per call
                close_old_connections()
                result = fn()
                close_old_connections()
            finally:
                if profile:
                    self.profile.disable()
        if count:
            self.rows.append((time.perf_counter() - wall, time.thread_time() - cpu, counter.statements, counter.seconds))
        return result

    def report(self, top: int) -> dict:
        if not self.rows:
            return {"calls": 0}
        walls, cpus, stmts, sqls = zip(*self.rows)
        n = max(1, self.profiled)  # the profile's figures are per profiled call
        stats = pstats.Stats(self.profile).stats
        rows = list(stats.items())

        def item(key, v, col):
            return {"function": where(key), "calls": round(v[1] / n, 2), "ms": round(v[col] / n * 1e3, 3)}

        product = [kv for kv in rows if product_code(kv[0])]
        return {
            "calls": len(self.rows),
            "profiled_calls": self.profiled,
            "hot_spots": cprofile_hot_spots(stats, n),
            "cpu_ms_p50": round(statistics.median(cpus) * 1e3, 3),
            "cpu_ms_mean": round(statistics.fmean(cpus) * 1e3, 3),
            "wall_ms_p50": round(statistics.median(walls) * 1e3, 3),
            "wall_ms_mean": round(statistics.fmean(walls) * 1e3, 3),
            "sql_statements": round(statistics.fmean(stmts), 2),
            "sql_wall_ms_mean": round(statistics.fmean(sqls) * 1e3, 3),
            "top_self": [item(k, v, 2) for k, v in sorted(rows, key=lambda kv: -kv[1][2])[:top]],
            "top_cumulative_product_code": [item(k, v, 3) for k, v in sorted(product, key=lambda kv: -kv[1][3])[:top]],
        }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--skip", type=int, default=20, help="warm-up iterations, not counted")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cpu-profile", action="store_true",
                        help="profile with each thread's CPU clock (waits on PostgreSQL and Redis left out)")
    parser.add_argument("--dump", type=Path, help="also write each phase's cProfile statistics here (NAME.prof)")
    args = parser.parse_args(argv)

    from django.contrib.auth import get_user_model
    from django.test import Client

    from market.accounts.services import api_key_create
    from market.catalog.models import Listing
    from market.ledger.payments import ManualFunding
    from market.trading.services import purchase_release

    User = get_user_model()
    listings = list(Listing.objects.filter(title__startswith="load ").order_by("pk"))
    rng = random.Random(os.urandom(16))
    timer = time.thread_time if args.cpu_profile else None
    phases = {name: Phase(name, timer) for name in PHASES}
    buyers: list[tuple[Client, dict]] = []

    def new_buyer() -> tuple[Client, dict]:
        user = User.objects.create_user(f"load-phases-{len(buyers)}", password=None, is_buyer=True)
        ManualFunding().fund(user=user, amount=Decimal("10000.00"), reference=f"load-phases-{user.pk}")
        _, secret = api_key_create(user=user, name="load phases")
        client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
        buyer = (client, {l.pk: Decimal(0) for l in listings})
        buyers.append(buyer)
        return buyer

    client, held = new_buyer()
    for i in range(args.skip + 2 * args.iterations):
        count = i >= args.skip
        prof = count and (i - args.skip) % 2 == 1  # every other counted iteration is profiled, not timed
        listing = listings[i % len(listings)]
        level = (held[listing.pk] + Decimal(rng.uniform(0.01, 0.2))).quantize(Decimal("0.0001"))
        if level > listing.ceiling:
            client, held = new_buyer()
            level = Decimal(rng.uniform(0.01, 0.2)).quantize(Decimal("0.0001"))
        r = phases["quote"].run(lambda: client.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon={level}"), count, prof)
        assert r.status_code == 200, r.content
        key = os.urandom(8).hex()
        r = phases["purchase"].run(lambda: client.post(
            "/api/v1/purchases/", {"listing": listing.pk, "epsilon": str(level)}, content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=key), count, prof)
        assert r.status_code in (201, 202), r.content
        held[listing.pk] = level
        pid = r.json()["id"]
        r = phases["poll queued"].run(lambda: client.get(f"/api/v1/purchases/{pid}/"), count, prof)
        assert r.status_code == 200 and r.json()["status"] == "queued", r.content
        phases["release"].run(lambda: purchase_release(purchase_id=pid), count, prof)
        r = phases["poll released (first)"].run(lambda: client.get(f"/api/v1/purchases/{pid}/"), count, prof)
        assert r.status_code == 200 and r.json()["status"] == "released", r.content
        phases["poll released (again)"].run(lambda: client.get(f"/api/v1/purchases/{pid}/"), count, prof)
    report = {name: phase.report(args.top) for name, phase in phases.items()}
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for name, phase in phases.items():
            phase.profile.dump_stats(args.dump / f"{name.replace(' ', '_').replace('(', '').replace(')', '')}.prof")
    args.out.write_text(json.dumps({"iterations": args.iterations, "phases": report}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
