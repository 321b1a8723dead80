"""The cost of serving a listing does not grow with its buyers.

    python -m bench.scale                      # 10,000 buyers, on the configured database
    python -m bench.scale --buyers 2000 --json bench/results/scale.json

For one l1 listing (a count and a 10-bin histogram: 11 values), N buyers each buy one random level in
(0, ceiling] (four decimal places, so thousands of distinct levels). Every
purchase goes through the purchase service; its release is timed on its own
(``market.trading.services.purchase_release``: lock the path, read the neighbouring
levels or the jump list, sample, store). Reports the stored size of each path
(its noise points) and the time per release, early and late, to show that
neither grows with the number of buyers: storage grows with the distinct
levels released, never per buyer. (The l2 listing it also measured, a
centroid, is no longer made: the float path is retired, docs/mathematics.md §10.)

Runs on a throw-away test database of the configured DATABASE_URL (SQLite in
memory without it).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from decimal import Decimal
from pathlib import Path

from bench.stamp import write_json

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

import django

django.setup()

import numpy as np
from django.db import connection
from django.test.utils import setup_test_environment

CEILING = "5"
PRICE = "100"  # credits per eps: the smallest step (0.0001) costs 0.01, since no step is free


def csv_bytes(rows: int = 2000) -> bytes:
    rng = np.random.default_rng()  # benchmark data: no secret, fresh each run
    age = rng.integers(0, 100, rows)
    xy = rng.normal([1000.0, 500.0], [300.0, 300.0], (rows, 2))
    return ("age,east,north\n" + "".join(f"{a},{x:.1f},{y:.1f}\n" for a, (x, y) in zip(age, xy))).encode()


def run(buyers: int) -> dict:
    from django.contrib.auth import get_user_model

    import market.trading.services as trading_services
    from market.catalog.services import dataset_create, listing_create
    from market.ledger.payments import ManualFunding
    from market.trading.services import purchase_create
    from releases.models import NoisePath, NoisePoint

    from market.catalog import services as catalog_services

    # the dataset is read at once, not queued on commit (no worker runs here), as the tests do
    catalog_services.datasets._queue_on_commit = lambda pk, job: catalog_services.dataset_process(dataset_id=pk, job=job)
    User = get_user_model()
    owner = User.objects.create_user("bench-owner", password=None, is_owner=True)
    datasets = {
        relation: dataset_create(owner=owner, name=f"bench ({relation})", data=csv_bytes(), relation=relation,
                                 total_budget=str(2 * float(CEILING)))
        for relation in ("private_size",)
    }
    specs = {  # name: (the dataset's relation, the statistics)
        "l1 (count + 10-bin histogram)": (
            "private_size", [{"kind": "count"}, {"kind": "histogram", "column": "age", "bins": list(range(0, 101, 10))}],
        ),
    }
    people = User.objects.bulk_create(User(username=f"bench-buyer-{i}", is_buyer=True) for i in range(buyers))
    for person in people:  # steps are never free: 100 credits per eps makes the smallest step (0.0001) cost 0.01
        ManualFunding().fund(user=person, amount=Decimal(PRICE) * Decimal(CEILING) * len(specs))
    trading_services.purchase_queue = lambda **kw: True  # releases are run and timed below, not queued
    rng = np.random.default_rng()
    report = {}
    for name, (relation, spec) in specs.items():
        listing = listing_create(
            owner=owner, dataset_id=datasets[relation].public_id, title=name, statistics=spec, ceiling=CEILING, price_per_epsilon=PRICE
        )
        levels = rng.integers(1, int(float(CEILING) * 10_000) + 1, buyers) / 10_000
        times = []
        for person, level in zip(people, levels):
            purchase, *_ = purchase_create(buyer=person, listing_id=listing.pk, epsilon=f"{level:.4f}")
            start = time.perf_counter()
            trading_services.purchase_release(purchase_id=purchase.pk)
            times.append(time.perf_counter() - start)
        path = NoisePath.objects.get(listing=listing)
        points = NoisePoint.objects.filter(path=path)
        noise_bytes = sum(len(bytes(n)) for n in points.values_list("noise", flat=True))
        jump_bytes = len(bytes(path.jumps)) if path.jumps is not None else 0
        ms = np.array(times) * 1e3
        tenth = max(1, buyers // 10)
        report[name] = {
            "buyers": buyers,
            "distinct_levels": int(np.unique(levels).size),
            "stored_points": points.count(),
            "stored_bytes": noise_bytes + jump_bytes,
            "jump_list_bytes": jump_bytes,
            "bytes_per_buyer": (noise_bytes + jump_bytes) / buyers,
            "release_ms_p50": float(np.percentile(ms, 50)),
            "release_ms_p99": float(np.percentile(ms, 99)),
            "release_ms_first_tenth": float(statistics.mean(ms[:tenth])),
            "release_ms_last_tenth": float(statistics.mean(ms[-tenth:])),
        }
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    setup_test_environment()
    # its own throw-away database, never the test suite's
    connection.settings_dict.setdefault("TEST", {})["NAME"] = (
        None if connection.vendor == "sqlite" else "bench_scale"
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        report = run(args.buyers)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(f"database: {connection.vendor}; Python {platform.python_version()}; {os.cpu_count()} cores")
    for name, r in report.items():
        print(f"\n{name}: {r['buyers']} buyers, {r['distinct_levels']} distinct levels")
        print(f"  stored: {r['stored_points']} points, {r['stored_bytes'] / 1024:.1f} KiB"
              f" (jump list {r['jump_list_bytes']} B), {r['bytes_per_buyer']:.1f} B per buyer")
        print(f"  release: p50 {r['release_ms_p50']:.2f} ms, p99 {r['release_ms_p99']:.2f} ms;"
              f" first tenth {r['release_ms_first_tenth']:.2f} ms, last tenth {r['release_ms_last_tenth']:.2f} ms")
    if args.json:
        write_json(args.json, "scale", {"database": connection.vendor, "report": report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
