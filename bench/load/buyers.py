"""What one buyer does, over and over until told to stop, and what it writes down.

* :class:`Stepper` / :func:`product_buyer`: steps up its level on a listing by a random increment until the
  ceiling, then moves to another listing. Each step is a quote (``GET listings/{id}/quote/``), a
  purchase (``POST purchases/`` with an Idempotency-Key) and then waiting for the release:
  with ``Prefer: wait=N`` (RFC 7240) on the POST and on each ``GET purchases/{id}/``. A server
  that honours it says so (``Preference-Applied: wait=N``) and answers once the purchase is
  final or the wait is over: the next GET follows at once. A server that ignores it is polled
  every ``--poll`` seconds.
  The baseline (``bench/load/baseline``) answers the same requests at the same paths: its buyers
  are these. ``bench.load.openloop`` drives the same steps at scheduled arrivals.
* :func:`canary`: one purchase through the whole pipeline before the load (the setup is ready).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from .client import Client, wait_applied

LEVEL = Decimal("0.0001")
API = "/api/v1"


@dataclass
class BuyerLog:
    """What one buyer did: (start wall time, seconds, status, wait honoured, Idempotency-Key) per call
    (``_timed``), and its purchases."""

    quotes: list = field(default_factory=list)
    posts: list = field(default_factory=list)
    polls: list = field(default_factory=list)
    resyncs: list = field(default_factory=list)  # GET listings/{id}/ after a refused step
    releases: list = field(default_factory=list)  # (POST start, seconds to released/failed, final status, purchase id)
    purchases: list = field(default_factory=list)  # (id, listing, level_to, quoted price, charged price, code)
    errors: Counter = field(default_factory=Counter)
    error_samples: dict = field(default_factory=dict)
    exhausted: bool = False
    reconnects: int = 0

    def error(self, what: str, status, data) -> None:
        key = f"{what} {status}"
        self.errors[key] += 1
        if key not in self.error_samples:
            message = data.get("error", {}).get("message") if isinstance(data, dict) and "error" in data else data
            self.error_samples[key] = str(message)[:200]


def _timed(log_rows: list, client: Client, method: str, path: str, body=None, headers=None):
    """One request, written down as (start wall time, seconds, status, wait honoured, Idempotency-Key
    or None); a request that got no answer at all (the connection failed twice) as status 0."""
    key = (headers or {}).get("Idempotency-Key")
    start, t = time.time(), time.perf_counter()
    try:
        reply = client.request(method, path, body, headers)
    except Exception:
        log_rows.append((start, time.perf_counter() - t, 0, False, key))
        raise
    log_rows.append((start, time.perf_counter() - t, reply.status, wait_applied(reply.headers), key))
    return start, reply


class Done(Exception):
    """This buyer can buy no more: every ceiling reached, or out of credits."""


class Stepper:
    """One buyer's state: its connection, the levels it holds; :meth:`step` is one purchase."""

    def __init__(self, *, port: int, token: str, listings: list[dict], step_min: float, step_max: float, args,
                 log: BuyerLog):
        self.rng = random.Random(os.urandom(16))
        self.client = Client(port, token)
        self.ceilings = {l["id"]: Decimal(l["ceiling"]) for l in listings}
        self.held = {l["id"]: Decimal(0) for l in listings}
        self.current = self.rng.choice(list(self.held))
        self.step_min, self.step_max, self.args, self.log = step_min, step_max, args, log
        self.prefer = {"Prefer": f"wait={args.wait:g}"} if args.wait else {}

    def step(self) -> str | None:
        """A quote, a purchase and waiting for its release: the final status (``released``, ``failed``,
        ``timeout``), or None when the step was refused. :class:`Done` when nothing is left to buy."""
        log, client, held, args = self.log, self.client, self.held, self.args
        if held[self.current] >= self.ceilings[self.current]:
            left = [lid for lid in held if held[lid] < self.ceilings[lid]]
            if not left:
                log.exhausted = True
                raise Done
            self.current = self.rng.choice(left)
        current = self.current
        step = Decimal(self.rng.uniform(self.step_min, self.step_max))
        level = min(self.ceilings[current], (held[current] + step).quantize(LEVEL))
        _, quote = _timed(log.quotes, client, "GET", f"{API}/listings/{current}/quote/?epsilon={level}")
        if quote.status != 200:
            log.error("quote", quote.status, quote.data)
            held[current] = _resync(client, current, held[current], log)
            time.sleep(args.poll)
            return None
        start, bought = _timed(log.posts, client, "POST", f"{API}/purchases/",
                               {"listing": current, "epsilon": str(level)},
                               {"Idempotency-Key": uuid.uuid4().hex, **self.prefer})
        if bought.status not in (200, 201, 202):
            log.error("purchase", bought.status, bought.data)
            if bought.status == 402:  # out of credits: this buyer is done
                raise Done
            held[current] = _resync(client, current, held[current], log)
            time.sleep(args.poll)
            return None
        if bought.status == 200:
            log.errors["purchase 200 (idempotent repeat)"] += 1
        held[current] = level
        pid = bought.data["id"]
        log.purchases.append((pid, current, str(level), quote.data["price"], bought.data["price"], bought.status))
        final, seen = bought.data.get("status"), bought
        while final not in ("released", "failed"):
            if time.time() - start > args.release_timeout:
                final = "timeout"
                log.errors["release timeout"] += 1
                break
            if not wait_applied(seen.headers):
                time.sleep(args.poll)  # the server did not wait for us: poll
            _, seen = _timed(log.polls, client, "GET", f"{API}/purchases/{pid}/", None, self.prefer)
            if seen.status != 200:
                log.error("poll", seen.status, seen.data)
                continue
            final = seen.data["status"]
        log.releases.append((start, time.time() - start, final, pid))
        if final == "failed":
            log.error("release failed", "", seen.data.get("failure_reason"))
        return final

    def close(self) -> None:
        self.log.reconnects = self.client.reconnects
        self.client.close()


