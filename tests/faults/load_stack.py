"""The servers of the fault test under load (``tests/faults/under_load.py``), and its faults.

Everything on 127.0.0.1 and of its own: a PostgreSQL database (dropped and
created, migrated and seeded through the services by ``bench.load.seed``), a
``redis-server`` on a spare port (no persistence: stopping it loses every
queued message, as a crash does), gunicorn in production settings (gthread),
a release worker (prefork, with the beat's sweepers) and an ingest worker.
Built on :class:`bench.load.services.ProductServices`; :meth:`FaultStack.stop`
stops every process it started (each in its own session, SIGKILL last), and
every child gets SIGTERM if the process that started it dies.

The queues are parameters (:class:`Config`): the release worker serves
``release_queues`` (``celery``; ``celery,ingest`` puts ingestion back beside the
releases), the ingest worker ``ingest_queues`` (``ingest``; empty: none). Where
ingestion goes is the product's routing (``CELERY_TASK_ROUTES``), reported as
``ingest_task_queue``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

from bench.load import PYTHON, ROOT
from bench.load.meters import _tree
from bench.load.services import ProductServices, free_port


@dataclass
class Config:
    """Every knob of a run; the defaults are the CI run's (about 3 minutes on two cores)."""

    db: str = "gradual_under_load"
    pg_host: str = "127.0.0.1"
    pg_port: int = 5432
    pg_user: str = "postgres"
    buyers: int = 12
    listings: int = 5
    ceiling: str = "50"  # room for hundreds of steps per buyer and listing: nobody runs out
    price: str = "2.00"
    step_min: str = "0.01"
    step_max: str = "0.2"
    wait: float = 5  # Prefer: wait=5 on the POST and the GETs
    web_workers: int = 2
    web_threads: int = 16
    release_queues: str = field(default_factory=lambda: os.environ.get("FAULTS_RELEASE_QUEUES", "celery"))
    ingest_queues: str = field(default_factory=lambda: os.environ.get("FAULTS_INGEST_QUEUES", "ingest"))
    release_concurrency: int = 2  # as scripts/run.sh
    ingest_concurrency: int = 1
    sweep_after: int = 5  # RELEASE_SWEEP_AFTER
    sweep_every: float = 3  # the beat's sweepers
    visibility_timeout: int = 10  # CELERY_VISIBILITY_TIMEOUT: a dead worker's task is delivered again after this
    warmup: float = 5
    redis_outage: float = 10
    backend_kills: int = 3
    backend_kill_every: float = 2
    bomb_rows: int = 2_000_000
    bomb_width: int = 500
    upload_window_max: float = 60  # the upload's processing window is closed after this at the latest
    settle_max: float = 20  # after each fault: until every purchase made so far is final, at most this long
    drain_max: float = 30  # after the load: until nothing is in flight, at most this long
    release_timeout: float = 20  # a buyer stops waiting for one release after this
    p99_limit_s: float = 5.0
    keep_db: bool = False  # keep the database after the run (to look at it)

    def as_dict(self) -> dict:
        return asdict(self)


