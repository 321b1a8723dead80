"""Listing a realistic set of statistics over 10 million records: DuckDB against pandas.

    python -m bench.listing_scale                     # 10,000,000 rows x 20 columns
    python -m bench.listing_scale --rows 100000 --json bench/results/listing_scale.json

Generates a typed Parquet file with DuckDB itself (integers, decimals with
missing values, categoricals, a boolean, a date: 20 columns), then, each in a
fresh subprocess so that its peak memory is its own, computes the answer of a
15-statistic listing (counts by category, filtered and grouped means and sums,
a two-way table, a date histogram, a numeric histogram):

* ``duckdb``: ``market.catalog.compute.compute`` on the Parquet file (one SQL scan,
  2 threads, 1 GB memory limit), what a listing's creation runs;
* ``listing``: what ``listing_create`` does with a stored dataset: the file is kept
  sealed (AES-256-GCM in 1 MB chunks, ``market.core.crypto``) as at rest; it is
  decrypted into a private temporary folder and computed as above, then the copy is removed;
* ``pandas``: the same answers computed with pandas from the same file (the baseline).

Reports wall time and peak resident memory (``VmHWM``) of each, and checks
that both give the same answers. Needs no database.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stamp import write_json

COLUMNS = [
    ("id", "integer", "none"), ("age", "integer", "none"), ("income", "decimal", "exclude"),
    ("score", "decimal", "exclude"), ("weight", "decimal", "none"), ("height", "decimal", "exclude"),
    ("visits", "integer", "exclude"), ("spend", "decimal", "exclude"), ("balance", "decimal", "none"),
    ("rating", "integer", "none"), ("region", "categorical", "category"), ("plan", "categorical", "none"),
    ("channel", "categorical", "exclude"), ("device", "categorical", "none"), ("segment", "categorical", "none"),
    ("status", "categorical", "exclude"), ("member", "boolean", "exclude"), ("joined", "date", "exclude"),
    ("delay", "decimal", "exclude"), ("items", "integer", "none"),
]

REGIONS = ["north", "south", "east", "west", "centre"]
PLANS = ["free", "basic", "pro", "team"]
CHANNELS = ["web", "app", "store"]

SPEC = [
    {"kind": "count", "by": "region", "categories": REGIONS[:4]},
    {"kind": "count", "by": "plan", "categories": PLANS, "where": [{"column": "member", "op": "=", "value": True}]},
    {"kind": "mean", "column": "income", "lower": 0, "upper": 200000, "by": "region", "categories": REGIONS[:4]},
    {"kind": "mean", "column": "spend", "lower": 0, "upper": 1000, "where": [{"column": "channel", "op": "=", "value": "app"}]},
    {"kind": "mean", "column": "delay", "lower": -30, "upper": 180, "by": "channel", "categories": CHANNELS},
    {"kind": "sum", "column": "visits", "lower": 0, "upper": 100, "where": [{"column": "age", "op": "between", "values": [18, 30]}]},
    {"kind": "sum", "column": "balance", "lower": -5000, "upper": 5000, "by": "plan", "categories": PLANS},
    {"kind": "table", "rows": "region", "columns": "plan", "row_categories": REGIONS, "column_categories": PLANS},
    {"kind": "histogram", "column": "joined", "bin": "month", "from": "2015-01", "to": "2024-12"},
    {"kind": "histogram", "column": "age", "bins": [18, 25, 35, 45, 55, 65, 75, 90]},
    {"kind": "count", "where": [{"column": "income", "op": "is missing"}]},
    {"kind": "mean", "column": "score", "lower": 0, "upper": 100, "where": [{"column": "joined", "op": ">=", "value": "2020-01-01"}]},
    {"kind": "count", "by": "member", "where": [{"column": "rating", "op": ">=", "value": 4}]},
    {"kind": "sum", "column": "items", "lower": 0, "upper": 50, "by": "device", "categories": ["phone", "tablet"]},
    {"kind": "mean", "column": "height", "lower": 140, "upper": 210, "where": [{"column": "status", "op": "in", "values": ["active", "paused"]}]},
]


JOINED = "CAST('2014-06-01' AS DATE) + CAST(hash(i * 103) % 3900 AS INTEGER)"


def pick(options, salt) -> str:
    """SQL: one of ``options``, by a hash of the row number."""
    cases = " ".join(f"WHEN {i} THEN '{o}'" for i, o in enumerate(options))
    return f"CASE hash(i * {salt}) % {len(options)} {cases} END"


def maybe(expr, salt, percent) -> str:
    """SQL: ``expr``, or missing in about ``percent`` of the rows."""
    return f"CASE WHEN hash(i * {salt}) % 100 < {percent} THEN NULL ELSE {expr} END"


GENERATED = {
    "id": "i",
    "age": "CAST(18 + hash(i * 3) % 72 AS BIGINT)",
    "income": maybe("CAST(hash(i * 5) % 250000 AS DOUBLE) / 1.7", 7, 8),
    "score": maybe("CAST(hash(i * 11) % 10000 AS DOUBLE) / 100", 13, 5),
    "weight": "CAST(hash(i * 17) % 12000 AS DOUBLE) / 100",
    "height": maybe("140 + CAST(hash(i * 19) % 7000 AS DOUBLE) / 100", 23, 3),
    "visits": maybe("CAST(hash(i * 29) % 120 AS BIGINT)", 31, 10),
    "spend": maybe("CAST(hash(i * 37) % 150000 AS DOUBLE) / 100", 41, 12),
    "balance": "CAST(hash(i * 43) % 1200000 AS DOUBLE) / 100 - 6000",
    "rating": "CAST(1 + hash(i * 47) % 5 AS BIGINT)",
    "region": maybe(pick(REGIONS + ["islands"], 53), 59, 2),
    "plan": pick(PLANS, 61),
    "channel": maybe(pick(CHANNELS + ["phone"], 67), 71, 4),
    "device": pick(["phone", "tablet", "desktop"], 73),
    "segment": pick(["a", "b", "c", "d", "e", "f"], 79),
    "status": maybe(pick(["active", "paused", "closed"], 83), 89, 6),
    "member": maybe("hash(i * 97) % 2 = 0", 101, 5),
    "joined": maybe(JOINED, 107, 3),
    "delay": maybe("CAST(hash(i * 109) % 24000 AS DOUBLE) / 100 - 40", 113, 9),
    "items": "CAST(hash(i * 127) % 60 AS BIGINT)",
}


def generate(path: Path, rows: int, *, columns=None, row_group_size: int = 122_880) -> float:
    """Write the table with DuckDB (no pandas): every column of :data:`GENERATED`, or ``columns`` of
    them; returns the seconds it took."""
    import duckdb

    select = ", ".join(f"{GENERATED[name]} AS {name}" for name in (columns or GENERATED))
    start = time.perf_counter()
    con = duckdb.connect(config={"threads": 2, "memory_limit": "1GB"})
    con.execute(f"COPY (SELECT {select} FROM range({int(rows)}) t(i)) TO '{path}' "
                f"(FORMAT parquet, ROW_GROUP_SIZE {int(row_group_size)})")
    con.close()
    return time.perf_counter() - start


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_duckdb(path: str) -> list[float]:
    from market.catalog.spec.columns import Column
    from market.catalog.compute import ParquetTable, compute
    from market.catalog.spec import Neighbours, build_plan

    plan = build_plan(SPEC, [Column(*c) for c in COLUMNS], neighbours=Neighbours(max_rows=100_000_000))
    return compute(plan, ParquetTable(path)).tolist()


def run_listing(path: str) -> list[float]:
    """Decrypt the sealed file (``path`` + ".sealed") to a private folder, then compute."""
    import shutil

    from market.core.crypto import Keyring

    ring = Keyring.from_config("", secret="bench")
    tmp = tempfile.mkdtemp(prefix="gradual-")
    os.chmod(tmp, 0o700)
    try:
        plain = os.path.join(tmp, "plain.parquet")
        with open(path + ".sealed", "rb") as src, open(plain, "wb") as dst:
            ring.unseal_stream(src, dst, context=b"bench")
        return run_duckdb(plain)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def seal(path: Path) -> float:
    from market.core.crypto import Keyring

    ring = Keyring.from_config("", secret="bench")
    start = time.perf_counter()
    with open(path, "rb") as src, open(str(path) + ".sealed", "wb") as dst:
        ring.seal_stream(src, dst, context=b"bench")
    return time.perf_counter() - start


def run_pandas(path: str) -> list[float]:
    """The same coordinates with pandas, from the plan's aggregates (the baseline)."""
    import math

    import numpy as np
    import pandas as pd

    from market.catalog.spec.columns import Column
    from market.catalog.spec import Neighbours, build_plan

    plan = build_plan(SPEC, [Column(*c) for c in COLUMNS], neighbours=Neighbours(max_rows=100_000_000))
    needed = sorted({name for a in plan.aggregates for name in a.columns()})
    frame = pd.read_parquet(path, columns=needed)
    for name in needed:
        if str(frame[name].dtype).startswith("date") or frame[name].dtype == object and name == "joined":
            frame[name] = pd.to_datetime(frame[name])

    def mask(cond):
        col = frame[cond.column]
        value = cond.value
        if isinstance(value, tuple):
            value = tuple(pd.Timestamp(v) if hasattr(v, "isoformat") and not isinstance(v, str) else v for v in value)
        elif hasattr(value, "isoformat") and not isinstance(value, str):
            value = pd.Timestamp(value)
        present = col.notna()
        if cond.op == "is missing":
            return ~present
        if cond.op == "present":
            return present
        if cond.op == "=":
            return present & (col == value)
        if cond.op == "<":
            return present & (col < value)
        if cond.op == "<=":
            return present & (col <= value)
        if cond.op == ">":
            return present & (col > value)
        if cond.op == ">=":
            return present & (col >= value)
        if cond.op == "between":
            return present & (col >= value[0]) & (col <= value[1])
        if cond.op == "in":
            return present & col.isin(list(value))
        if cond.op == "not in":
            return present & ~col.isin(list(value))
        if cond.op == "outside":
            return present & ((col < value[0]) | (col >= value[1]))
        raise ValueError(cond.op)

    out = []
    for a in plan.aggregates:
        m = np.ones(len(frame), dtype=bool)
        for cond in a.where:
            m &= mask(cond).to_numpy(dtype=bool, na_value=False)
        if hasattr(a, "cells"):  # several counts over exclusive cells
            for cell in a.cells:
                c = m.copy()
                for cond in cell:
                    c &= mask(cond).to_numpy(dtype=bool, na_value=False)
                out.append(float(c.sum()))
        elif a.op == "count":
            out.append(float(m.sum()))
        else:
            values = frame[a.column][m].dropna().astype("float64").clip(a.lower, a.upper)
            out.append(math.fsum(values.tolist()))
    return out


