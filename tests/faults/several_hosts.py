"""The marketplace spread over two hosts (issue 35, item 5); also runnable alone to print its figures:

    python -m tests.faults.several_hosts [--db gradual_hosts] [--json FILE]

Two "hosts" share only PostgreSQL (a database of the run's own), Redis (a redis-server of the run's
own) and an S3-compatible object store (moto on loopback, started by the run): each runs a web
server (gunicorn in production settings) and a release worker, each from its own working directory
with its own temporary and media folders, so nothing one host writes is on the other's disk. Host B
also runs the ingest worker (datasets, and listings prepared over large tables) and the beat (the
sweepers). Every dataset's sealed files are in the object store.

The scenario:

1. buyers (threads, ``bench.load.buyers.product_buyer``) buy on both web servers, half on each;
2. host A's release worker is killed with SIGKILL (its whole session) and not restarted: host A has
   lost its worker; its tasks are delivered again to host B's (``CELERY_VISIBILITY_TIMEOUT``) or swept;
3. the owner lists a new statistic through host A's web server: a large table here (the hosts'
   ``LISTING_PREPARE_INLINE_ROWS`` is 0), so the listing is made ``preparing`` and host B's ingest
   worker computes it, reading the sealed file from the object store; the owner sees it ready through
   host B's web server, and a buyer buys it there;
4. the buyers stop; the run waits (bounded) until nothing is in flight.

Then ``tests.faults.load_checks`` judges: no request that charged was answered 5xx; every purchase is
released once (or failed and refunded); every invariant holds; no server died unasked. And this
module: both web servers sold, host B released after host A's worker died, the new listing was
prepared on host B and sold, and neither host's folders hold a dataset's file (they are all in the
object store). About a minute.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from bench.load import PYTHON, ROOT
from bench.load.buyers import API, BuyerLog, product_buyer
from bench.load.services import _child_setup, free_port

from .load_checks import _charged, _final, _invariants
from . import under_load
from .load_stack import Config, FaultStack
from .under_load import IN_FLIGHT_BEFORE, config_from_database_url, write_json

BUCKET = "gradual"
HOSTS = ("a", "b")


class HostsStack(FaultStack):
    """:class:`FaultStack`'s servers as two hosts: their own folders, one object store for both."""

    def __init__(self, config: Config, logdir: Path):
        super().__init__(config, logdir)
        self.folders = {h: logdir / f"host-{h}" for h in HOSTS}
        self.ports = {h: free_port() for h in HOSTS}
        self.store = None  # the object store's endpoint, once started
        self._moto = None

    # -- the object store: moto's S3 on loopback, in this process
    def start_store(self) -> str:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per request
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port())
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.store = f"http://{host}:{port}"
        self.s3().create_bucket(Bucket=BUCKET)
        return self.store

    def s3(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.store, region_name="us-east-1", aws_access_key_id="test",
                            aws_secret_access_key="test")

    def stored_keys(self) -> list[str]:
        found = self.s3().list_objects_v2(Bucket=BUCKET)
        return [item["Key"] for item in found.get("Contents", [])]

    def stop(self) -> None:
        super().stop()
        if self._moto is not None:
            self._moto.stop()

    def env(self) -> dict:
        env = super().env()
        env.update(GRADUAL_STORAGE_URL=f"s3://{BUCKET}/datasets", AWS_S3_ENDPOINT_URL=self.store or "",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_S3_REGION_NAME="us-east-1")
        env.pop("MEDIA_ROOT", None)  # the object store holds the files: no shared media folder
        return env

    def host_env(self, host: str) -> dict:
        """A host's processes: their own home, temporary, media and broker folders; large tables listed by a task."""
        folder = self.folders[host]
        env = self.env()
        for name in ("tmp", "media", "broker", "home"):
            (folder / name).mkdir(parents=True, exist_ok=True)
        env.update(HOME=str(folder / "home"), TMPDIR=str(folder / "tmp"), MEDIA_ROOT=str(folder / "media"),
                   BROKER_FOLDER=str(folder / "broker"), LISTING_PREPARE_INLINE_ROWS="0")
        return env

    def start_on(self, host: str, name: str, cmd: list[str]) -> subprocess.Popen:
        """``cmd`` as one of ``host``'s processes: started in its folder, with its environment."""
        out = open(self.logdir / f"{name}.log", "wb")
        proc = subprocess.Popen(cmd, cwd=self.folders[host], env=self.host_env(host), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_child_setup(0))
        out.close()
        self.procs[name] = proc
        return proc

    def start_web(self, host: str) -> None:
        self.port = self.ports[host]
        cmd = self.gunicorn_command(ROOT / "market" / "gunicorn_conf.py")
        cmd[cmd.index("--chdir") + 1] = str(self.folders[host])  # the app is found on PYTHONPATH
        self.start_on(host, f"web-{host}", cmd)
        self.wait_http()

    def start_worker(self, host: str, kind: str, queues: str, *extra: str) -> str:
        name = f"{kind}-{host}"
        self.start_on(host, name, [str(PYTHON), "-m", "tests.faults.worker", "--pool=prefork", "--concurrency=2",
                                   f"--queues={queues}", f"--hostname={name}@%h", "--without-heartbeat", *extra])
        return name

    def kill(self, name: str) -> int:
        """SIGKILL to the process's whole session (a worker's pool too): no clean-up at all."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        self.forget(name)
        return proc.pid


def _request(port: int, token: str, method: str, path: str, body=None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, f"{API}/{path}", body=None if body is None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    return resp.status, (json.loads(raw) if raw else {})


class Scenario:
    def __init__(self, config: Config, logdir: Path, *, load_s: float = 20, kill_after: float = 5):
        self.config, self.load_s, self.kill_after = config, load_s, kill_after
        self.stack = HostsStack(config, logdir)
        self.stop = threading.Event()
        self.report_new: dict = {}

    def _count(self, sql: str, *params) -> int:
        with self.stack.connect() as conn:
            return conn.execute(sql, params or None).fetchone()[0]

    def _settle(self, limit: float) -> float | None:
        start = time.time()
        while time.time() - start < limit:
            if self._count(IN_FLIGHT_BEFORE, time.time() + 1) == 0:
                return round(time.time() - start, 2)
            time.sleep(0.25)
        return None

    def _buyer(self, port: int, token: str, log: BuyerLog) -> None:
        args = SimpleNamespace(wait=self.config.wait, poll=0.2, release_timeout=self.config.release_timeout)
        buy = functools.partial(product_buyer, port=port, token=token, listings=self.seed["listings"],
                                step_min=float(self.config.step_min), step_max=float(self.config.step_max),
                                args=args, stop=self.stop, log=log)
        while not self.stop.is_set() and not log.exhausted:
            buy()
            self.stop.wait(0.5)

    def _new_listing(self, report: dict) -> None:
        """The owner lists through host A; host B's ingest worker prepares it; a buyer buys it on host B."""
        stack, owner = self.stack, self.seed["owner_token"]
        body = {"dataset": self.seed["dataset"], "title": "Visits by age, listed on host A",
                "statistics": [{"kind": "count"}, {"kind": "histogram", "column": "age", "bins": [0, 25, 50, 75, 100]}],
                "ceiling": "5", "price_per_epsilon": "1.00"}
        status, made = _request(stack.ports["a"], owner, "POST", "listings/", body)
        report["new_listing"] = self.report_new = {"created": status, "status": made.get("status")}
        if status != 202:
            report["new_listing"]["answer"] = made
            return
        deadline, shown = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            _, shown = _request(stack.ports["b"], owner, "GET", f"listings/{made['id']}/")
            if shown.get("status") != "preparing":
                break
            time.sleep(0.5)
        report["new_listing"].update(ready=shown.get("status"), failure=shown.get("failure"), id=made["id"])
        buyer = self.seed["canary"]["token"]
        status, bought = _request(stack.ports["b"], buyer, "POST", "purchases/", {"listing": made["id"], "epsilon": "1"})
        report["new_listing"]["purchase"] = {"status": status, "id": bought.get("id")}

    def execute(self) -> dict:
        c, stack = self.config, self.stack
        report: dict = {"config": c.as_dict(), "logs": str(stack.logdir)}
        stack.start_redis()
        stack.start_store()
        self.seed = stack.prepare(listings=c.listings, ceiling=c.ceiling, buyers=c.buyers,
                                  seed_file=stack.logdir / "seed.json")
        for host in HOSTS:
            stack.start_web(host)
        stack.start_worker("a", "release", "celery")
        stack.start_worker("b", "release", "celery", "--beat", f"--schedule={stack.folders['b'] / 'beat'}")
        stack.start_worker("b", "ingest", "ingest")
        for name in ("release-a", "release-b", "ingest-b"):
            stack.wait_worker_ready(name)

        buyers = self.seed["buyers"]
        logs = [BuyerLog() for _ in buyers]
        ports = [stack.ports[HOSTS[i % 2]] for i in range(len(buyers))]
        threads = [threading.Thread(target=self._buyer, args=(port, b["token"], log), daemon=True)
                   for port, b, log in zip(ports, buyers, logs)]
        origin = time.time()
        for th in threads:
            th.start()
        try:
            time.sleep(self.kill_after)
            report["killed_at_s"] = round(time.time() - origin, 2)
            report["killed_pid"] = stack.kill("release-a")
            self.killed_at = time.time()
            self._new_listing(report)
            time.sleep(max(0.0, self.load_s - (time.time() - origin)))
        finally:
            self.stop.set()
            for th in threads:
                th.join(timeout=c.release_timeout + 15)
        report["drain_s"] = self._settle(c.drain_max)
        report["deaths"] = [f"{name} exited with {proc.returncode}" for name, proc in stack.procs.items()
                            if proc.poll() is not None]
        with stack.connect() as conn:
            self.judge(report, conn, logs, ports)
        return report

    def _seed_with_new(self) -> dict:
        """The seed with the listing made during the run (its linear price), for the price invariant."""
        new = self.report_new.get("id")
        extra = [{"id": new, "price_curve": {"kind": "linear", "c": "1.00"}}] if new is not None else []
        return {**self.seed, "listings": [*self.seed["listings"], *extra]}

    def judge(self, report: dict, conn, logs, ports) -> None:
        from .load_checks import _answers

        answers = _answers(logs)
        checks = {
            "a. no 5xx answered to a request that charged": _charged(report, conn, answers, [], self.killed_at),
            "b. every purchase released once, or failed and refunded": _final(report, conn),
            "c. every invariant holds": _invariants(report, conn, logs, self._seed_with_new()),
        }
        sold = {}
        for port, log in zip(ports, logs):
            sold[port] = sold.get(port, 0) + sum(1 for r in log.posts if 200 <= r[2] < 300)
        report["sold_by_web"] = {h: sold.get(self.stack.ports[h], 0) for h in HOSTS}
        after = conn.execute("SELECT count(*) FROM releases_release WHERE created_at > to_timestamp(%s)",
                             (self.killed_at + 1,)).fetchone()[0]
        report["released_after_the_kill"] = after
        checks["d. both web servers sold, and host B released after host A's worker died"] = {
            "ok": all(report["sold_by_web"].values()) and after > 0,
            "detail": f"purchases accepted by web: {report['sold_by_web']}; released after the kill: {after}"}
        new = report.get("new_listing", {})
        checks["e. a listing made on host A was prepared on host B and sold there"] = {
            "ok": new.get("created") == 202 and new.get("ready") == "ready" and new.get("purchase", {}).get("status") in (201, 202),
            "detail": json.dumps(new)}
        # a host keeps no dataset's file: its media folder stays empty, and no decrypted copy is left behind
        local = [str(p.relative_to(self.stack.logdir)) for h in HOSTS for p in self.stack.folders[h].rglob("*")
                 if p.is_file() and ("media" in p.relative_to(self.stack.folders[h]).parts or p.suffix == ".parquet")]
        stored = self.stack.stored_keys()
        report["object_store_keys"] = len(stored)
        checks["f. every dataset file is in the object store, none on a host's disk"] = {
            "ok": not local and len(stored) > 0,
            "detail": f"{len(stored)} objects in the store; files in the hosts' media folders: {local or 'none'}"}
        deaths = report["deaths"]
        checks["g. no server process died unasked"] = {"ok": not deaths, "detail": "; ".join(deaths) or "none died"}
        report["checks"] = checks


def run(config: Config, logdir: Path) -> dict:
    """The scenario on its own servers, stopped and dropped at the end (``under_load.run``)."""
    return under_load.run(config, logdir, scenario=Scenario)


def hosts_config(url: str) -> Config:
    """The scenario's knobs on the server of ``url`` (a database named ``<name>_hosts``)."""
    base = config_from_database_url(url, buyers=8, listings=3, ceiling="20")
    return Config(**{**base.as_dict(), "db": base.db.replace("_under_load", "_hosts")})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-url", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gradual"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = run(hosts_config(args.db_url), Path(tempfile.mkdtemp(prefix="hosts-")))
    if args.json:
        write_json(report, args.json)
    for name, check in report["checks"].items():
        print(f"{'ok ' if check['ok'] else 'FAIL'} {name}: {check['detail']}")
    return 0 if all(c["ok"] for c in report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
