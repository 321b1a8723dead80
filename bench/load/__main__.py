"""``python -m bench.load``: the options, then the runs one after the other (see ``bench/load/__init__.py``)."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

from bench.stamp import stamp

from . import ROOT
from . import __doc__ as OVERVIEW
from .machine import machine
from .report import print_report, write_json
from .runs import run as run_one
from .targets import compare, exit_status, verdicts


def plan(args) -> list[tuple[str, str, float | None]]:
    """(kind, mode, rate) of every run, in order: each mode's baseline just before the product."""
    modes: list[tuple[str, float | None]] = []
    if not args.no_closed:
        modes += [("spread", None)] + ([] if args.no_hot else [("hot", None)])
    if not args.no_open:
        modes += [("open", r) for r in args.rates]
    kinds = ["product"] if args.no_baseline else ["baseline", "product"]
    return [(kind, mode, rate) for mode, rate in modes for kind in kinds]


def run_name(kind: str, mode: str, rate: float | None) -> str:
    return f"{kind} {mode}" + (f" {rate:g}/s" if rate else "")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.load", description=OVERVIEW.splitlines()[0])
    p.add_argument("--buyers", type=int, default=50, help="concurrent buyers (threads), in every run")
    p.add_argument("--seconds", type=float, default=30, help="measured seconds of each run")
    p.add_argument("--warmup", type=float, default=5, help="seconds of load before each measurement")
    p.add_argument("--listings", type=int, default=5, help="listings (and the baseline's budget rows) when spread")
    p.add_argument("--ceiling", default="5", help="every listing's ceiling when spread")
    p.add_argument("--price", default="2.00", help="linear price: credits per epsilon")
    p.add_argument("--step-min", default="0.01", help="smallest step up")
    p.add_argument("--step-max", default="0.2", help="largest step up when spread")
    p.add_argument("--hot-ceiling", default="50", help="the one listing's ceiling in the hot run")
    p.add_argument("--hot-step-max", default="0.1", help="largest step up in the hot run")
    p.add_argument("--no-baseline", action="store_true", help="leave out the baseline's runs")
    p.add_argument("--no-hot", action="store_true", help="leave out the hot runs (all buyers on one listing)")
    p.add_argument("--no-closed", action="store_true", help="leave out the closed-loop runs (spread and hot)")
    p.add_argument("--no-open", action="store_true", help="leave out the open-loop runs")
    p.add_argument("--rates", type=lambda v: [float(x) for x in v.split(",") if x], default=[20.0, 40.0],
                   help="open loop: purchases per second offered, one run each (comma-separated)")
    p.add_argument("--open-buyers", type=int, default=100,
                   help="open loop: buyers (threads, each with its own token and connection) taking the arrivals")
    p.add_argument("--wait", type=float, default=5,
                   help="send Prefer: wait=N on the purchase POST and GETs (RFC 7240); 0: do not send it")
    p.add_argument("--poll", type=float, default=0.1,
                   help="seconds between GETs of a purchase when the server did not honour the wait")
    p.add_argument("--release-timeout", type=float, default=60, help="a buyer gives up waiting after this")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (gthread), product and baseline")
    p.add_argument("--threads", type=int, default=32,
                   help="threads per gunicorn worker (a buyer waiting with Prefer: wait holds one, idle, until its release)")
    p.add_argument("--celery", type=int, default=2, help="Celery worker concurrency")
    p.add_argument("--pool", default="prefork", choices=["prefork", "threads", "solo"], help="Celery pool")
    p.add_argument("--nice-web", type=int, default=0, help="niceness added to gunicorn (and its workers)")
    p.add_argument("--nice-celery", type=int, default=0, help="niceness added to the Celery worker")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                   help="before each load, wait up to this long for other users' load to drop below --quiet-below")
    p.add_argument("--quiet-below", type=float, default=15, help="percent of the machine busy counted as quiet")
    p.add_argument("--throttle", default="1000000/minute", help="the product's THROTTLE_* rates (high: no throttling)")
    p.add_argument("--log-level", default="WARNING", help="LOG_LEVEL and Celery's --loglevel")
    p.add_argument("--synchronous-commit", default="on", choices=["on", "off"],
                   help="set on the bench's databases only (off: commits do not wait for the WAL flush)")
    p.add_argument("--profile", action="store_true", help="profile the product's web workers and Celery pool")
    p.add_argument("--profile-timer", default="cpu", choices=["cpu", "wall"],
                   help="the profile's clock: each thread's CPU time, or the wall clock (waits included)")
    p.add_argument("--py-spy", nargs="?", const="auto", default=None, metavar="PATH",
                   help="also sample the product's gunicorn and Celery with py-spy (on PATH, in .venv/bin or $PY_SPY)")
    p.add_argument("--py-spy-rate", type=int, default=100, help="py-spy samples per second")
    p.add_argument("--phases", type=int, default=150, metavar="N",
                   help="after the product's spread run, time N purchases phase by phase alone "
                        "(bench/load/phases.py); 0: skip")
    p.add_argument("--db", default="gradual_load", help="the product's PostgreSQL database (dropped and created)")
    p.add_argument("--baseline-db", default="gradual_load_base", help="the baseline's database (dropped and created)")
    p.add_argument("--pg-host", default="127.0.0.1")
    p.add_argument("--pg-port", type=int, default=5432)
    p.add_argument("--pg-user", default="postgres")
    p.add_argument("--redis-host", default="127.0.0.1")
    p.add_argument("--redis-port", type=int, default=6379)
    p.add_argument("--redis-db", type=int, default=5, help="the product's Redis database number (flushed)")
    p.add_argument("--port", type=int, default=0, help="gunicorn's port (default: a free one)")
    p.add_argument("--keep-db", action="store_true", help="keep the databases after the run")
    p.add_argument("--check-target", action="store_true", help="exit 2 if a target is missed")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "load.json",
                   help="write the figures here (default bench/results/load.json)")
    return p


