"""Load: the production setup under concurrent buyers, then every ledger invariant.

    python -m bench.load                                  # 50 buyers for 30 s (after 5 s of warm-up)
    python -m bench.load --buyers 100 --seconds 60 --listings 5 --workers 2 --threads 4 --celery 2
    python -m bench.load --py-spy --json /tmp/load-py-spy.json     # with a sampling profile (py-spy)
    python -m bench.load --profile --json /tmp/load-cprofile.json  # with cProfile inside the servers

Starts everything itself on this machine and stops it on exit (also on
Ctrl-C or an error): a fresh PostgreSQL database (``--db``, dropped and
created again; dropped at the end unless ``--keep-db``), its own Redis
database (``--redis-db``, flushed), ``manage.py migrate``, a seed step
(``bench.load_seed``: an owner, ``--listings`` listings with a small linear
price, N buyers with API tokens and wallets funded through
``ManualFunding().fund``), gunicorn serving ``market.wsgi:application`` on a
free port of 127.0.0.1 with ``DJANGO_ENV=production`` (gthread workers), and
a Celery worker (``celery -A market.celery:app worker``, prefork).

Then N buyers (threads, each with its own keep-alive HTTP connection) run for
``--warmup`` + ``--seconds`` seconds. A buyer steps up its own level on one
listing by a random increment in [``--step-min``, ``--step-max``] until the
ceiling, then moves to another listing: each step is a quote (``GET
listings/{id}/quote/``), a purchase (``POST purchases/`` with an
Idempotency-Key) and polls of ``GET purchases/{id}/`` every ``--poll``
seconds until the purchase is released (or failed). Only the ``--seconds``
after the warm-up are counted. When the time is up no new step starts, the
steps in flight finish, and the database is checked: every transfer
balances, no wallet is negative, every balance is the sum of its legs,
wallets and earnings match the purchases, holdings stay within
released <= purchased <= ceiling and match the purchases and releases, each
(path, level) was sampled exactly once, every released purchase has exactly
one release, nothing is left in flight, and what the buyers were told (202s,
quoted prices, released) matches what is stored.

Reports purchases and quotes per second, the latencies of the purchase POST
and from purchase to release (seen by the buyer, and in the database from the
purchase's row to its release's row), the errors by status, the CPU each
part of the setup used in the measured window (gunicorn, Celery, PostgreSQL
backends, Redis, the load generator itself, and everything else on the
machine: other users' processes count against the two cores too) and what
PostgreSQL's sessions were waiting on (pg_stat_activity sampled every 0.1 s).

Where the time goes, three ways:

* ``--phases N`` (default 150): after the load, with the servers stopped, N
  purchases on the loaded database are timed phase by phase alone in one
  thread (``bench/load_phases.py``: quote, purchase, poll, release, poll of
  the released purchase): CPU and wall per call, SQL statements, cProfile's
  top items and named hot spots (throttling, token authentication, commit,
  privacy at risk, ...), and from them the rate two cores could sustain.
* ``--py-spy [PATH]``: py-spy samples gunicorn and Celery (with children)
  during the measured window (py-spy is not a dependency: give its path, or
  have it on PATH or in .venv/bin). Its shares of on-CPU samples are turned
  into CPU ms per purchase with the CPU measured in /proc. On an overloaded
  machine threads that are runnable but not running count as on CPU, so
  places right after a wake-up (sending a query) are over-weighted.
* ``--profile``: cProfile inside every gunicorn worker thread and Celery pool
  process during the measured window (``bench/load_profile.py``; each
  thread's CPU time, or ``--profile-timer wall``), with SQL statements and
  CPU per endpoint. Its overhead is large: compare throughput without it.

Target on this 2-core machine: 100 purchases per second with the purchase
to release p99 under one second (``--check-target``: exit status 2 if missed).
The exit status is 1 if an invariant fails.
"""

from __future__ import annotations

import argparse
import ctypes
import http.client
import json
import os
import platform
import pstats
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np

from market.core.invariants import INVARIANTS

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
VENV_BIN = PYTHON.parent
TARGET_RATE = 100.0  # purchases per second
TARGET_P99 = 1.0  # seconds, purchase to release
LEVEL = Decimal("0.0001")
CENT = Decimal("0.01")


# --------------------------------------------------------------------------- the setup


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In a child before exec: get SIGTERM if the load generator dies (even by SIGKILL)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _child_setup(nice: int):
    def setup() -> None:
        _die_with_parent()
        if nice:
            os.nice(nice)
    return setup


def wait_quiet(limit_pct: float, timeout: float) -> float:
    """Wait (up to ``timeout`` s) until the machine is less than ``limit_pct`` busy over 3 s; return that figure."""
    deadline = time.monotonic() + timeout
    while True:
        a = machine_busy()
        time.sleep(3)
        b = machine_busy()
        busy = 100 * (b[0] - a[0]) / max(1e-9, b[1] - a[1])
        if busy < limit_pct or time.monotonic() > deadline:
            return busy
        print(f"  the machine is {busy:.0f}% busy (other users): waiting for it to calm down ...", flush=True)


