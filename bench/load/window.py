"""Buyers through a warm-up and a measured window, with the meters running in the window.

Each buyer is a thread. Only calls started in the measured window
[t0, t1) count; when it is over no new step starts, the steps in flight
finish (each buyer's thread ends), and the figures are read from the logs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from .meters import CpuMeter, DbWaitSampler, wait_quiet


@dataclass
class Window:
    t0: float  # wall clock, start of the measured window
    t1: float  # its end
    cpu: dict  # CpuMeter.diff over the window
    sessions: dict  # DbWaitSampler.report over the window
    stuck: int  # buyers still running after the drain
    drain_started: float
    busy_before_pct: float | None = None


def drive(*, services, conn, buyers: list[Callable[[], None]], args, stop: threading.Event,
          at_start: Callable[[], None] | None = None, at_end: Callable[[], None] | None = None,
          tick: Callable[[], None] | None = None) -> Window:
    """Run ``buyers`` (each a callable looping until ``stop``) for ``--warmup`` + ``--seconds``;
    ``at_start`` and ``at_end`` are called as the measured window opens and closes, ``tick`` about
    once a second in it."""
    db_pids = lambda: [r[0] for r in conn.execute(  # noqa: E731
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
    meter = CpuMeter(services.procs, db_pids)
    sampler = DbWaitSampler(services.connect)
    sampler.start()
    threads = [threading.Thread(target=fn, daemon=True, name=f"buyer-{i}") for i, fn in enumerate(buyers)]
    try:
        busy = None
        if args.wait_quiet:
            busy = round(wait_quiet(args.quiet_below, args.wait_quiet), 1)
            print(f"machine {busy:.0f}% busy before the load", flush=True)
        t_start = time.time()
        for th in threads:
            th.start()
        t0 = t_start + args.warmup
        t1 = t0 + args.seconds
        print(f"{len(threads)} buyers running: {args.warmup:g} s warm-up, then {args.seconds:g} s measured", flush=True)
        time.sleep(max(0.0, t0 - time.time()))
        cpu_a = meter.snapshot()
        sampler.active.set()
        if at_start:
            at_start()
        while time.time() < t1:
            time.sleep(min(1.0, max(0.0, t1 - time.time())))
            services.check_alive()
            if tick:
                tick()
        sampler.active.clear()
        if at_end:
            at_end()
        cpu_b = meter.snapshot()
        stop.set()
        drain = time.time()
        for th in threads:
            th.join(timeout=max(1.0, args.release_timeout + 30 - (time.time() - drain)))
        return Window(t0=t0, t1=t1, cpu=CpuMeter.diff(cpu_a, cpu_b), sessions=sampler.report(),
                      stuck=sum(th.is_alive() for th in threads), drain_started=drain, busy_before_pct=busy)
    finally:
        stop.set()
        sampler.done.set()