def run(args) -> int:
    logdir = Path(tempfile.mkdtemp(prefix="gradual-load-"))
    started = time.time()
    report: dict = {"logs": str(logdir)}
    report["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    runs: dict[str, dict] = {}

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_term)
    print(f"logs: {logdir}", flush=True)
    try:
        for kind, mode, rate in plan(args):
            name = run_name(kind, mode, rate)
            print(f"\n-- {name}", flush=True)
            folder = logdir / name.replace(" ", "-").replace("/", "")
            folder.mkdir()
            phases = args.phases if (kind, mode) == ("product", "spread") else 0
            runs[name] = run_one(args, kind=kind, mode=mode, logdir=folder, phases=phases, rate=rate)
    except KeyboardInterrupt:
        print("interrupted: everything stopped", file=sys.stderr, flush=True)
        return 130
    except Exception:
        import traceback

        traceback.print_exc()
        print(f"the run failed: everything stopped (logs in {logdir})", file=sys.stderr, flush=True)
        return 1
    finally:
        signal.signal(signal.SIGTERM, old_term)
    stamped = stamp("load")  # as every bench's JSON: the date (UTC) and the machine, for docs/performance.md
    report["bench"], report["date"] = stamped["bench"], stamped["date"]
    report["machine"] = {**stamped["machine"], **machine(args)}
    report["runs"] = runs
    report["comparison"] = compare(runs)
    report["targets"] = verdicts(runs, report["comparison"], args.buyers)
    report["wall_s"] = round(time.time() - started, 1)
    print_report(report, args)
    if args.json:
        write_json(report, args.json)
    return exit_status(report["targets"], args.check_target)


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.redis_db == 0:
        p.error("--redis-db 0 is the application's own: choose another")
    for db in (args.db, args.baseline_db):
        if db in ("test", "test_test", "postgres"):
            p.error(f"--db {db} is not a throw-away database")
    if any(r <= 0 for r in args.rates):
        p.error("--rates: every rate must be positive")
    if args.db == args.baseline_db:
        p.error("--db and --baseline-db must differ")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
