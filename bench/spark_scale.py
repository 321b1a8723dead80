"""Listing creation on a large table: DuckDB embedded against Spark in local mode, side by side (issue 35).

    .venv/bin/python -m bench.spark_scale --rows 100000000 --json docs/perf/spark_scale.json
        # needs requirements-spark.txt (PySpark) and Java 17

Generates a table of ``--rows`` records and 10 columns with DuckDB (integers, decimals with missing
values, categories, a boolean, a date), written as Parquet in row groups of a million records and
sealed whole as the product stores a dataset (AES-256-GCM, 1 MB chunks). Then, each in a fresh
process so its memory is its own, computes the answer of a 10-statistic listing on the lattice
path (counts by category, filtered sums on a grid, a two-way table, a date histogram, a numeric
histogram):

* ``duckdb``: what listing creation does on the default backend: decrypt the sealed file to a
  private folder, compute with DuckDB (2 threads, 1 GB memory limit), remove the copy;
* ``spark``: the Spark backend on the sealed file (``market.catalog.spark.SealedParquet``): the
  executors read row groups by range and decrypt them in memory, Spark SQL aggregates
  (``local[2]``: two cores, as DuckDB has);
* ``spark (plain Parquet)``: Spark reading the plain file itself, to show what decrypting in the
  executors and handing Arrow batches to the JVM costs.

Reports each one's wall time and peak memory (the largest resident size of each process of the
run added up: the Python driver, Spark's JVM and its Python workers), and checks that all three
give the same answer. Needs no database.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.listing_scale import PLANS, REGIONS
from bench.stamp import write_json

COLUMNS = [
    ("id", "integer", "none"), ("age", "integer", "none"), ("income", "decimal", "exclude"),
    ("spend", "decimal", "exclude"), ("visits", "integer", "exclude"), ("region", "categorical", "category"),
    ("plan", "categorical", "none"), ("member", "boolean", "exclude"), ("joined", "date", "exclude"),
    ("rating", "integer", "none"),
]
SPEC = [
    {"kind": "count", "by": "region", "categories": REGIONS},
    {"kind": "count", "by": "plan", "categories": PLANS, "where": [{"column": "member", "op": "=", "value": True}]},
    {"kind": "sum", "column": "income", "lower": 0, "upper": 200000, "grid": "100", "by": "region", "categories": REGIONS},
    {"kind": "sum", "column": "spend", "lower": 0, "upper": 1000, "grid": "0.5",
     "where": [{"column": "plan", "op": "in", "values": ["pro", "team"]}]},
    {"kind": "sum", "column": "visits", "lower": 0, "upper": 100, "where": [{"column": "age", "op": "between", "values": [18, 30]}]},
    {"kind": "table", "rows": "region", "columns": "plan", "row_categories": REGIONS, "column_categories": PLANS},
    {"kind": "histogram", "column": "joined", "bin": "month", "from": "2015-01", "to": "2024-12"},
    {"kind": "histogram", "column": "age", "bins": [18, 25, 35, 45, 55, 65, 75, 90]},
    {"kind": "count", "where": [{"column": "income", "op": "is missing"}]},
    {"kind": "histogram", "column": "rating", "bins": [1, 2, 3, 4, 5, 6]},
]
CONTEXT = b"bench/spark-scale"


def generate(path: Path, rows: int) -> float:
    """The table: :data:`COLUMNS` of ``bench.listing_scale``'s generated records, a million to a row group."""
    from bench import listing_scale

    return listing_scale.generate(path, rows, columns=[name for name, _, _ in COLUMNS], row_group_size=1_000_000)


def _plan():
    from market.catalog.spec import Neighbours, build_plan
    from market.catalog.spec.columns import Column

    return build_plan(SPEC, [Column(*c) for c in COLUMNS], neighbours=Neighbours(max_rows=10**9), mechanism="lattice")


def _ring():
    from market.core.crypto import Keyring

    return Keyring.from_config("", secret="bench")


