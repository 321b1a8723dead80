"""A microdata listing of 1,000,000 records x 20 bits, through the product: made, bought, released, stored.

    python -m bench.microdata_release                      # 1,000,000 records, PostgreSQL if DATABASE_URL is set
    python -m bench.microdata_release --records 100000 --json out.json

``bench.microdata`` times the engine alone; this runs what a real listing runs,
on a throw-away test database (created and dropped here, as the test suite does):

1. a public-size dataset of ``--records`` rows with two categorical columns
   (10 declared categories each, one of them with missing values counted as a
   category: 20 bits a record, weight 4), stored sealed as uploads are;
2. ``listing_create_microdata`` with a ladder of 4 levels (0.5, 1, 2, 4 per
   record): reading the columns with DuckDB, one-hot encoding, the secret
   shuffle, sealing the true bits;
3. a purchase at the lowest level released by the Celery task's body
   (``purchase_release``): the top of the ladder sampled and tightened down to
   it, each level's noise packed and sealed, the report made, everything
   written in the release's one transaction; then a second buyer at level 2
   (a lookup: no sampling) and a third at 4;
4. the bytes stored in the database: every noise point, every report, the
   true bits (``octet_length`` of the sealed columns), per record, bit and
   released level.

Side by side, in the same run: the size of the same noise stored the way
the lattice path stores a listing's noise (sealed int64, ``crypto.seal_ints``)
plus one byte per reported bit, and the naive 16 bytes per record-bit-level.

Targets: the first release (sampling the whole ladder) under 60 s of wall time
on the 2-core machine, and storage below 2 bytes per record, bit and released
level (well below 16). The exit status is 1 if one is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bench.stamp import write_json

TARGET_SECONDS = 60.0
TARGET_BYTES = 2.0
LEVELS = ["0.5", "1", "2", "4"]


def _dataset(owner, records: int):
    """A ready public-size dataset written straight to sealed storage (as an upload ends up)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from market.catalog import files
    from market.catalog.models import Dataset
    from market.core import ids

    rng = np.random.default_rng(2026)
    regions = np.array([f"region-{i}" for i in range(12)], dtype=object)
    plans = np.array([f"plan-{i}" for i in range(11)], dtype=object)
    region = regions[rng.integers(0, 12, records)]
    plan = plans[rng.integers(0, 11, records)]
    plan[rng.random(records) < 0.03] = None
    public_id = ids.new_dataset_id()
    with files.private_dir() as tmp:
        path = os.path.join(tmp, "typed.parquet")
        pq.write_table(pa.table({"region": pa.array(region, pa.string()), "plan": pa.array(plan, pa.string())}), path)
        typed = files.seal_path(path, files.new_name(public_id, "typed"))
    columns = [{"name": "region", "type": "categorical", "missing": "none", "missing_count": 0},
               {"name": "plan", "type": "categorical", "missing": "category", "missing_count": int((plan == None).sum())}]
    return Dataset.objects.create(
        public_id=public_id, owner=owner, name="bench", columns=columns, row_count=records, status="ready",
        typed_file=typed, total_budget=10, content_hash="0" * 64, relation="public_size",
    )