class Services:
    """The production setup: its database, Redis, gunicorn and a Celery worker. Stops all it started."""

    def __init__(self, args, logdir: Path):
        self.args = args
        self.logdir = logdir
        self.port = args.port or free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.db_url = f"postgres://{args.pg_user}@{args.pg_host}:{args.pg_port}/{args.db}"
        self.redis_url = f"redis://{args.redis_host}:{args.redis_port}/{args.redis_db}"
        self.profile_dir = logdir / "profile"

    def env(self) -> dict:
        rate = self.args.throttle
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="market.settings",
            DJANGO_ENV="production",
            DJANGO_SECRET_KEY=uuid.uuid4().hex + uuid.uuid4().hex,
            DJANGO_ALLOWED_HOSTS="127.0.0.1",
            DJANGO_SECURE_SSL_REDIRECT="0",  # plain HTTP on 127.0.0.1: no TLS proxy in front here
            DATABASE_URL=self.db_url,
            REDIS_URL=self.redis_url,
            THROTTLE_USER=rate,
            THROTTLE_ANON=rate,
            THROTTLE_PURCHASES=rate,
            THROTTLE_AUTH=rate,
            DEMO_MODE="0",
            LOG_LEVEL=self.args.log_level,
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
        )
        if self.args.profile:
            env["LOAD_PROFILE_DIR"] = str(self.profile_dir)
            env["LOAD_PROFILE_TIMER"] = self.args.profile_timer
        return env

    # -- database and Redis
    def admin_conn(self):
        import psycopg

        return psycopg.connect(
            host=self.args.pg_host, port=self.args.pg_port, user=self.args.pg_user, dbname="postgres", autocommit=True
        )

    def reset_database(self) -> None:
        from psycopg import sql

        with self.admin_conn() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.args.db)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.args.db)))
            if self.args.synchronous_commit != "on":
                conn.execute(
                    sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}").format(
                        sql.Identifier(self.args.db), sql.Literal(self.args.synchronous_commit)
                    )
                )

    def drop_database(self) -> None:
        from psycopg import sql

        with self.admin_conn() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.args.db)))

    def flush_redis(self) -> None:
        import redis

        redis.Redis.from_url(self.redis_url).flushdb()

    # -- processes
    def run(self, name: str, cmd: list[str]) -> None:
        log = self.logdir / f"{name}.log"
        with open(log, "wb") as out:
            done = subprocess.run(cmd, cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed (exit {done.returncode}); see {log}:\n{log.read_text()[-3000:]}")

    def start(self, name: str, cmd: list[str], nice: int = 0) -> subprocess.Popen:
        out = open(self.logdir / f"{name}.log", "wb")
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_child_setup(nice),
        )
        out.close()
        self.procs[name] = proc
        return proc

    def start_gunicorn(self) -> None:
        a = self.args
        cmd = [
            str(VENV_BIN / "gunicorn"), "market.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(a.workers), "--threads", str(a.threads), "--worker-class", "gthread",
            "--keep-alive", "30", "--backlog", "2048", "--timeout", "120", "--graceful-timeout", "20",
            "--log-level", "warning", "--chdir", str(ROOT),
        ]
        if a.profile:
            cmd += ["--config", str(ROOT / "bench" / "load_gunicorn.py")]
        self.start("gunicorn", cmd, nice=a.nice_web)

    def start_celery(self) -> None:
        a = self.args
        cmd = [
            str(VENV_BIN / "celery"), "-A", "market.celery:app", "worker",
            "--pool", a.pool, "--concurrency", str(a.celery),
            "--loglevel", a.log_level, "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--hostname", f"load-{os.getpid()}@%h",
        ]
        if a.profile:
            cmd += ["--include", "bench.load_celery"]
        self.start("celery", cmd, nice=a.nice_celery)

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                log = self.logdir / f"{name}.log"
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {log}:\n{log.read_text()[-3000:]}")

    def wait_http(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/api/v1/listings/?page_size=1")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer on port {self.port} within {timeout:.0f} s")

    def stop(self) -> None:
        """SIGTERM every process group we started, then SIGKILL what is left."""
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group (pool children)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()


# --------------------------------------------------------------------------- CPU accounting

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds used) of a process, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _tree(root: int) -> set[int]:
    parents = {}
    for pid in _all_pids():
        st = _stat(pid)
        if st:
            parents[pid] = st[0]
    found, frontier = {root}, [root]
    while frontier:
        nxt = [pid for pid, ppid in parents.items() if ppid in frontier and pid not in found]
        found.update(nxt)
        frontier = nxt
    return found


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(fields[:8])
    idle = fields[3] + fields[4]
    return (total - idle) / TICK, total / TICK


class CpuMeter:
    """CPU seconds per part of the setup between two snapshots."""

    def __init__(self, services: Services, db_pids):
        self.services = services
        self.db_pids = db_pids  # callable: our database's backend pids

    def snapshot(self) -> dict:
        groups: dict[str, dict[int, float]] = defaultdict(dict)
        for name in ("gunicorn", "celery"):
            proc = self.services.procs.get(name)
            if proc:
                for pid in _tree(proc.pid):
                    st = _stat(pid)
                    if st:
                        groups[name][pid] = st[1]
        ours = set(self.db_pids())
        for pid in _all_pids():
            comm = _comm(pid)
            if comm.startswith("postgres"):
                st = _stat(pid)
                if st:
                    groups["postgres: our backends" if pid in ours else "postgres: other (WAL writer, checkpointer, other databases)"][pid] = st[1]
            elif comm.startswith("redis-server"):
                st = _stat(pid)
                if st:
                    groups["redis-server (whole server)"][pid] = st[1]
        st = _stat(os.getpid())
        groups["load generator (this process)"][os.getpid()] = st[1] if st else 0.0
        busy, total = machine_busy()
        return {"groups": {k: dict(v) for k, v in groups.items()}, "busy": busy, "total": total, "at": time.monotonic()}

    @staticmethod
    def diff(a: dict, b: dict) -> dict:
        out = {}
        for name, pids in b["groups"].items():
            before = a["groups"].get(name, {})
            out[name] = sum(v - before.get(pid, 0.0) for pid, v in pids.items())
        wall = b["at"] - a["at"]
        busy = b["busy"] - a["busy"]
        out["everything else on the machine (other users' processes, kernel)"] = max(0.0, busy - sum(out.values()))
        return {"seconds": wall, "by_part": out, "machine_busy": b["busy"] - a["busy"],
                "machine_capacity": b["total"] - a["total"]}


