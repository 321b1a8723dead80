"""One run of the baseline (``bench/load/baseline``), from an empty database to its figures.

``spread``: buyer i debits budget row i mod ``--listings`` (as the product's buyers spread over
its listings). ``hot``: one budget row, every buyer on it.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from .baseline.invariants import check_invariants
from .buyers import BuyerLog, baseline_buyer
from .figures import baseline_figures, cpu_figures
from .services import BaselineServices
from .window import drive


def run_baseline(args, *, mode: str, logdir: Path) -> dict:
    services = BaselineServices(args, logdir)
    stop = threading.Event()
    result: dict = {"kind": "baseline", "mode": mode, "logs": str(logdir)}
    try:
        try:
            seed = services.prepare(budgets=1 if mode == "hot" else args.listings, seed_file=logdir / "seed.json")
            services.start_gunicorn()
            services.wait_http()
            budgets = seed["budgets"]
            print(f"baseline on 127.0.0.1:{services.port} ({args.workers} workers x {args.threads} threads), "
                  f"{len(budgets)} budget row(s): ready", flush=True)
            conn = services.connect()
            logs = [BuyerLog() for _ in seed["buyers"]]
            buyers = [functools.partial(
                baseline_buyer, port=services.port, token=b["token"], budget=budgets[i % len(budgets)],
                step_min=float(args.step_min), step_max=float(args.step_max), stop=stop, log=log)
                for i, (b, log) in enumerate(zip(seed["buyers"], logs))]
            window = drive(services=services, conn=conn, buyers=buyers, args=args, stop=stop)
            print("stopped" + (f" ({window.stuck} buyers still stuck)" if window.stuck else ""), flush=True)
            figs = baseline_figures(logs, window.t0, window.t1)
            figs["cpu"] = cpu_figures(window.cpu, figs["requests"], "request")
            figs["postgres_sessions"] = window.sessions
            result["figures"] = figs
            result["invariants"] = check_invariants(conn, logs)
            counts = conn.execute("SELECT (SELECT count(*) FROM baseline_release), "
                                  "(SELECT count(*) FROM baseline_ledgerrow)").fetchone()
            result["stored"] = dict(zip(("releases", "ledger_rows"), counts))
            conn.close()
        finally:
            stop.set()
            services.stop()
    finally:
        services.cleanup()
    return result