def run(records: int) -> dict:
    from decimal import Decimal

    import numpy as np
    from django.db import connection

    from market.accounts.models import User
    from market.catalog.services import listing_create_microdata
    from market.core import crypto
    from market.ledger.payments import ManualFunding
    from market.trading import services as trading
    from releases.engine import bitreport
    from releases.models import BitReport, NoisePoint

    owner = User.objects.create_user("bench-owner", "o@example.com", "a-long-password-1", is_owner=True)
    dataset = _dataset(owner, records)
    spec = {"columns": [{"column": "region", "categories": [f"region-{i}" for i in range(10)], "categories_public": True},
                        {"column": "plan", "categories": [f"plan-{i}" for i in range(7)], "categories_public": True}],
            "levels": LEVELS}
    start = time.perf_counter()
    listing = listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="bench", microdata_spec=spec,
                                       price_per_epsilon="1.00")
    made = time.perf_counter() - start
    md = listing.microdata()
    out = {"records": records, "bits": md.bits, "weight": md.weight, "levels": LEVELS, "listing_create_s": made,
           "releases": []}
    for i, level in enumerate(["0.5", "2", "4"]):
        buyer = User.objects.create_user(f"bench-buyer-{i}", f"b{i}@example.com", "a-long-password-1")
        ManualFunding().fund(user=buyer, amount=Decimal(100))
        result = trading.purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level)
        start = time.perf_counter()
        release = trading.purchase_release(purchase_id=result.purchase.pk, listing_id=listing.pk)
        seconds = time.perf_counter() - start
        assert release is not None and str(release.level.normalize()) == level
        out["releases"].append({"level": level, "seconds": seconds,
                                "points": NoisePoint.objects.filter(path__listing=listing).count(),
                                "reports": BitReport.objects.filter(point__path__listing=listing).count()})
    table = {"noise": ("releases_noisepoint", "noise"), "reports": ("releases_bitreport", "bits"),
             "truth": ("catalog_listing", "answer")}
    sizes = {}
    with connection.cursor() as cursor:
        for name, (tbl, col) in table.items():
            cursor.execute(f'SELECT coalesce(sum(length("{col}")), 0) FROM "{tbl}"')
            sizes[name] = int(cursor.fetchone()[0])
    cells = records * md.bits
    levels_stored = NoisePoint.objects.filter(path__listing=listing).count()
    # the same noise as the lattice path stores a listing's noise: sealed int64, plus a byte per reported bit
    top = NoisePoint.objects.filter(path__listing=listing).order_by("-level").first()
    noise = bitreport.unpack_noise(top.packed_noise(), (records, md.bits))
    as_lattice = len(crypto.seal_ints(noise.reshape(-1), context=b"bench")) + cells
    out.update({
        "bytes": sizes,
        "levels_stored": levels_stored,
        "levels_released": len(out["releases"]),
        "bytes_per_record_bit_level": (sizes["noise"] + sizes["reports"]) / (cells * len(out["releases"])),
        "bytes_per_record_bit_stored_level": (sizes["noise"] + sizes["reports"]) / (cells * levels_stored),
        "bytes_per_record_bit_level_with_truth": (sizes["noise"] + sizes["reports"] + sizes["truth"]) / (cells * len(out["releases"])),
        "baseline_lattice_storage_per_record_bit_level": as_lattice / cells,
        "baseline_naive_per_record_bit_level": 16.0,
        "noise_abs_max_top": int(np.abs(noise).max()),
    })
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
    os.environ.setdefault("UPLOAD_MAX_ROWS", str(max(args.records, 1_000_000)))
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from market.celery import app

        app.conf.task_always_eager = False
        from market.trading import services

        services.purchase_queue = lambda **kwargs: True  # the bench runs the task's body itself, below
        figures = run(args.records)
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)
        teardown_test_environment()
    first = figures["releases"][0]["seconds"]
    per = figures["bytes_per_record_bit_level"]
    print(f"microdata listing: {figures['records']:,} records x {figures['bits']} bits (weight {figures['weight']}), "
          f"ladder {', '.join(LEVELS)} on {connection.vendor}")
    print(f"  listing made (read, one-hot, shuffle, seal): {figures['listing_create_s']:.1f} s")
    for r in figures["releases"]:
        print(f"  release at {r['level']}: {r['seconds']:.1f} s (points stored {r['points']}, reports {r['reports']})")
    print(f"  stored: noise {figures['bytes']['noise'] / 1e6:.1f} MB, reports {figures['bytes']['reports'] / 1e6:.1f} MB, "
          f"true bits {figures['bytes']['truth'] / 1e6:.1f} MB over {figures['levels_stored']} levels")
    print(f"  bytes per record, bit and released level ({figures['levels_released']} released, {figures['levels_stored']} stored): "
          f"{per:.3f} (with the true bits {figures['bytes_per_record_bit_level_with_truth']:.3f}; "
          f"per stored level {figures['bytes_per_record_bit_stored_level']:.3f}); "
          f"baseline as the lattice path stores noise {figures['baseline_lattice_storage_per_record_bit_level']:.2f}, "
          f"naive {figures['baseline_naive_per_record_bit_level']:.0f}")
    ok = first < TARGET_SECONDS and per < TARGET_BYTES
    print(f"  targets: first release < {TARGET_SECONDS:.0f} s, storage < {TARGET_BYTES:g} bytes: {'met' if ok else 'MISSED'}")
    if args.json:
        write_json(args.json, "microdata_release", figures)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
