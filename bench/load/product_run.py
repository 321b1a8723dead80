"""One run of the product, from an empty database to its figures and invariants.

``spread``: ``--listings`` listings with ceiling ``--ceiling``, buyers stepping up by
[``--step-min``, ``--step-max``] and moving on at a ceiling. ``hot``: one listing with ceiling
``--hot-ceiling`` and steps up to ``--hot-step-max``, every buyer on it (room for several
hundred steps each: nobody runs out during a run).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import PYTHON
from .buyers import BuyerLog, canary, product_buyer
from .figures import cpu_figures, db_latency, phases_model, product_figures
from .invariants import check_invariants
from .profile_figures import read_profile
from .pyspy import find_py_spy, read_py_spy, start_py_spy
from .services import ProductServices
from .window import drive

IN_FLIGHT = "SELECT count(*) FROM trading_purchase WHERE status IN ('queued', 'computing')"


def run_product(args, *, mode: str, logdir: Path, phases: int = 0) -> dict:
    """``mode`` is ``spread`` or ``hot``; ``phases``: after the load, time that many purchases alone."""
    hot = mode == "hot"
    services = ProductServices(args, logdir)
    stop = threading.Event()
    result: dict = {"kind": "product", "mode": mode, "logs": str(logdir)}
    spy = find_py_spy(args.py_spy) if args.py_spy else None
    if args.py_spy and not spy:
        print("py-spy not found (give its path: --py-spy PATH, or PY_SPY=...): no sampling profile", file=sys.stderr)
    try:
        try:
            t = time.perf_counter()
            listings = 1 if hot else args.listings
            seed = services.prepare(listings=listings, ceiling=args.hot_ceiling if hot else args.ceiling,
                                    seed_file=logdir / "seed.json")
            print(f"database {services.db} migrated and seeded ({args.buyers} buyers, {listings} listings) "
                  f"in {time.perf_counter() - t:.1f} s", flush=True)
            services.start_gunicorn()
            services.start_celery()
            services.wait_http()
            took = canary(services.port, seed["canary"]["token"], seed["listings"][0]["id"])
            print(f"gunicorn on 127.0.0.1:{services.port} ({args.workers} workers x {args.threads} threads), "
                  f"Celery {args.pool} x {args.celery}: ready (canary released in {took:.2f} s)", flush=True)
            conn = services.connect()
            logs = [BuyerLog() for _ in seed["buyers"]]
            buyers = [functools.partial(
                product_buyer, port=services.port, token=b["token"], listings=seed["listings"],
                step_min=float(args.step_min), step_max=float(args.hot_step_max if hot else args.step_max),
                args=args, stop=stop, log=log) for b, log in zip(seed["buyers"], logs)]
            switch = services.profile_dir / "on"
            spies: dict[str, subprocess.Popen] = {}

            def at_start() -> None:
                if args.profile:
                    switch.touch()
                for part in ("gunicorn", "celery") if spy else ():
                    spies[part] = start_py_spy(spy, services.procs[part].pid, services.profile_dir / f"py-spy-{part}.txt",
                                               args.seconds, args.py_spy_rate)

            window = drive(services=services, conn=conn, buyers=buyers, args=args, stop=stop,
                           at_start=at_start, at_end=lambda: switch.unlink(missing_ok=True))
            deadline = time.time() + 60
            while conn.execute(IN_FLIGHT).fetchone()[0] and time.time() < deadline:
                time.sleep(0.5)
            print(f"stopped; in-flight steps drained in {time.time() - window.drain_started:.1f} s"
                  + (f" ({window.stuck} buyers still stuck)" if window.stuck else ""), flush=True)

            figs = product_figures(logs, window.t0, window.t1, wait=args.wait)
            figs["latency_ms"]["purchase_to_release_db"] = db_latency(conn, window.t0, window.t1)
            figs["cpu"] = cpu_figures(window.cpu, figs["purchases"], "purchase")
            figs["postgres_sessions"] = window.sessions
            if window.busy_before_pct is not None:
                figs["machine_busy_before_pct"] = window.busy_before_pct
            result["figures"] = figs
            if spies:
                result["py_spy"] = _py_spy(spies, services.profile_dir, figs, args)
            result["invariants"] = check_invariants(conn, logs, seed)
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM trading_purchase), (SELECT count(*) FROM releases_release), "
                "(SELECT count(*) FROM releases_noisepoint), (SELECT count(*) FROM ledger_transfer)").fetchone()
            result["stored"] = dict(zip(("purchases", "releases", "noise_points", "transfers"), counts))
            conn.close()
        finally:
            stop.set()
            services.stop()
        if phases:
            _phases(services, result, phases, logdir)
        if args.profile:
            total = result["figures"]["purchases"]  # the profile covers the measured window: per purchase in it
            result["profile"] = {
                "note": f"cProfile ({args.profile_timer} timer) in every gunicorn worker thread and Celery pool "
                        "process, over the measured window; figures per purchase accepted in the window",
                "web": read_profile(services.profile_dir, "web", per=total),
                "celery": read_profile(services.profile_dir, "task", per=total),
            }
    finally:
        services.cleanup()
    return result


def _py_spy(spies: dict, folder: Path, figs: dict, args) -> dict:
    for proc in spies.values():
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    parts = figs["cpu"]["by_part"]
    return {
        "note": f"py-spy {args.py_spy_rate} Hz over the measured window, on-CPU threads only (no --idle), "
                "gunicorn and Celery with their children; shares of samples, and CPU ms per purchase = share "
                "x the part's CPU measured in /proc",
        **{part: read_py_spy(folder / f"py-spy-{part}.txt", parts.get(part, {}).get("cpu_ms_per_purchase", 0.0))
           for part in spies},
    }


def _phases(services: ProductServices, result: dict, iterations: int, logdir: Path) -> None:
    """One purchase timed phase by phase alone, on the loaded database, the servers stopped."""
    try:
        out = logdir / "phases.json"
        print(f"timing the phases of one purchase alone ({iterations} iterations, servers stopped) ...", flush=True)
        services.run("phases", [str(PYTHON), "-m", "bench.load.phases", "--iterations", str(iterations),
                                "--out", str(out)])
        result["phases"] = json.loads(out.read_text())["phases"]
        result["phases_model"] = phases_model(result["phases"], result["figures"], os.cpu_count())
    except Exception as exc:
        print(f"the phases step failed: {exc}", file=sys.stderr)