class DbWaitSampler(threading.Thread):
    """Samples pg_stat_activity of our database: what each session is doing or waiting on."""

    def __init__(self, services: Services, interval: float = 0.1):
        super().__init__(daemon=True, name="pg-sampler")
        self.services, self.interval = services, interval
        self.active = threading.Event()
        self.done = threading.Event()
        self.samples = 0
        self.states: Counter = Counter()
        self.lock_queries: Counter = Counter()
        self.error: str | None = None

    def run(self) -> None:
        import psycopg

        try:
            conn = psycopg.connect(self.services.db_url.replace("postgres://", "postgresql://"), autocommit=True)
        except Exception as exc:  # pragma: no cover - reported, not fatal
            self.error = repr(exc)
            return
        with conn:
            while not self.done.is_set():
                if self.active.is_set():
                    rows = conn.execute(
                        "SELECT state, wait_event_type, wait_event, left(query, 70) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                    ).fetchall()
                    self.samples += 1
                    for state, wtype, wevent, query in rows:
                        if state is None:  # a session still starting
                            continue
                        if state == "active":
                            label = f"active, waiting on {wtype}:{wevent}" if wtype else "active, on CPU"
                            if wtype == "Lock":
                                self.lock_queries[" ".join(query.split())] += 1
                        else:
                            label = f"{state}" + (f" ({wtype}:{wevent})" if wtype and wtype != "Client" else "")
                        self.states[label] += 1
                time.sleep(self.interval)

    def report(self) -> dict:
        n = max(1, self.samples)
        return {
            "samples": self.samples,
            "interval_s": self.interval,
            "mean_sessions": {k: round(v / n, 3) for k, v in self.states.most_common()},
            "lock_waits_by_query": {k: round(v / n, 3) for k, v in self.lock_queries.most_common(8)},
            **({"error": self.error} if self.error else {}),
        }


# --------------------------------------------------------------------------- the buyers


class Client:
    """One keep-alive HTTP/1.1 connection with the buyer's token; reconnects once on a dropped connection."""

    def __init__(self, port: int, token: str | None, timeout: float = 30.0):
        self.port, self.timeout = port, timeout
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.conn: http.client.HTTPConnection | None = None
        self.reconnects = 0

    def request(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        payload = json.dumps(body).encode() if body is not None else None
        h = dict(self.headers)
        if payload is not None:
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=payload, headers=h)
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.will_close:
                    self.conn.close()
                    self.conn = None
                try:
                    data = json.loads(raw) if raw else None
                except ValueError:
                    data = {"raw": raw[:200].decode(errors="replace")}
                return resp.status, data
            except (http.client.HTTPException, ConnectionError, socket.timeout, OSError):
                # a kept-alive connection the server closed: every request here is safe to repeat
                # (GETs, and POSTs carry an Idempotency-Key)
                self.conn.close()
                self.conn = None
                self.reconnects += 1
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@dataclass
class BuyerLog:
    """What one buyer did: (start wall time, seconds, status) per call, and its purchases."""

    quotes: list = field(default_factory=list)
    posts: list = field(default_factory=list)
    polls: list = field(default_factory=list)
    releases: list = field(default_factory=list)  # (POST start, seconds to released/failed, final status, purchase id)
    purchases: list = field(default_factory=list)  # (id, listing, level_to, quoted price, charged price, code)
    errors: Counter = field(default_factory=Counter)
    error_samples: dict = field(default_factory=dict)
    exhausted: bool = False
    reconnects: int = 0


def _error(log: BuyerLog, what: str, status, data) -> None:
    key = f"{what} {status}"
    log.errors[key] += 1
    if key not in log.error_samples:
        message = data.get("error", {}).get("message") if isinstance(data, dict) and "error" in data else data
        log.error_samples[key] = str(message)[:200]


def buyer_loop(*, port: int, token: str, listings: list[dict], args, stop: threading.Event, log: BuyerLog) -> None:
    rng = random.Random(os.urandom(16))
    client = Client(port, token)
    ceilings = {l["id"]: Decimal(l["ceiling"]) for l in listings}
    held = {l["id"]: Decimal(0) for l in listings}
    current = rng.choice(list(held))
    step_min, step_max = float(args.step_min), float(args.step_max)
    base = "/api/v1"
    try:
        while not stop.is_set():
            if held[current] >= ceilings[current]:
                left = [lid for lid in held if held[lid] < ceilings[lid]]
                if not left:
                    log.exhausted = True
                    return
                current = rng.choice(left)
            level = min(ceilings[current], (held[current] + Decimal(rng.uniform(step_min, step_max))).quantize(LEVEL))
            start = time.time()
            t = time.perf_counter()
            status, quote = client.request("GET", f"{base}/listings/{current}/quote/?epsilon={level}")
            log.quotes.append((start, time.perf_counter() - t, status))
            if status != 200:
                _error(log, "quote", status, quote)
                held[current] = _resync(client, current, held[current])
                continue
            key = uuid.uuid4().hex
            start = time.time()
            t = time.perf_counter()
            status, purchase = client.request(
                "POST", f"{base}/purchases/", {"listing": current, "epsilon": str(level)}, {"Idempotency-Key": key}
            )
            log.posts.append((start, time.perf_counter() - t, status))
            if status not in (200, 202):
                _error(log, "purchase", status, purchase)
                if status == 402:  # out of credits: this buyer is done
                    return
                held[current] = _resync(client, current, held[current])
                time.sleep(args.poll)
                continue
            if status == 200:
                log.errors["purchase 200 (idempotent repeat)"] += 1
            held[current] = level
            pid = purchase["id"]
            log.purchases.append((pid, current, str(level), quote["price"], purchase["price"], status))
            final, seen = purchase.get("status"), purchase
            while final not in ("released", "failed"):
                if time.time() - start > args.release_timeout:
                    final = "timeout"
                    log.errors["release timeout"] += 1
                    break
                time.sleep(args.poll)
                tp = time.time()
                t2 = time.perf_counter()
                status, seen = client.request("GET", f"{base}/purchases/{pid}/")
                log.polls.append((tp, time.perf_counter() - t2, status))
                if status != 200:
                    _error(log, "poll", status, seen)
                    continue
                final = seen["status"]
            log.releases.append((start, time.time() - start, final, pid))
            if final == "failed":
                _error(log, "release failed", "", seen.get("failure_reason"))
    except Exception as exc:  # a dead buyer is an error to report, never a silent hole in the figures
        _error(log, "exception", type(exc).__name__, repr(exc))
    finally:
        log.reconnects = client.reconnects
        client.close()


def _resync(client: Client, listing_id: int, guess: Decimal) -> Decimal:
    """The level this buyer holds on a listing, as the API says (after a refused step)."""
    try:
        status, data = client.request("GET", f"/api/v1/listings/{listing_id}/")
        if status == 200 and data.get("your_level") is not None:
            return Decimal(data["your_level"])
    except Exception:
        pass
    return guess


def canary(port: int, token: str, listing_id: int, timeout: float = 90.0) -> float:
    """One purchase through the whole pipeline (web, broker, worker): the setup is ready."""
    client = Client(port, token)
    start = time.monotonic()
    status, data = client.request("POST", "/api/v1/purchases/", {"listing": listing_id, "epsilon": "0.01"},
                                  {"Idempotency-Key": "load-canary"})
    if status not in (200, 202):
        raise RuntimeError(f"the canary purchase was refused: {status} {data}")
    while time.monotonic() - start < timeout:
        status, seen = client.request("GET", f"/api/v1/purchases/{data['id']}/")
        if status == 200 and seen["status"] == "released":
            client.close()
            return time.monotonic() - start
        if status == 200 and seen["status"] == "failed":
            raise RuntimeError(f"the canary purchase failed: {seen.get('failure_reason')}")
        time.sleep(0.2)
    raise RuntimeError(f"the canary purchase was not released within {timeout:.0f} s: is the Celery worker up?")


# --------------------------------------------------------------------------- figures


def pct(values, qs=(50, 95, 99)) -> dict:
    if not len(values):
        return {f"p{q}": None for q in qs} | {"mean": None, "max": None, "n": 0}
    arr = np.asarray(values, dtype=float) * 1e3
    return {**{f"p{q}": round(float(np.percentile(arr, q)), 2) for q in qs},
            "mean": round(float(arr.mean()), 2), "max": round(float(arr.max()), 2), "n": int(arr.size)}


def figures(logs: list[BuyerLog], t0: float, t1: float) -> dict:
    """Counts and latencies of calls started in the measured window [t0, t1)."""
    def inside(rows):
        return [r for r in rows if t0 <= r[0] < t1]

    quotes = [r for log in logs for r in inside(log.quotes)]
    posts = [r for log in logs for r in inside(log.posts)]
    polls = [r for log in logs for r in inside(log.polls)]
    releases = [r for log in logs for r in inside(log.releases)]
    window = t1 - t0
    accepted = [r for r in posts if r[2] in (200, 202)]
    released = [r for r in releases if r[2] == "released"]
    done_in_window = [r for log in logs for r in log.releases if r[2] == "released" and t0 <= r[0] + r[1] < t1]
    return {
        "window_s": round(window, 2),
        "purchases": len(accepted),
        "purchases_per_s": round(len(accepted) / window, 2),
        "releases_completed_in_window_per_s": round(len(done_in_window) / window, 2),
        "quotes": len(quotes),
        "quotes_per_s": round(len([r for r in quotes if r[2] == 200]) / window, 2),
        "polls": len(polls),
        "polls_per_purchase": round(len(polls) / max(1, len(accepted)), 2),
        "http_requests_per_s": round((len(quotes) + len(posts) + len(polls)) / window, 1),
        "latency_ms": {
            "quote": pct([r[1] for r in quotes]),
            "purchase_post": pct([r[1] for r in accepted]),
            "poll": pct([r[1] for r in polls]),
            "purchase_to_release_client": pct([r[1] for r in released]),
        },
    }


def db_latency(conn, t0: float, t1: float) -> dict:
    """Purchase row to release row, from the stored timestamps (no polling in it)."""
    rows = conn.execute(
        "SELECT extract(epoch FROM r.created_at - p.created_at) FROM releases_release r "
        "JOIN trading_purchase p ON p.id = r.purchase_id "
        "WHERE p.created_at >= to_timestamp(%s) AND p.created_at < to_timestamp(%s)", (t0, t1)
    ).fetchall()
    return pct([float(r[0]) for r in rows])


# --------------------------------------------------------------------------- invariants


def _money(c: Decimal, eps: Decimal) -> Decimal:
    return (c * eps).quantize(CENT, rounding=ROUND_HALF_UP) if eps > 0 else Decimal("0.00")


def check_invariants(conn, logs: list[BuyerLog], seed: dict) -> dict:
    """Every ledger and release invariant, counted in the database. ``{name: {ok, detail}}``."""
    one = lambda q, *p: conn.execute(q, p or None).fetchone()[0]  # noqa: E731
    out: dict[str, dict] = {}

    def check(name: str, bad: int, detail: str) -> None:
        out[name] = {"ok": bad == 0, "violations": int(bad), "detail": detail}

    for name, sql, detail in INVARIANTS:
        check(name, one(sql), detail)
    check("no purchase failed", one("SELECT count(*) FROM trading_purchase WHERE status = 'failed'"),
          "failed (refunded) purchases: none expected under load")
    # prices: each step costs P(to) - P(from) on the listing's linear curve
    bad_price = 0
    curves = {l["id"]: Decimal(l["price_curve"]["c"]) for l in seed["listings"]}
    for listing_id, level_from, level_to, price in conn.execute(
        "SELECT listing_id, level_from, level_to, price FROM trading_purchase"
    ):
        c = curves[listing_id]
        bad_price += price != _money(c, level_to) - _money(c, level_from)
    check("every price is P(to) - P(from)", bad_price, "purchases whose price is not the curve's increment")
    # what the buyers were told against what is stored
    told = {p[0]: p for log in logs for p in log.purchases}
    stored = {str(pid): (str(level_to), price, status) for pid, level_to, price, status in conn.execute(
        "SELECT p.id, p.level_to, p.price, p.status FROM trading_purchase p JOIN accounts_user u ON u.id = p.buyer_id "
        "WHERE u.username <> 'load-canary'")}
    missing = sum(1 for pid in told if pid not in stored)
    extra = sum(1 for pid in stored if pid not in told)
    check("every accepted purchase is stored, and nothing else",
          missing + extra, f"{missing} accepted but not stored, {extra} stored but never accepted")
    wrong = sum(1 for pid, p in told.items() if pid in stored and (
        Decimal(p[3]) != stored[pid][1] or Decimal(p[4]) != stored[pid][1] or Decimal(p[2]) != Decimal(stored[pid][0])))
    check("each purchase was charged its quoted price", wrong, "purchases whose quote, answer and stored price differ")
    said_released = {r[3] for log in logs for r in log.releases if r[2] == "released"}
    check("every purchase a buyer saw released is released",
          sum(1 for pid in said_released if stored.get(pid, (None, None, None))[2] != "released"),
          "purchases seen released by a buyer but not released in the database")
    return out


# --------------------------------------------------------------------------- the profile


def _where(key) -> str:
    filename, line, func = key
    for marker in ("/site-packages/", str(ROOT) + "/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    if filename == "~":
        return func  # a C function: "<method 'execute' of ...>"
    return f"{filename}:{line}({func})"


def read_profile(folder: Path, role: str, per: int, top: int = 20) -> dict | None:
    files = sorted(folder.glob(f"{role}-*.prof"))
    if not files:
        return None
    stats = pstats.Stats(str(files[0]))
    for f in files[1:]:
        stats.add(str(f))
    rows = stats.stats  # key -> (primitive calls, calls, tottime, cumtime, callers)
    total = sum(tt for _, _, tt, _, _ in rows.values())
    per = max(1, per)

    def item(key, v):
        cc, nc, tt, ct, _ = v
        return {"function": _where(key), "calls_per_unit": round(nc / per, 2),
                "self_ms_per_unit": round(tt / per * 1e3, 3), "cum_ms_per_unit": round(ct / per * 1e3, 3)}

    by_self = sorted(rows.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    ours = [kv for kv in rows.items() if kv[0][0].startswith(str(ROOT)) and "/.venv/" not in kv[0][0]
            and "/bench/" not in kv[0][0]]
    by_cum = sorted(ours, key=lambda kv: kv[1][3], reverse=True)[:top]
    keys: dict[str, list] = {}
    for f in folder.glob(f"{role}-*.json"):
        for k, v in json.loads(f.read_text())["keys"].items():
            row = keys.setdefault(k, [0, 0.0, 0, 0.0, 0.0])
            for i in range(5):
                row[i] += v[i]
    return {
        "processes": len(files),
        "profiled_seconds": round(total, 2),
        "by_endpoint": {
            k: {"count": int(v[0]), "wall_ms": round(v[1] / v[0] * 1e3, 2), "cpu_ms": round(v[4] / v[0] * 1e3, 2),
                "sql_statements": round(v[2] / v[0], 2), "sql_wall_ms": round(v[3] / v[0] * 1e3, 2)}
            for k, v in sorted(keys.items(), key=lambda kv: -kv[1][1]) if v[0]
        },
        "hot_spots_cumulative": [{"function": h["function"], "ms_per_unit": h["ms"]} for h in cprofile_hot_spots(rows, per)],
        "top_self": [item(k, v) for k, v in by_self],
        "top_cumulative_product_code": [item(k, v) for k, v in by_cum],
    }


PACKAGES = [  # (path prefix of a frame's file, as py-spy shortens it, name)
    ("market/", "product: market/"), ("releases/", "product: releases/"),
    ("django/db/", "Django ORM and database layer"), ("django/core/cache", "Django cache (throttling)"),
    ("django/", "Django (other)"), ("rest_framework/", "Django REST framework"), ("psycopg", "psycopg"),
    ("redis/", "redis-py"), ("kombu/", "Celery: kombu"), ("celery/", "Celery"), ("billiard/", "Celery: billiard"),
    ("vine/", "Celery: vine"), ("amqp/", "Celery: amqp"), ("gunicorn/", "gunicorn"), ("numpy/", "numpy"),
    ("scipy/", "scipy"), ("drf_spectacular", "drf-spectacular"), ("whitenoise/", "whitenoise"),
    ("django_htmx/", "django-htmx"),
]
#: places worth naming whatever calls them: (name, file as shortened in profiles, function name)
HOT_SPOTS = [
    ("DRF throttles (history read + written in the Redis cache)", "rest_framework/throttling.py", "allow_request"),
    ("  Django RedisCache.get_client: a new redis.Redis per call", "django/core/cache/backends/redis.py", "get_client"),
    ("DRF token authentication (a query per request)", "rest_framework/authentication.py", "authenticate"),
    ("connection health check (SELECT 1 per request)", "django/db/backends/base/base.py", "close_if_health_check_failed"),
    ("database connect", "django/db/backends/base/base.py", "connect"),
    ("transaction commit", "django/db/backends/base/base.py", "commit"),
    ("queueing the release task (Celery apply_async)", "celery/app/task.py", "apply_async"),
    ("purchase_create", "market/trading/services.py", "purchase_create"),
    ("  transfer_create (ledger)", "market/ledger/services.py", "transfer_create"),
    ("  account_get (get_or_create in a savepoint)", "market/ledger/services.py", "account_get"),
    ("  _existing_for_key (idempotency look-ups)", "market/trading/services.py", "_existing_for_key"),
    ("purchase_quote", "market/trading/services.py", "purchase_quote"),
    ("  listing_accuracy (error bounds in a quote)", "market/trading/services.py", "listing_accuracy"),
    ("  buyer_caps (trust cap check)", "market/trust/selectors.py", "buyer_caps"),
    ("listing_get (loads the listing with its dataset)", "market/catalog/selectors.py", "listing_get"),
    ("purchase_get (the purchase with listing and release)", "market/trading/selectors.py", "purchase_get"),
    ("PurchaseSerializer.get_release (a released purchase)", "market/api/serializers.py", "get_release"),
    ("  privacy at risk of the release (level_at_risk)", "market/catalog/risk.py", "level_at_risk"),
    ("  release_readings (build_plan + present)", "releases/selectors.py", "release_readings"),
    ("release_compute (the task's work)", "releases/services.py", "release_compute"),
    ("  the noise step (_point_at / _l2_point_at)", "releases/services.py", "_point_at"),
    ("DRF response rendering", "rest_framework/response.py", "rendered_content"),
]


def _hot(frame: str, file: str, func: str) -> bool:
    """Whether a py-spy frame ``Class.func (file:line)`` or a cProfile key text ``file:line(func)`` is this spot."""
    if f"({file}:" in frame:  # py-spy
        name = frame.split(" (", 1)[0]
        return name == func or name.endswith("." + func) or name.endswith("._" + func.lstrip("_"))
    return f"{file}:" in frame and (frame.endswith(f"({func})") or frame.endswith(f"(_{func.lstrip('_')})"))


def cprofile_hot_spots(rows: dict, per: int) -> list[dict]:
    """Cumulative ms per unit of each hot spot, from pstats rows (recursion counted once by cProfile)."""
    out = []
    for name, file, func in HOT_SPOTS:
        ms = sum(v[3] for k, v in rows.items() if _hot(_where(k), file, func)) / max(1, per) * 1e3
        out.append({"function": name, "ms": round(ms, 3)})
    return out


def find_py_spy(given: str) -> str | None:
    import shutil

    if given and given != "auto":
        return given
    return os.environ.get("PY_SPY") or shutil.which("py-spy") or (
        str(VENV_BIN / "py-spy") if (VENV_BIN / "py-spy").exists() else None)


def start_py_spy(exe: str, pid: int, out: Path, seconds: float, rate: int) -> subprocess.Popen:
    """Sample a process and its children (on-CPU threads only) for ``seconds``; raw collapsed stacks."""
    cmd = [exe, "record", "--pid", str(pid), "--subprocesses", "--format", "raw", "--function", "--nonblocking",
           "--rate", str(rate), "--duration", str(max(1, int(round(seconds)))), "--output", str(out)]
    log = open(str(out) + ".log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_die_with_parent)
    log.close()
    return proc


def read_py_spy(path: Path, cpu_ms_per_purchase: float, top: int = 15) -> dict | None:
    """Samples of on-CPU threads, as shares and as CPU ms per purchase (share x the part's measured CPU)."""
    if not path.exists():
        return None
    total = 0
    self_counts: Counter = Counter()
    incl: Counter = Counter()
    packages: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if not f.startswith("process ") and not f.startswith("thread ")]
        if not frames:
            continue
        total += n
        leaf = frames[-1]
        self_counts[leaf] += n
        where = leaf[leaf.rfind("(") + 1:] if "(" in leaf else leaf
        packages[next((name for prefix, name in PACKAGES if where.startswith(prefix)), "Python stdlib and other")] += n
        for f in set(frames):
            incl[f] += n
    if not total:
        return None

    def row(name, n):
        return {"function": name, "share": round(n / total, 4), "cpu_ms_per_purchase": round(n / total * cpu_ms_per_purchase, 2)}

    product = [(f, n) for f, n in incl.items() if "(market/" in f or "(releases/" in f]
    spots = [row(name, sum(c for f, c in incl.items() if _hot(f, file, func))) for name, file, func in HOT_SPOTS]
    return {
        "samples": total,
        "by_package_self": [row(k, v) for k, v in packages.most_common()],
        "hot_spots_inclusive": spots,
        "top_self": [row(k, v) for k, v in self_counts.most_common(top)],
        "top_inclusive_product_code": [row(k, v) for k, v in sorted(product, key=lambda kv: -kv[1])[:top]],
    }


# --------------------------------------------------------------------------- the run


def versions() -> dict:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for pkg in ("Django", "djangorestframework", "celery", "gunicorn", "psycopg", "redis"):
        try:
            out[pkg if pkg != "redis" else "redis-py"] = version(pkg)
        except Exception:
            pass
    return out


def machine(conn, services: Services) -> dict:
    model = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    info = {"cpu": model, "cores": os.cpu_count(), **versions()}
    info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
    try:
        import redis

        info["redis_server"] = redis.Redis.from_url(services.redis_url).info("server")["redis_version"]
    except Exception:
        pass
    return info


def run(args) -> int:
    import psycopg

    logdir = Path(tempfile.mkdtemp(prefix="gradual-load-"))
    services = Services(args, logdir)
    services.profile_dir.mkdir()
    stop = threading.Event()
    started = time.time()
    report: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "logs": str(logdir)}
    report["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report["config"]["port"] = services.port
    exit_code = 0
    sampler = DbWaitSampler(services)
    threads: list[threading.Thread] = []

    def on_term(signum, frame):
        raise KeyboardInterrupt

    spy = find_py_spy(args.py_spy) if args.py_spy else None
    if args.py_spy and not spy:
        print("py-spy not found (give its path: --py-spy PATH, or PY_SPY=...): no sampling profile", file=sys.stderr)
    old_term = signal.signal(signal.SIGTERM, on_term)
    try:
        print(f"logs: {logdir}", flush=True)
        services.reset_database()
        services.flush_redis()
        t = time.perf_counter()
        services.run("migrate", [str(PYTHON), "manage.py", "migrate", "--noinput"])
        seed_file = logdir / "seed.json"
        services.run("seed", [str(PYTHON), "-m", "bench.load_seed", "--buyers", str(args.buyers), "--listings",
                              str(args.listings), "--ceiling", str(args.ceiling), "--price", str(args.price),
                              "--out", str(seed_file)])
        seed = json.loads(seed_file.read_text())
        print(f"database {args.db} migrated and seeded ({args.buyers} buyers, {args.listings} listings) "
              f"in {time.perf_counter() - t:.1f} s", flush=True)
        services.start_gunicorn()
        services.start_celery()
        services.wait_http()
        took = canary(services.port, seed["canary"]["token"], seed["listings"][0]["id"])
        print(f"gunicorn on 127.0.0.1:{services.port} ({args.workers} workers x {args.threads} threads), "
              f"Celery {args.pool} x {args.celery}: ready (canary released in {took:.2f} s)", flush=True)

        conn = psycopg.connect(services.db_url.replace("postgres://", "postgresql://"), autocommit=True)
        db_pids = lambda: [r[0] for r in conn.execute(  # noqa: E731
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        meter = CpuMeter(services, db_pids)
        sampler.start()

        if args.wait_quiet:
            busy = wait_quiet(args.quiet_below, args.wait_quiet)
            report["machine_busy_before_pct"] = round(busy, 1)
            print(f"machine {busy:.0f}% busy before the load", flush=True)
        logs = [BuyerLog() for _ in seed["buyers"]]
        for buyer, log in zip(seed["buyers"], logs):
            th = threading.Thread(target=buyer_loop, daemon=True, name=f"buyer-{buyer['id']}", kwargs=dict(
                port=services.port, token=buyer["token"], listings=seed["listings"], args=args, stop=stop, log=log))
            threads.append(th)
        t_start = time.time()
        for th in threads:
            th.start()
        t0 = t_start + args.warmup
        t1 = t0 + args.seconds
        print(f"{args.buyers} buyers running: {args.warmup:g} s warm-up, then {args.seconds:g} s measured", flush=True)
        time.sleep(max(0.0, t0 - time.time()))
        cpu_a = meter.snapshot()
        sampler.active.set()
        switch = services.profile_dir / "on"
        if args.profile:
            switch.touch()
        spies = {}
        if spy:
            for part in ("gunicorn", "celery"):
                spies[part] = start_py_spy(spy, services.procs[part].pid, services.profile_dir / f"py-spy-{part}.txt",
                                           args.seconds, args.py_spy_rate)
        while time.time() < t1:
            time.sleep(min(1.0, max(0.0, t1 - time.time())))
            services.check_alive()
        sampler.active.clear()
        switch.unlink(missing_ok=True)
        cpu_b = meter.snapshot()
        stop.set()
        drain = time.time()
        for th in threads:
            th.join(timeout=max(1.0, args.release_timeout + 30 - (time.time() - drain)))
        alive = sum(th.is_alive() for th in threads)
        deadline = time.time() + 60
        while conn.execute("SELECT count(*) FROM trading_purchase WHERE status IN ('queued', 'computing')").fetchone()[0]:
            if time.time() > deadline:
                break
            time.sleep(0.5)
        print(f"stopped; in-flight steps drained in {time.time() - drain:.1f} s"
              + (f" ({alive} buyers still stuck)" if alive else ""), flush=True)

        figs = figures(logs, t0, t1)
        figs["latency_ms"]["purchase_to_release_db"] = db_latency(conn, t0, t1)
        errors = Counter()
        samples = {}
        for log in logs:
            errors.update(log.errors)
            for k, v in log.error_samples.items():
                samples.setdefault(k, v)
        figs["errors"] = dict(errors)
        figs["error_samples"] = samples
        figs["reconnects"] = sum(log.reconnects for log in logs)
        figs["buyers_done_all_listings"] = sum(log.exhausted for log in logs)
        cpu = CpuMeter.diff(cpu_a, cpu_b)
        n = max(1, figs["purchases"])
        figs["cpu"] = {
            "window_s": round(cpu["seconds"], 2),
            "machine_busy_pct_of_all_cores": round(100 * cpu["machine_busy"] / max(1e-9, cpu["machine_capacity"]), 1),
            "by_part": {k: {"cores_used": round(v / cpu["seconds"], 2), "cpu_ms_per_purchase": round(v / n * 1e3, 2)}
                        for k, v in sorted(cpu["by_part"].items(), key=lambda kv: -kv[1])},
        }
        figs["postgres_sessions"] = sampler.report()
        if spies:
            for proc in spies.values():
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
            report["py_spy"] = {
                "note": f"py-spy {args.py_spy_rate} Hz over the measured window, on-CPU threads only (no --idle), "
                        "gunicorn and Celery with their children; shares of samples, and CPU ms per purchase = share "
                        "x the part's CPU measured in /proc",
                **{part: read_py_spy(services.profile_dir / f"py-spy-{part}.txt",
                                     figs["cpu"]["by_part"].get(part, {}).get("cpu_ms_per_purchase", 0.0))
                   for part in spies},
            }
        report["machine"] = machine(conn, services)
        report["figures"] = figs

        invariants = check_invariants(conn, logs, seed)
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM trading_purchase), (SELECT count(*) FROM releases_release), "
            "(SELECT count(*) FROM releases_noisepoint), (SELECT count(*) FROM ledger_transfer)").fetchone()
        report["stored"] = dict(zip(("purchases", "releases", "noise_points", "transfers"), counts))
        report["invariants"] = invariants
        conn.close()
        if not all(v["ok"] for v in invariants.values()):
            exit_code = 1
    except KeyboardInterrupt:
        print("interrupted: stopping everything", file=sys.stderr, flush=True)
        exit_code = 130
    except Exception:
        import traceback

        traceback.print_exc()
        print(f"the run failed: stopping everything (logs in {logdir})", file=sys.stderr, flush=True)
        exit_code = 99
    finally:
        stop.set()
        sampler.done.set()
        services.stop()
        signal.signal(signal.SIGTERM, old_term)
    if exit_code in (130, 99):
        _cleanup(services, args)
        return 130 if exit_code == 130 else 1
    if args.phases and "figures" in report:
        try:
            out = logdir / "phases.json"
            print(f"timing the phases of one purchase alone ({args.phases} iterations, servers stopped) ...", flush=True)
            services.run("phases", [str(PYTHON), "-m", "bench.load_phases", "--iterations", str(args.phases),
                                    "--out", str(out)])
            report["phases"] = json.loads(out.read_text())["phases"]
            report["phases_model"] = phases_model(report)
        except Exception as exc:
            print(f"the phases step failed: {exc}", file=sys.stderr)

    if args.profile:
        # the profile covers the measured window: per purchase accepted in it
        total = report["figures"]["purchases"]
        report["profile"] = {
            "note": f"cProfile ({args.profile_timer} timer) in every gunicorn worker thread and Celery pool process, "
                    "over the measured window; figures per purchase accepted in the window",
            "web": read_profile(services.profile_dir, "web", per=total),
            "celery": read_profile(services.profile_dir, "task", per=total),
        }
    _cleanup(services, args)
    report["wall_s"] = round(time.time() - started, 1)
    print_report(report, args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nwritten: {args.json}")
    if exit_code == 0 and args.check_target and not target_met(report):
        exit_code = 2
    return exit_code


def phases_model(report: dict) -> dict:
    """CPU of one purchase as the buyers made it (a quote, a purchase, its polls, the release), from the
    phases timed alone, against the CPU measured under load; and the rate two cores could sustain."""
    ph = report["phases"]
    polls = report["figures"]["polls_per_purchase"]
    cpu = lambda name: ph[name]["cpu_ms_mean"]  # noqa: E731
    web = cpu("quote") + cpu("purchase") + max(0.0, polls - 1) * cpu("poll queued") + cpu("poll released (first)")
    worker = cpu("release")
    cores = report["machine"]["cores"]
    parts = report["figures"]["cpu"]["by_part"]
    measured = {k: parts.get(k, {}).get("cpu_ms_per_purchase") for k in ("gunicorn", "celery", "postgres: our backends")}
    return {
        "polls_per_purchase": polls,
        "web_python_cpu_ms": round(web, 2),
        "release_python_cpu_ms": round(worker, 2),
        "measured_under_load_cpu_ms": measured,
        "ceiling_purchases_per_s_python_only": round(cores * 1e3 / (web + worker), 1),
        "ceiling_purchases_per_s_measured": round(
            cores * 1e3 / max(1e-9, sum(v or 0.0 for v in measured.values())), 1),
    }


def _cleanup(services: Services, args) -> None:
    try:
        services.flush_redis()
    except Exception:
        pass
    if not args.keep_db:
        try:
            services.drop_database()
        except Exception as exc:
            print(f"could not drop database {args.db}: {exc}", file=sys.stderr)


def target_met(report: dict) -> bool:
    f = report["figures"]
    p99 = f["latency_ms"]["purchase_to_release_client"]["p99"]
    return f["purchases_per_s"] >= TARGET_RATE and p99 is not None and p99 < TARGET_P99 * 1e3


def print_report(report: dict, args) -> None:
    f = report["figures"]
    m = report["machine"]
    print(f"\nmachine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, PostgreSQL {m['postgresql']}, "
          f"Redis {m.get('redis_server', '?')}, Django {m.get('Django')}, gunicorn {m.get('gunicorn')}, celery {m.get('celery')}")
    nice = "".join(f", nice {n} +{v}" for n, v in (("gunicorn", args.nice_web), ("celery", args.nice_celery)) if v)
    print(f"setup: gunicorn {args.workers} gthread workers x {args.threads} threads, Celery {args.pool} x {args.celery}{nice}, "
          f"{args.buyers} buyers, {args.listings} listings, poll every {args.poll * 1e3:g} ms, "
          f"synchronous_commit={args.synchronous_commit}{', PROFILED' if args.profile else ''}")
    print(f"\nmeasured {f['window_s']:g} s: {f['purchases']} purchases = {f['purchases_per_s']:.1f}/s "
          f"(released {f['releases_completed_in_window_per_s']:.1f}/s), quotes {f['quotes_per_s']:.1f}/s, "
          f"{f['http_requests_per_s']:.0f} HTTP requests/s ({f['polls_per_purchase']:.1f} polls per purchase)")
    print(f"{'latency (ms)':<34}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'n':>8}")
    names = {"quote": "quote GET", "purchase_post": "purchase POST", "poll": "poll GET",
             "purchase_to_release_client": "purchase -> release (buyer sees)",
             "purchase_to_release_db": "purchase -> release (stored rows)"}
    for key, label in names.items():
        d = f["latency_ms"][key]
        if d["n"]:
            print(f"{label:<34}{d['p50']:>9.1f}{d['p95']:>9.1f}{d['p99']:>9.1f}{d['max']:>9.1f}{d['n']:>8}")
    print(f"errors: {f['errors'] or 'none'}" + (f"; samples: {f['error_samples']}" if f["error_samples"] else "")
          + f"; reconnects {f['reconnects']}")
    if f["buyers_done_all_listings"]:
        print(f"note: {f['buyers_done_all_listings']} buyers reached every ceiling and stopped early (raise --ceiling)")
    cpu = f["cpu"]
    print(f"\nCPU ({cpu['machine_busy_pct_of_all_cores']:.0f}% of the machine's {m['cores']} cores busy):")
    for name, v in cpu["by_part"].items():
        print(f"  {name:<62}{v['cores_used']:>6.2f} cores {v['cpu_ms_per_purchase']:>8.2f} ms per purchase")
    pg = f["postgres_sessions"]
    print(f"PostgreSQL sessions of this database, mean over {pg['samples']} samples:")
    for k, v in list(pg["mean_sessions"].items())[:10]:
        print(f"  {k:<62}{v:>7.2f}")
    for k, v in pg["lock_waits_by_query"].items():
        print(f"    waiting on a lock: {v:5.2f}  {k}")
    if "profile" in report:
        for role in ("web", "celery"):
            p = report["profile"][role]
            if not p:
                print(f"\nprofile ({role}): no data")
                continue
            print(f"\nprofile ({role}, {p['processes']} processes, {args.profile_timer} timer): per endpoint/task (mean)")
            for k, v in p["by_endpoint"].items():
                print(f"  {k:<36}{v['count']:>7} x  wall {v['wall_ms']:>7.2f} ms  CPU {v['cpu_ms']:>6.2f} ms  "
                      f"{v['sql_statements']:>5.1f} SQL statements taking {v['sql_wall_ms']:>6.2f} ms")
            print("  hot spots (cumulative ms per purchase):")
            for it in p["hot_spots_cumulative"]:
                if it["ms_per_unit"] > 0:
                    print(f"    {it['ms_per_unit']:>8.3f}  {it['function']}")
            print(f"  top self time (ms per purchase):")
            for it in p["top_self"][:15]:
                print(f"    {it['self_ms_per_unit']:>8.3f}  {it['calls_per_unit']:>7.1f} calls  {it['function'][:110]}")
            print(f"  top cumulative time in the product's code (ms per purchase):")
            for it in p["top_cumulative_product_code"][:15]:
                print(f"    {it['cum_ms_per_unit']:>8.3f}  {it['calls_per_unit']:>7.1f} calls  {it['function'][:110]}")
    if "py_spy" in report:
        for part in ("gunicorn", "celery"):
            p = report["py_spy"].get(part)
            if not p:
                print(f"\npy-spy ({part}): no samples")
                continue
            print(f"\npy-spy ({part}, {p['samples']} samples of on-CPU threads): CPU ms per purchase")
            print("  by package (self time):")
            for it in p["by_package_self"][:12]:
                print(f"    {it['cpu_ms_per_purchase']:>7.2f} ms {100 * it['share']:>5.1f}%  {it['function']}")
            print("  hot spots (inclusive):")
            for it in p["hot_spots_inclusive"]:
                if it["share"] > 0:
                    print(f"    {it['cpu_ms_per_purchase']:>7.2f} ms {100 * it['share']:>5.1f}%  {it['function']}")
            print("  top self:")
            for it in p["top_self"][:10]:
                print(f"    {it['cpu_ms_per_purchase']:>7.2f} ms {100 * it['share']:>5.1f}%  {it['function'][:110]}")
            print("  top inclusive in the product's code:")
            for it in p["top_inclusive_product_code"][:12]:
                print(f"    {it['cpu_ms_per_purchase']:>7.2f} ms {100 * it['share']:>5.1f}%  {it['function'][:110]}")
    if "phases" in report:
        ph = report["phases"]
        print(f"\nphases of one purchase, timed alone in one thread on the loaded database (ms per call):")
        print(f"  {'phase':<24}{'calls':>6}{'CPU p50':>9}{'CPU mean':>9}{'wall p50':>9}{'SQL':>6}{'SQL ms':>8}")
        for name, v in ph.items():
            if v.get("calls"):
                print(f"  {name:<24}{v['calls']:>6}{v['cpu_ms_p50']:>9.2f}{v['cpu_ms_mean']:>9.2f}{v['wall_ms_p50']:>9.2f}"
                      f"{v['sql_statements']:>6.1f}{v['sql_wall_ms_mean']:>8.2f}")
        for name, v in ph.items():
            if not v.get("calls"):
                continue
            print(f"  {name}: hot spots, top cumulative in the product's code, top self "
                  f"(wall ms per profiled call: cProfile slows Python code by about 2x)")
            for it in v.get("hot_spots", []):
                if it["ms"] >= 0.05:
                    print(f"    {it['ms']:>8.3f}          {it['function']}")
            for it in v["top_cumulative_product_code"][:6]:
                print(f"    {it['ms']:>8.3f}  {it['calls']:>6.1f}x  {it['function'][:100]}")
            for it in v["top_self"][:6]:
                print(f"    {it['ms']:>8.3f}  {it['calls']:>6.1f}x  self  {it['function'][:94]}")
        m = report["phases_model"]
        under = m["measured_under_load_cpu_ms"]
        print(f"  one purchase as the buyers made it (quote, purchase, {m['polls_per_purchase']:.1f} polls, release): "
              f"{m['web_python_cpu_ms']:.1f} ms (web) + {m['release_python_cpu_ms']:.1f} ms (release) of CPU in the "
              f"phases alone;")
        print(f"  under load, per purchase: gunicorn {under['gunicorn']} ms, Celery {under['celery']} ms, "
              f"PostgreSQL {under['postgres: our backends']} ms (with the servers' own overhead)")
        print(f"  so {report['machine']['cores']} cores sustain at most ~{m['ceiling_purchases_per_s_python_only']:.0f} "
              f"purchases/s (the phases' CPU alone) or ~{m['ceiling_purchases_per_s_measured']:.0f}/s (all the CPU "
              f"measured under load) if nothing else ran on the machine")
    inv = report["invariants"]
    print(f"\ninvariants ({report['stored']['purchases']} purchases, {report['stored']['releases']} releases, "
          f"{report['stored']['noise_points']} noise points, {report['stored']['transfers']} transfers):")
    for name, v in inv.items():
        print(f"  {'pass' if v['ok'] else 'FAIL'}  {name}" + ("" if v["ok"] else f": {v['violations']} ({v['detail']})"))
    lat = f["latency_ms"]["purchase_to_release_client"]
    print(f"\ntarget {TARGET_RATE:g} purchases/s with p99 purchase -> release < {TARGET_P99:g} s: "
          f"{'met' if target_met(report) else 'MISSED'} ({f['purchases_per_s']:.1f}/s, p99 {lat['p99']} ms)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=50, help="concurrent buyers (threads)")
    parser.add_argument("--seconds", type=float, default=30, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=5, help="seconds of load before the measurement")
    parser.add_argument("--listings", type=int, default=5)
    parser.add_argument("--ceiling", default="5", help="every listing's ceiling")
    parser.add_argument("--price", default="2.00", help="linear price: credits per epsilon")
    parser.add_argument("--step-min", default="0.01", help="smallest step up")
    parser.add_argument("--step-max", default="0.2", help="largest step up")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between polls of a purchase")
    parser.add_argument("--release-timeout", type=float, default=60, help="a buyer gives up waiting after this")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (gthread)")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--celery", type=int, default=2, help="Celery worker concurrency")
    parser.add_argument("--pool", default="prefork", choices=["prefork", "threads", "solo"], help="Celery pool")
    parser.add_argument("--nice-web", type=int, default=0, help="niceness added to gunicorn (and its workers)")
    parser.add_argument("--nice-celery", type=int, default=0, help="niceness added to the Celery worker")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                        help="before the load, wait up to this long for other users' load to drop below --quiet-below")
    parser.add_argument("--quiet-below", type=float, default=15, help="percent of the machine busy counted as quiet")
    parser.add_argument("--throttle", default="1000000/minute", help="every THROTTLE_* rate (high: no throttling)")
    parser.add_argument("--log-level", default="WARNING", help="LOG_LEVEL and Celery's --loglevel")
    parser.add_argument("--synchronous-commit", default="on", choices=["on", "off"],
                        help="set on the load database only (off: commits do not wait for the WAL flush)")
    parser.add_argument("--profile", action="store_true", help="profile the web workers and the Celery pool")
    parser.add_argument("--profile-timer", default="cpu", choices=["cpu", "wall"],
                        help="the profile's clock: each thread's CPU time, or the wall clock (waits included)")
    parser.add_argument("--py-spy", nargs="?", const="auto", default=None, metavar="PATH",
                        help="also sample gunicorn and Celery with py-spy (found on PATH, in .venv/bin or $PY_SPY)")
    parser.add_argument("--py-spy-rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--phases", type=int, default=150, metavar="N",
                        help="after the load, time N purchases phase by phase alone (bench/load_phases.py); 0: skip")
    parser.add_argument("--db", default="gradual_load", help="PostgreSQL database (dropped and created)")
    parser.add_argument("--pg-host", default="127.0.0.1")
    parser.add_argument("--pg-port", type=int, default=5432)
    parser.add_argument("--pg-user", default="postgres")
    parser.add_argument("--redis-host", default="127.0.0.1")
    parser.add_argument("--redis-port", type=int, default=6379)
    parser.add_argument("--redis-db", type=int, default=5, help="Redis database number (flushed)")
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (default: a free one)")
    parser.add_argument("--keep-db", action="store_true", help="keep the database after the run")
    parser.add_argument("--check-target", action="store_true", help="exit 2 if the target is missed")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "load.json",
                        help="write the figures here (default bench/results/load.json)")
    args = parser.parse_args(argv)
    if args.redis_db == 0:
        parser.error("--redis-db 0 is the application's own: choose another")
    if args.db in ("test", "test_test", "postgres"):
        parser.error(f"--db {args.db} is not a throw-away database")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
