"""Open loop: purchases arriving at Poisson times at a fixed rate, whether or not the last ones are done.

A dispatcher draws exponential gaps (mean 1/rate) and hands each arrival, at its scheduled time,
to a pool of buyers (threads, each a :class:`~bench.load.buyers.Stepper` with its own token and
connection; the pool is large enough not to be the bottleneck: ``--open-buyers``). An idle buyer
takes the next arrival and makes one step (quote, purchase, wait for the release). Each arrival's
latency runs from its SCHEDULED time to the release in hand, so arrivals waiting for a free buyer
or a slow server show as latency. At the end of the measured window the backlog is the arrivals
scheduled by then and not yet done; after it no new arrival is handed out, the steps in flight
finish, and arrivals never started are counted as ``abandoned``.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from dataclasses import dataclass, field

from .buyers import Done, Stepper
from .figures import pct


@dataclass
class Arrival:
    scheduled: float  # wall clock
    started: float | None = None
    done: float | None = None
    final: str | None = None


@dataclass
class OpenLoop:
    rate: float
    arrivals: list = field(default_factory=list)
    backlog_at_end: int | None = None
    max_backlog: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def backlog(self, now: float) -> int:
        with self.lock:
            return sum(1 for a in self.arrivals if a.scheduled <= now and (a.done is None or a.done > now))


def dispatcher(loop: OpenLoop, work: queue.Queue, stop: threading.Event, seed: int | None = None) -> None:
    """Hands arrivals to the pool at Poisson times until ``stop``."""
    rng = random.Random(seed)
    t = time.time()
    while not stop.is_set():
        t += rng.expovariate(loop.rate)
        delay = t - time.time()
        if delay > 0 and stop.wait(delay):
            break
        arrival = Arrival(scheduled=t)
        with loop.lock:
            loop.arrivals.append(arrival)
        work.put(arrival)
    work.put(None)  # wakes the pool: no more arrivals


def pool_buyer(stepper: Stepper, work: queue.Queue, stop: threading.Event) -> None:
    """Takes arrivals one after the other; after ``stop``, finishes its step and leaves."""
    try:
        while not stop.is_set():
            try:
                arrival = work.get(timeout=0.2)
            except queue.Empty:
                continue
            if arrival is None:
                work.put(None)
                return
            if stop.is_set():
                work.put(arrival)  # left for the count of abandoned arrivals
                return
            arrival.started = time.time()
            try:
                arrival.final = stepper.step() or "refused"
            except Done:
                arrival.final = "buyer done"
                return
            finally:
                arrival.done = time.time()
    except Exception as exc:
        stepper.log.error("exception", type(exc).__name__, repr(exc))
    finally:
        stepper.close()


def open_figures(loop: OpenLoop, t0: float, t1: float) -> dict:
    """Offered and achieved rates, latency from the scheduled arrival, backlog: arrivals scheduled in [t0, t1)."""
    window = t1 - t0
    inside = [a for a in loop.arrivals if t0 <= a.scheduled < t1]
    released = [a for a in inside if a.final == "released"]
    completed = [a for a in loop.arrivals if a.final == "released" and t0 <= a.done < t1]
    achieved = len(completed) / window
    offered = len(inside) / window
    late = [a for a in inside if a.done is None]
    return {
        "rate_offered_nominal": loop.rate,
        "offered_per_s": round(offered, 2),
        "achieved_per_s": round(achieved, 2),
        "achieved_over_offered": round(achieved / offered, 4) if offered else None,
        "arrivals": len(inside),
        "released": len(released),
        "not_released": {k: sum(1 for a in inside if a.final == k) for k in
                         sorted({a.final for a in inside if a.final not in ("released", None)})},
        "abandoned_at_stop": len(late),
        "backlog_at_end": loop.backlog_at_end,
        "max_backlog": loop.max_backlog,
        "latency_from_arrival_ms": pct([a.done - a.scheduled for a in released]),
        "queueing_ms": pct([a.started - a.scheduled for a in inside if a.started is not None]),
    }