def _child(contender: str, path: str) -> None:
    import duckdb  # noqa: F401  (imports are not timed)
    import pandas  # noqa: F401

    import market.catalog.compute
    import market.catalog.spec  # noqa: F401

    start = time.perf_counter()
    run = {"duckdb": run_duckdb, "listing": run_listing, "pandas": run_pandas}[contender]
    values = run(path)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mb": peak_rss_mb(), "values": values}))


def measure(contender: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.listing_scale", "--child", contender, str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--skip-pandas", action="store_true", help="time DuckDB only")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.parquet"
        made = generate(path, args.rows)
        size = path.stat().st_size / 2**20
        sealed = seal(path)
        results = {"duckdb": measure("duckdb", path), "listing": measure("listing", path)}
        if not args.skip_pandas:
            results["pandas"] = measure("pandas", path)
    import numpy as np

    from market.catalog.spec.columns import Column
    from market.catalog.spec import Neighbours, build_plan

    plan = build_plan(SPEC, [Column(*c) for c in COLUMNS], neighbours=Neighbours(max_rows=100_000_000))
    agree = None
    if "pandas" in results:
        agree = bool(np.allclose(results["duckdb"]["values"], results["pandas"]["values"], rtol=1e-9, atol=1e-6))
    # two runs of the same compensated sums may differ in the last places (threads add in any order)
    same = bool(np.allclose(results["listing"]["values"], results["duckdb"]["values"], rtol=1e-12, atol=1e-9))
    agree = (agree is not False) and same
    print(f"{args.rows:,} rows x {len(COLUMNS)} columns, Parquet {size:.0f} MB written by DuckDB in {made:.1f} s")
    print(f"sealed at rest in {sealed:.1f} s")
    print(f"listing: {len(SPEC)} statistics, {len(plan.labels)} values ({platform.machine()}, {os.cpu_count()} cores)")
    for name, r in results.items():
        print(f"  {name:7s} {r['seconds']:7.2f} s   peak RSS {r['peak_mb']:7.0f} MB")
    base = np.asarray(results["duckdb"]["values"])
    for name in ("listing", "pandas"):
        if name in results:
            other = np.asarray(results[name]["values"])
            gap = np.abs(other - base) / np.maximum(np.abs(base), 1.0)
            print(f"  {name} vs duckdb: largest relative difference {gap.max():.1e} (at {plan.labels[int(gap.argmax())]!r})")
    if agree is not None:
        print(f"  answers agree: {agree}")
    if args.json:
        write_json(args.json, "listing_scale", {
            "rows": args.rows, "columns": len(COLUMNS), "parquet_mb": size, "generate_seconds": made, "seal_seconds": sealed,
            "statistics": len(SPEC), "values": len(plan.labels), "agree": agree,
            **{name: {"seconds": r["seconds"], "peak_mb": r["peak_mb"]} for name, r in results.items()},
        })
    return 0 if agree in (None, True) else 1


if __name__ == "__main__":
    raise SystemExit(main())
