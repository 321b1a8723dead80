"""What one buyer does, over and over until told to stop, and what it writes down.

* :func:`product_buyer`: steps up its level on a listing by a random increment until the
  ceiling, then moves to another listing. Each step is a quote (``GET listings/{id}/quote/``), a
  purchase (``POST purchases/`` with an Idempotency-Key) and then waiting for the release:
  with ``Prefer: wait=N`` (RFC 7240) on the POST and on each ``GET purchases/{id}/``. A server
  that honours it says so (``Preference-Applied: wait=N``) and answers once the purchase is
  final or the wait is over: the next GET follows at once. A server that ignores it is polled
  every ``--poll`` seconds.
* :func:`baseline_buyer`: ``POST debit/`` on its budget row, again and again.
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


def product_buyer(*, port: int, token: str, listings: list[dict], step_min: float, step_max: float, args,
                  stop: threading.Event, log: BuyerLog) -> None:
    rng = random.Random(os.urandom(16))
    client = Client(port, token)
    ceilings = {l["id"]: Decimal(l["ceiling"]) for l in listings}
    held = {l["id"]: Decimal(0) for l in listings}
    current = rng.choice(list(held))
    prefer = {"Prefer": f"wait={args.wait:g}"} if args.wait else {}
    try:
        while not stop.is_set():
            if held[current] >= ceilings[current]:
                left = [lid for lid in held if held[lid] < ceilings[lid]]
                if not left:
                    log.exhausted = True
                    return
                current = rng.choice(left)
            level = min(ceilings[current], (held[current] + Decimal(rng.uniform(step_min, step_max))).quantize(LEVEL))
            _, quote = _timed(log.quotes, client, "GET", f"{API}/listings/{current}/quote/?epsilon={level}")
            if quote.status != 200:
                log.error("quote", quote.status, quote.data)
                held[current] = _resync(client, current, held[current], log)
                time.sleep(args.poll)
                continue
            start, bought = _timed(log.posts, client, "POST", f"{API}/purchases/",
                                   {"listing": current, "epsilon": str(level)},
                                   {"Idempotency-Key": uuid.uuid4().hex, **prefer})
            if bought.status not in (200, 201, 202):
                log.error("purchase", bought.status, bought.data)
                if bought.status == 402:  # out of credits: this buyer is done
                    return
                held[current] = _resync(client, current, held[current], log)
                time.sleep(args.poll)
                continue
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
                _, seen = _timed(log.polls, client, "GET", f"{API}/purchases/{pid}/", None, prefer)
                if seen.status != 200:
                    log.error("poll", seen.status, seen.data)
                    continue
                final = seen.data["status"]
            log.releases.append((start, time.time() - start, final, pid))
            if final == "failed":
                log.error("release failed", "", seen.data.get("failure_reason"))
    except Exception as exc:  # a dead buyer is an error to report, never a silent hole in the figures
        log.error("exception", type(exc).__name__, repr(exc))
    finally:
        log.reconnects = client.reconnects
        client.close()


def _resync(client: Client, listing_id: int, guess: Decimal, log: BuyerLog) -> Decimal:
    """The level this buyer holds on a listing, as the API says (after a refused step)."""
    try:
        _, reply = _timed(log.resyncs, client, "GET", f"{API}/listings/{listing_id}/")
        if reply.status == 200 and reply.data.get("your_level") is not None:
            return Decimal(reply.data["your_level"])
    except Exception:
        pass
    return guess


def baseline_buyer(*, port: int, token: str, budget: int, step_min: float, step_max: float,
                   stop: threading.Event, log: BuyerLog) -> None:
    """Debit ``budget`` by a random amount in [step_min, step_max], again and again."""
    rng = random.Random(os.urandom(16))
    client = Client(port, token)
    try:
        while not stop.is_set():
            amount = Decimal(rng.uniform(step_min, step_max)).quantize(LEVEL)
            _, reply = _timed(log.posts, client, "POST", "/debit/", {"budget": budget, "amount": str(amount)})
            if reply.status != 200:
                log.error("debit", reply.status, reply.data)
                continue
            log.purchases.append((reply.data["id"], budget, str(amount)))
    except Exception as exc:
        log.error("exception", type(exc).__name__, repr(exc))
    finally:
        log.reconnects = client.reconnects
        client.close()


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