def product_buyer(*, stop: threading.Event, **stepper) -> None:
    """Steps, one after the other, until ``stop`` (closed loop)."""
    buyer = Stepper(**stepper)
    try:
        while not stop.is_set():
            buyer.step()
    except Done:
        pass
    except Exception as exc:  # a dead buyer is an error to report, never a silent hole in the figures
        buyer.log.error("exception", type(exc).__name__, repr(exc))
    finally:
        buyer.close()


def _resync(client: Client, listing_id: int, guess: Decimal, log: BuyerLog) -> Decimal:
    """The level this buyer holds on a listing, as the API says (after a refused step)."""
    try:
        _, reply = _timed(log.resyncs, client, "GET", f"{API}/listings/{listing_id}/")
        if reply.status == 200 and reply.data.get("your_level") is not None:
            return Decimal(reply.data["your_level"])
    except Exception:
        pass
    return guess


def canary(port: int, token: str, listing_id: int, timeout: float = 90.0) -> float:
    """One purchase through the whole pipeline (web, broker, worker): the setup is ready."""
    client = Client(port, token)
    start = time.monotonic()
    bought = client.request("POST", f"{API}/purchases/", {"listing": listing_id, "epsilon": "0.01"},
                            {"Idempotency-Key": "load-canary"})
    if bought.status not in (200, 201, 202):
        raise RuntimeError(f"the canary purchase was refused: {bought.status} {bought.data}")
    while time.monotonic() - start < timeout:
        seen = client.request("GET", f"{API}/purchases/{bought.data['id']}/")
        if seen.status == 200 and seen.data["status"] == "released":
            client.close()
            return time.monotonic() - start
        if seen.status == 200 and seen.data["status"] == "failed":
            raise RuntimeError(f"the canary purchase failed: {seen.data.get('failure_reason')}")
        time.sleep(0.2)
    raise RuntimeError(f"the canary purchase was not released within {timeout:.0f} s: is the Celery worker up?")
