"""One run of the product or of its baseline, from an empty database to its figures and invariants.

Both are driven by the same buyers (``bench.load.buyers``: the baseline answers the same requests).
``spread``: ``--listings`` listings with ceiling ``--ceiling``, ``--buyers`` buyers stepping up by
[``--step-min``, ``--step-max``] and moving on at a ceiling (closed loop: each buyer's next step
starts when its last one is released). ``hot``: one listing with ceiling ``--hot-ceiling`` and steps
up to ``--hot-step-max``, every buyer on it (room for several hundred steps each: nobody runs out
during a run). ``open``: the spread listings, purchases arriving at Poisson times at ``rate`` per
second, taken by a pool of ``--open-buyers`` buyers (``bench.load.openloop``).
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import PYTHON
from .baseline import invariants as baseline_invariants
from .buyers import BuyerLog, Stepper, canary, product_buyer
from .figures import cpu_figures, cpu_per_purchase, db_latency, phases_model, product_figures
from .invariants import check_invariants
from .openloop import OpenLoop, dispatcher, open_figures, pool_buyer
from .profile_figures import read_profile
from .pyspy import find_py_spy, read_py_spy, start_py_spy
from .services import BaselineServices, ProductServices
from .window import drive

#: per kind: its services, purchases still in flight, the purchase -> release query, stored counts, invariants
KINDS = {
    "product": dict(
        services=ProductServices,
        in_flight="SELECT count(*) FROM trading_purchase WHERE status IN ('queued', 'computing')",
        latency=("releases_release", "trading_purchase", "purchase_id"),
        stored="SELECT (SELECT count(*) FROM trading_purchase), (SELECT count(*) FROM releases_release), "
               "(SELECT count(*) FROM releases_noisepoint), (SELECT count(*) FROM ledger_transfer)",
        stored_names=("purchases", "releases", "noise_points", "transfers"),
        invariants=check_invariants),
    "baseline": dict(
        services=BaselineServices,
        in_flight="SELECT count(*) FROM baseline_purchase WHERE status <> 'released'",
        latency=("baseline_release", "baseline_purchase", "purchase_id"),
        stored="SELECT (SELECT count(*) FROM baseline_purchase), (SELECT count(*) FROM baseline_release), "
               "(SELECT count(*) FROM baseline_ledgerrow)",
        stored_names=("purchases", "releases", "ledger_rows"),
        invariants=baseline_invariants.check_invariants),
}


def run(args, *, kind: str, mode: str, logdir: Path, phases: int = 0, rate: float | None = None) -> dict:
    """``kind``: product or baseline; ``mode``: spread, hot or open (at ``rate`` purchases/s);
    ``phases``: after the load, time that many purchases alone (the product)."""
    hot = mode == "hot"
    spec = KINDS[kind]
    services = spec["services"](args, logdir)
    stop = threading.Event()
    result: dict = {"kind": kind, "mode": mode, "logs": str(logdir)}
    if rate:
        result["rate"] = rate
    spy = find_py_spy(args.py_spy) if args.py_spy and kind == "product" else None
    if args.py_spy and kind == "product" and not spy:
        print("py-spy not found (give its path: --py-spy PATH, or PY_SPY=...): no sampling profile", file=sys.stderr)
    try:
        try:
            t = time.perf_counter()
            listings = 1 if hot else args.listings
            buyers = args.open_buyers if mode == "open" else args.buyers
            seed = services.prepare(listings=listings, ceiling=args.hot_ceiling if hot else args.ceiling,
                                    buyers=buyers, seed_file=logdir / "seed.json")
            print(f"{kind}: database {services.db} migrated and seeded ({buyers} buyers, {listings} listings) "
                  f"in {time.perf_counter() - t:.1f} s", flush=True)
            services.start_gunicorn()
            services.start_celery()
            services.wait_http()
            took = canary(services.port, seed["canary"]["token"], seed["listings"][0]["id"])
            print(f"gunicorn on 127.0.0.1:{services.port} ({args.workers} workers x {args.threads} threads), "
                  f"Celery {args.pool} x {args.celery}: ready (canary released in {took:.2f} s)", flush=True)
            conn = services.connect()
            logs = [BuyerLog() for _ in seed["buyers"]]
            step = dict(port=services.port, listings=seed["listings"], step_min=float(args.step_min),
                        step_max=float(args.hot_step_max if hot else args.step_max), args=args)
            loop = OpenLoop(rate=rate) if mode == "open" else None
            if loop:
                work: queue.Queue = queue.Queue()
                buyers = [functools.partial(dispatcher, loop, work, stop)] + [functools.partial(
                    pool_buyer, Stepper(token=b["token"], log=log, **step), work, stop)
                    for b, log in zip(seed["buyers"], logs)]
            else:
                buyers = [functools.partial(product_buyer, token=b["token"], stop=stop, log=log, **step)
                          for b, log in zip(seed["buyers"], logs)]
            switch = logdir / "profile" / "on"
            spies: dict[str, subprocess.Popen] = {}

            def at_start() -> None:
                if args.profile and kind == "product":
                    switch.touch()
                for part in ("gunicorn", "celery") if spy else ():
                    spies[part] = start_py_spy(spy, services.procs[part].pid, services.profile_dir / f"py-spy-{part}.txt",
                                               args.seconds, args.py_spy_rate)

            def at_end() -> None:
                switch.unlink(missing_ok=True)
                if loop:
                    loop.backlog_at_end = loop.backlog(time.time())

            def tick() -> None:
                if loop:
                    loop.max_backlog = max(loop.max_backlog, loop.backlog(time.time()))

            window = drive(services=services, conn=conn, buyers=buyers, args=args, stop=stop,
                           at_start=at_start, at_end=at_end, tick=tick)
            deadline = time.time() + 60
            while conn.execute(spec["in_flight"]).fetchone()[0] and time.time() < deadline:
                time.sleep(0.5)
            print(f"stopped; in-flight steps drained in {time.time() - window.drain_started:.1f} s"
                  + (f" ({window.stuck} buyers still stuck)" if window.stuck else ""), flush=True)

            figs = product_figures(logs, window.t0, window.t1, wait=args.wait)
            figs["latency_ms"]["purchase_to_release_db"] = db_latency(conn, window.t0, window.t1, *spec["latency"])
            figs["cpu"] = cpu_figures(window.cpu, figs["purchases"], "purchase")
            figs["cpu_ms_per_purchase"] = cpu_per_purchase(figs["cpu"])
            if loop:
                figs["open_loop"] = open_figures(loop, window.t0, window.t1)
            figs["postgres_sessions"] = window.sessions
            if window.busy_before_pct is not None:
                figs["machine_busy_before_pct"] = window.busy_before_pct
            result["figures"] = figs
            if spies:
                result["py_spy"] = _py_spy(spies, services.profile_dir, figs, args)
            result["invariants"] = spec["invariants"](conn, logs, seed)
            result["stored"] = dict(zip(spec["stored_names"], conn.execute(spec["stored"]).fetchone()))
            conn.close()
        finally:
            stop.set()
            services.stop()
        if phases:
            _phases(services, result, phases, logdir)
        if args.profile and kind == "product":
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
