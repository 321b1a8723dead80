"""The fault test under load (issue 27, item 6); also runnable alone to print its figures:

    python -m tests.faults.under_load [--db gradual_faults] [--buyers 12] [--json bench/results/faults.json]

Buyers (threads with keep-alive connections, ``bench.load.buyers.product_buyer``) quote, purchase
(with an Idempotency-Key and ``Prefer: wait=5``) and wait for the release, for the whole scenario,
on servers of their own (``tests/faults/load_stack.py``: PostgreSQL database, redis-server on a
spare port, gunicorn in production settings, a release worker with the sweepers, an ingest
worker), while the setup is hurt, one fault after the other:

1. ``worker``: the release worker killed with SIGKILL (its whole session), a new one started;
2. ``redis``: its Redis stopped for 10 s (terminated: with no persistence every queued message is
   lost), then started again on the same port;
3. ``database``: every session of the app's database terminated (``pg_terminate_backend``), 3 times
   2 s apart;
4. ``upload``: an owner uploads through the API a ~1 MB Parquet file of 2M rows x 500 characters
   (one zstd row group, ~1 GB read); its processing window lasts until the dataset is ready or
   failed (at least 10 s, at most ``upload_window_max``).

After each fault the run waits (bounded) until every purchase made so far is released or failed:
the fault's recovery time. After the last, the buyers stop and the run waits (bounded) until
nothing is in flight. Then ``tests.faults.load_checks`` reads the figures from the buyers' logs and
the stored rows, and judges:

(a) no request that charged was answered 5xx (a POST purchases/ answered 5xx whose Idempotency-Key
    is stored with a purchase);
(b) every purchase is released, or failed and refunded;
(c) every invariant holds (``market.core.invariants`` and ``bench.load.invariants``);
(d) the release p99 (purchase row to release row, stored timestamps) of the purchases in flight
    during the upload's processing window is under 5 s;

and that no server process died. Every loop is bounded; the whole run takes about 3 minutes.
Every figure is written as JSON (``--json``; in the test: the test's tmp dir, and ``FAULTS_JSON``
when set) and printed as a table.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

from bench.load.buyers import API, BuyerLog, canary, product_buyer
from bench.load.client import Client

from .load_checks import judge, print_summary
from .load_stack import Config, FaultStack, ingest_task_queue, parquet_bomb

IN_FLIGHT_BEFORE = ("SELECT count(*) FROM trading_purchase WHERE status IN ('queued', 'computing') "
                    "AND created_at < to_timestamp(%s)")


@dataclass
class Phase:
    """One step of the scenario: from ``t0`` the fault, over at ``t1``, settled (or given up) at ``t_end``."""

    name: str
    t0: float
    t1: float = 0.0
    t_end: float = 0.0
    recovered_s: float | None = None  # None: not every purchase was final within settle_max
    detail: dict = field(default_factory=dict)

    def as_dict(self, origin: float) -> dict:
        return {"name": self.name, "start_s": round(self.t0 - origin, 2), "fault_s": round(self.t1 - self.t0, 2),
                "end_s": round(self.t_end - origin, 2), "recovered_s": self.recovered_s, **self.detail}


class Run:
    """One scenario on one :class:`FaultStack`: buyers, faults, settling, draining."""

    def __init__(self, config: Config, logdir: Path):
        self.config = config
        self.stack = FaultStack(config, logdir)
        self.stop = threading.Event()
        self.phases: list[Phase] = []
        self.deaths: list[str] = []
        self.memory_peak: dict[str, float] = {}

    # -- helpers
    def _count(self, sql: str, *params) -> int:
        with self.stack.connect() as conn:
            return conn.execute(sql, params or None).fetchone()[0]

    def _watch(self) -> None:
        """Record (and stop checking) any server process that died without being told to."""
        for name, proc in list(self.stack.procs.items()):
            if proc.poll() is not None:
                self.deaths.append(f"{name} exited with {proc.returncode} (see {self.stack.logdir / name}.log)")
                self.stack.forget(name)
        for name, mb in self.stack.memory().items():
            self.memory_peak[name] = max(self.memory_peak.get(name, 0.0), mb)

    def _settle(self, cutoff: float, limit: float) -> float | None:
        """Wait until no purchase made before ``cutoff`` is in flight (at most ``limit`` s); seconds taken."""
        start = time.time()
        while time.time() - start < limit:
            self._watch()
            try:
                if self._count(IN_FLIGHT_BEFORE, cutoff) == 0:
                    return round(time.time() - start, 2)
            except Exception:  # noqa: BLE001 - the database is briefly unreachable: ask again
                pass
            time.sleep(0.25)
        return None

    def phase(self, name: str, fault) -> Phase:
        """Run ``fault(phase)``, then settle; the phase is recorded either way."""
        p = Phase(name, time.time())
        self.phases.append(p)
        print(f"[{p.t0 - self.origin:6.1f} s] {name} ...", flush=True)
        fault(p)
        p.t1 = time.time()
        p.recovered_s = self._settle(p.t1, self.config.settle_max)
        p.t_end = time.time()
        print(f"[{p.t_end - self.origin:6.1f} s] {name}: fault {p.t1 - p.t0:.1f} s, "
              + (f"recovered in {p.recovered_s:.1f} s" if p.recovered_s is not None
                 else f"NOT recovered within {self.config.settle_max:.0f} s"), flush=True)
        return p

    # -- the faults
    def kill_worker(self, p: Phase) -> None:
        p.detail["killed_pid"] = self.stack.kill_release_worker()
        name = self.stack.start_release_worker()
        self.stack.wait_worker_ready(name)
        p.detail["new_worker_ready_s"] = round(time.time() - p.t0, 2)

    def redis_outage(self, p: Phase) -> None:
        self.stack.stop_redis()
        time.sleep(self.config.redis_outage)
        self.stack.start_redis()
        p.detail["redis_down_s"] = round(time.time() - p.t0, 2)

    def terminate_backends(self, p: Phase) -> None:
        killed = []
        for i in range(self.config.backend_kills):
            if i:
                time.sleep(self.config.backend_kill_every)
            killed.append(self.stack.terminate_backends())
        p.detail["sessions_terminated"] = killed

    def upload(self, p: Phase) -> None:
        c = self.config
        d = p.detail
        d["memory_before_mb"] = self.stack.memory()
        status, body, took = upload_file(self.stack.port, self.seed["owner_token"], self.bomb, name="one gigabyte")
        d.update(http_status=status, upload_request_s=round(took, 2), answer=_short(body))
        owner = Client(self.stack.port, self.seed["owner_token"])
        final = None
        try:
            public_id = body.get("id") if status == 202 and isinstance(body, dict) else None
            while public_id and time.time() - p.t0 < c.upload_window_max:
                self._watch()
                seen = owner.request("GET", f"{API}/datasets/{public_id}/")
                if seen.status == 200 and seen.data.get("status") in ("ready", "failed"):
                    final = seen.data
                    break
                time.sleep(0.5)
        finally:
            owner.close()
        d["processing_s"] = round(time.time() - p.t0, 2)
        d["dataset_status"] = final.get("status") if final else ("still processing" if status == 202 else "refused")
        if final and final.get("status") == "failed":
            d["reasons"] = _short(final.get("failure"))
        while time.time() - p.t0 < 10:  # a window of at least 10 s, so that it holds purchases
            self._watch()
            time.sleep(0.5)
        self._watch()
        d["window"] = [p.t0, time.time()]
        d["memory_peak_mb"] = dict(self.memory_peak)

    # -- the run
    def execute(self) -> dict:
        c, stack = self.config, self.stack
        report: dict = {"config": c.as_dict(), "logs": str(stack.logdir), "ingest_task_queue": ingest_task_queue()}
        t = time.time()
        self.bomb = parquet_bomb(c.bomb_rows, c.bomb_width)
        report["bomb"] = {"bytes": self.bomb.stat().st_size, "rows": c.bomb_rows, "width": c.bomb_width}
        stack.start_redis()
        self.seed = stack.prepare(listings=c.listings, ceiling=c.ceiling, buyers=c.buyers, seed_file=stack.logdir / "seed.json")
        stack.start_gunicorn()
        stack.start_release_worker()
        if stack.start_ingest_worker() is None:
            print("no ingest worker (ingest_queues is empty)", flush=True)
        stack.wait_http()
        report["canary_s"] = round(canary(stack.port, self.seed["canary"]["token"], self.seed["listings"][0]["id"]), 2)
        report["setup_s"] = round(time.time() - t, 1)
        print(f"ready in {report['setup_s']} s: database {stack.db}, redis-server :{stack.args.redis_port}, "
              f"gunicorn :{stack.port}, release worker on {c.release_queues!r}, ingest worker on "
              f"{c.ingest_queues!r}; catalog.dataset_process is routed to {report['ingest_task_queue']!r}", flush=True)

        logs = [BuyerLog() for _ in self.seed["buyers"]]
        threads = [threading.Thread(target=self._buyer, args=(b["token"], log), daemon=True, name=f"buyer-{i}")
                   for i, (b, log) in enumerate(zip(self.seed["buyers"], logs))]
        self.origin = time.time()
        for th in threads:
            th.start()
        try:
            self.phase("warm-up", lambda p: time.sleep(c.warmup))
            self.phase("worker", self.kill_worker)
            self.phase("redis", self.redis_outage)
            self.phase("database", self.terminate_backends)
            self.phase("upload", self.upload)
        finally:
            self.stop.set()
            t_stop = time.time()
            for th in threads:
                th.join(timeout=max(1.0, c.release_timeout + 15 - (time.time() - t_stop)))
        report["buyers_stuck"] = sum(th.is_alive() for th in threads)
        drained = self._settle(time.time() + 1, c.drain_max)
        report["drain_s"] = drained
        report["load_s"] = round(time.time() - self.origin, 1)
        report["deaths"] = self.deaths
        report["memory_peak_mb"] = self.memory_peak
        report["phases"] = [p.as_dict(self.origin) for p in self.phases]
        with stack.connect() as conn:
            judge(report, conn=conn, logs=logs, seed=self.seed, phases=self.phases, origin=self.origin,
                  limit_s=c.p99_limit_s)
        return report

    def _buyer(self, token: str, log: BuyerLog) -> None:
        """``product_buyer`` until the run stops; started again when its connection gave up (bounded by stop)."""
        args = SimpleNamespace(wait=self.config.wait, poll=0.2, release_timeout=self.config.release_timeout)
        buy = functools.partial(product_buyer, port=self.stack.port, token=token, listings=self.seed["listings"],
                                step_min=float(self.config.step_min), step_max=float(self.config.step_max),
                                args=args, stop=self.stop, log=log)
        while not self.stop.is_set() and not log.exhausted:
            buy()
            self.stop.wait(0.5)


def upload_file(port: int, token: str, path: Path, *, name: str) -> tuple[int, object, float]:
    """``POST datasets/`` as multipart/form-data: (status, JSON answer, seconds)."""
    boundary = uuid.uuid4().hex
    fields = {"name": name, "budget": "10"}
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ) + (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
         f"Content-Type: application/octet-stream\r\n\r\n").encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", f"{API}/datasets/", body=body, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json",
            "Content-Type": f"multipart/form-data; boundary={boundary}"})
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = {"raw": raw[:300].decode(errors="replace")}
    return resp.status, data, time.perf_counter() - start


def _short(value, limit: int = 300):
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else text[:limit] + " ..."


def run(config: Config, logdir: Path, *, scenario=None) -> dict:
    """The whole scenario (``scenario``: another one with ``execute``, ``stop`` and ``stack``, e.g.
    ``tests.faults.several_hosts.Scenario``); every process stopped and the database dropped at the end."""
    logdir.mkdir(parents=True, exist_ok=True)
    runner = (scenario or Run)(config, logdir)
    started = time.time()
    try:
        report = runner.execute()
    finally:
        runner.stop.set()
        runner.stack.stop()
        runner.stack.cleanup()
    report["wall_s"] = round(time.time() - started, 1)
    return report


def write_json(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")


def config_from_database_url(url: str, **overrides) -> Config:
    """A :class:`Config` on the server of ``url``, in a database named after its own (``<name>_under_load``)."""
    u = urlparse(url)
    return Config(db=f"{u.path.lstrip('/') or 'gradual'}_under_load", pg_host=u.hostname or "127.0.0.1",
                  pg_port=u.port or 5432, pg_user=u.username or "postgres", **overrides)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.faults.under_load", description=__doc__.splitlines()[0])
    p.add_argument("--db", help="the PostgreSQL database to use (dropped and created; default: DATABASE_URL's "
                                "name + _under_load)")
    p.add_argument("--buyers", type=int, default=Config.buyers)
    p.add_argument("--release-queues", default=None, help="queues of the release worker (default celery)")
    p.add_argument("--ingest-queues", default=None, help="queues of the ingest worker (default ingest; '' none)")
    p.add_argument("--keep-db", action="store_true", help="keep the database after the run")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here (e.g. bench/results/faults.json)")
    args = p.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
    import django

    django.setup()
    overrides = {"buyers": args.buyers, "keep_db": args.keep_db}
    if args.release_queues is not None:
        overrides["release_queues"] = args.release_queues
    if args.ingest_queues is not None:
        overrides["ingest_queues"] = args.ingest_queues
    config = config_from_database_url(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gradual"),
                                      **overrides)
    if args.db:
        config.db = args.db
    if config.db in ("postgres", "template0", "template1", urlparse(os.environ.get("DATABASE_URL", "")).path.lstrip("/")):
        p.error(f"--db {config.db} is not a throw-away database")
    logdir = Path(tempfile.mkdtemp(prefix="gradual-faults-"))
    report = run(config, logdir)
    write_json(report, logdir / "faults.json")
    if args.json:
        write_json(report, args.json)
    print_summary(report)
    return 0 if all(c["ok"] for c in report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