def ingest_task_queue() -> str:
    """The queue the product routes ``catalog.dataset_process`` to (``celery`` unless routed elsewhere)."""
    from market.celery import app

    route = app.amqp.router.route({}, "catalog.dataset_process", args=(), kwargs={})
    queue = route.get("queue")
    return getattr(queue, "name", None) or str(queue or app.conf.task_default_queue)


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (from /proc)."""
    total = 0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return round(total / 1024, 1)


class FaultStack(ProductServices):
    """The product's servers with its own redis-server, a release worker and an ingest worker."""

    def __init__(self, config: Config, logdir: Path):
        self.config = config
        args = SimpleNamespace(
            port=0, pg_host=config.pg_host, pg_port=config.pg_port, pg_user=config.pg_user, db=config.db,
            log_level="WARNING", synchronous_commit="on", keep_db=config.keep_db, workers=config.web_workers,
            threads=config.web_threads, nice_web=0, nice_celery=0, throttle="1000000/minute", profile=False,
            profile_timer="cpu", buyers=config.buyers, price=config.price, redis_host="127.0.0.1",
            redis_port=free_port(), redis_db=0, pool="prefork", celery=config.release_concurrency,
        )
        super().__init__(args, logdir)
        self.media = Path(tempfile.mkdtemp(prefix="media-", dir=logdir))
        self.release_name = ""
        self.started = {"release": 0, "ingest": 0, "redis": 0}

    def start_gunicorn(self) -> None:
        conf = ROOT / "market" / "gunicorn_conf.py"  # the product's own gunicorn settings, where it has them
        self.start("gunicorn", self.gunicorn_command(conf if conf.exists() else None))

    def env(self) -> dict:
        c = self.config
        env = super().env()
        env.update(
            CELERY_VISIBILITY_TIMEOUT=str(c.visibility_timeout),
            CELERY_UNACKED_RESTORE_INTERVAL="1",
            CELERY_UNACKED_RESTORE_THROTTLE="1",
            RELEASE_SWEEP_AFTER=str(c.sweep_after),
            SWEEP_EVERY=str(c.sweep_every),
            MEDIA_ROOT=str(self.media),
        )
        env.pop("FAULT", None)
        return env

    def _name(self, kind: str) -> str:
        self.started[kind] += 1
        return f"{kind}-{self.started[kind]}"

    def forget(self, name: str) -> None:
        """A process we stopped on purpose: no longer checked for being alive."""
        self.procs.pop(name, None)

    # -- Redis: a server of our own, stopped and started on the same port
    def start_redis(self, timeout: float = 10) -> None:
        import redis

        binary = shutil.which("redis-server")
        if not binary:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.start(self._name("redis"), [binary, "--port", str(self.args.redis_port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.redis_url, socket_timeout=1).ping():
                    return
            except redis.RedisError:
                time.sleep(0.1)
        raise RuntimeError(f"redis-server did not answer on port {self.args.redis_port} within {timeout:.0f} s")

    def stop_redis(self) -> None:
        name = f"redis-{self.started['redis']}"
        proc = self.procs[name]
        proc.terminate()  # SIGTERM: with --save '' nothing is kept, as after a crash
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        self.forget(name)

    # -- Celery
    def _worker(self, kind: str, queues: str, concurrency: int, *extra: str) -> str:
        name = self._name(kind)
        self.start(name, [str(PYTHON), "-m", "tests.faults.worker", "--pool=prefork", f"--concurrency={concurrency}",
                          f"--queues={queues}", f"--hostname={name}@%h", "--without-heartbeat", *extra])
        return name

    def start_release_worker(self) -> str:
        """The release worker, with the beat (the sweepers); a fresh schedule file each time."""
        c = self.config
        schedule = self.logdir / f"beat-{self.started['release'] + 1}"
        self.release_name = self._worker("release", c.release_queues, c.release_concurrency, "--beat",
                                         f"--schedule={schedule}")
        return self.release_name

    def start_ingest_worker(self) -> str | None:
        c = self.config
        if not c.ingest_queues:
            return None
        # as scripts/run.sh starts it: replaced after a task that left it above its memory budget (KiB)
        from django.conf import settings

        return self._worker("ingest", c.ingest_queues, c.ingest_concurrency,
                            f"--max-memory-per-child={settings.INGEST_MEMORY_BUDGET_MB * 1024}")

    def kill_release_worker(self) -> int:
        """SIGKILL to the release worker's whole session (its pool and its beat): no clean-up at all."""
        proc = self.procs[self.release_name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        self.forget(self.release_name)
        return proc.pid

    def wait_worker_ready(self, name: str, timeout: float = 30) -> None:
        """Until the worker's log says it is ready (bounded)."""
        log = self.logdir / f"{name}.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if log.exists() and " ready." in log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name} was not ready within {timeout:.0f} s; see {log}")

    # -- PostgreSQL
    def terminate_backends(self) -> int:
        """``pg_terminate_backend`` on every session of the app's database (from an admin connection)."""
        with self.admin_conn() as conn:
            return conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()", (self.db,)).fetchone()[0]

    def memory(self) -> dict:
        """Resident MB of each running worker (with its pool)."""
        return {name: rss_mb(proc.pid) for name, proc in self.procs.items()
                if name.startswith(("release", "ingest")) and proc.poll() is None}


def parquet_bomb(rows: int, width: int) -> Path:
    """A Parquet file of ``rows`` x ``width`` characters in one zstd row group (plain encoding): about
    1 MB on disk, ``rows * width`` bytes read. Made once (in a subprocess: the 1 GB stays out of
    this process) into the temp dir, and reused."""
    folder = Path(tempfile.gettempdir()) / "gradual-faults"
    folder.mkdir(exist_ok=True)
    path = folder / f"bomb-{rows}x{width}.parquet"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([sys.executable, "-c", _BOMB, str(partial), str(rows), str(width)], check=True, timeout=120)
        partial.replace(path)
    return path


_BOMB = """
import sys
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
path, rows, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = pa.array(["x" * width]).take(pa.array(np.zeros(rows, dtype=np.int32)))
pq.write_table(pa.table({"text": text}), path, compression="zstd", use_dictionary=False, row_group_size=rows,
               store_schema=False)
"""