def seal(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as src, open(str(path) + ".sealed", "wb") as dst:
        _ring().seal_stream(src, dst, context=CONTEXT)
    return time.perf_counter() - start


def _tree_peak_mb(stop: threading.Event, found: dict) -> None:
    """Every 0.2 s, the largest resident size (VmHWM) seen of each process of this process's tree."""
    me = os.getpid()
    while not stop.is_set():
        children = {me}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent in children or int(pid) in children:
                children.add(int(pid))
        for pid in children:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        found[pid] = max(found.get(pid, 0), int(line.split()[1]) / 1024)
            except OSError:
                pass
        stop.wait(0.2)


def _child(contender: str, path: str) -> None:
    import market.catalog.compute  # noqa: F401 (imports are not timed)

    found: dict = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_tree_peak_mb, args=(stop, found), daemon=True)
    watcher.start()
    plan = _plan()
    start = time.perf_counter()
    if contender == "duckdb":
        import shutil

        from market.catalog.compute import ParquetTable, compute

        tmp = tempfile.mkdtemp(prefix="gradual-")
        os.chmod(tmp, 0o700)
        try:
            plain = os.path.join(tmp, "plain.parquet")
            with open(path + ".sealed", "rb") as src, open(plain, "wb") as dst:
                _ring().unseal_stream(src, dst, context=CONTEXT)
            values = compute(plan, ParquetTable(plain))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        from market.catalog.compute import compute
        from market.catalog.spark import ParquetFiles, SealedParquet, SparkBackend, spark_session

        spark_session("local[2]")  # starting the JVM is not the listing's work: timed apart
        started = time.perf_counter() - start
        start = time.perf_counter()
        source = (ParquetFiles((path,)) if contender == "spark (plain Parquet)" else
                  SealedParquet(store={"kind": "file", "path": path + ".sealed"}, context=CONTEXT, key=_ring().keys[0]))
        values = compute(plan, source, backend=SparkBackend(master="local[2]"))
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    out = {"seconds": seconds, "peak_mb": sum(found.values()), "values": [int(v) for v in values]}
    if contender != "duckdb":
        out["session_start_s"] = started
    print(json.dumps(out))


def _prepared(folder: Path, rows: int) -> tuple[Path, int, float]:
    """The generated table's file, sealed beside it; its row groups and size in MB."""
    import pyarrow.parquet as pq

    path = folder / "records.parquet"
    made = generate(path, rows)
    size_mb = path.stat().st_size / 2**20
    sealed = seal(path)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    print(f"{rows:,} rows x {len(COLUMNS)} columns: {size_mb:,.0f} MB of Parquet in {groups} row groups "
          f"(generated in {made:.1f} s, sealed in {sealed:.1f} s)", flush=True)
    return path, groups, size_mb


def measure(contender: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.spark_scale", "--child", contender, str(path)],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{contender} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


CONTENDERS = ("duckdb", "spark", "spark (plain Parquet)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--contenders", default=",".join(CONTENDERS), help="which to run (comma-separated)")
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.child:
        return _child(*args.child) or 0
    with tempfile.TemporaryDirectory() as tmp:
        path, groups, size_mb = _prepared(Path(tmp), args.rows)
        report = {}
        for contender in [c for c in CONTENDERS if c in args.contenders.split(",")]:
            report[contender] = measure(contender, path)
            r = report[contender]
            print(f"{contender:24s} {r['seconds']:8.1f} s   peak {r['peak_mb']:8,.0f} MB"
                  + (f"   (Spark session started in {r['session_start_s']:.1f} s, not counted)" if "session_start_s" in r else ""),
                  flush=True)
        answers = {name: r.pop("values") for name, r in report.items()}
        same = len({tuple(v) for v in answers.values()}) == 1
        print("same answers:", same)
        if not same:
            return 1
    if args.json:
        write_json(args.json, "spark_scale", {"rows": args.rows, "columns": len(COLUMNS), "statistics": len(SPEC),
                                              "parquet_mb": size_mb, "row_groups": groups, "report": report})
    return 0


if __name__ == "__main__":
    sys.exit(main())
