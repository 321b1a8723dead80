"""The servers of one run: a PostgreSQL database, Redis, gunicorn and Celery. Stops all it started.

:class:`ProductServices` serves ``market.wsgi`` with a Celery worker beside
it; :class:`BaselineServices` serves the baseline project
(``bench/load/baseline``) with its own Celery worker. Both run gunicorn through :meth:`Services.gunicorn_command`,
so the two are served by the same worker class, workers, threads and
timeouts, with ``DJANGO_ENV=production``, and Celery through :meth:`Services.celery_command`.
"""

from __future__ import annotations

import ctypes
import http.client
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from . import PYTHON, ROOT, VENV_BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """In a child before exec: get SIGTERM if the load generator dies (even by SIGKILL)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _child_setup(nice: int):
    def setup() -> None:
        die_with_parent()
        if nice:
            os.nice(nice)
    return setup


class Services:
    """What every run has: its database, gunicorn, and the processes it started."""

    #: set by the subclasses
    settings = ""
    wsgi = ""
    health_path = ""
    celery_app = ""
    queues = ""

    def __init__(self, args, logdir: Path, *, db: str):
        self.args = args
        # the product and the baseline share --redis-db: their runs never overlap, and it is flushed before each
        self.redis_url = f"redis://{args.redis_host}:{args.redis_port}/{args.redis_db}"
        self.logdir = logdir
        self.db = db
        self.port = args.port or free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.db_url = f"postgres://{args.pg_user}@{args.pg_host}:{args.pg_port}/{db}"
        # one key for every process of the run: the product derives its encryption key from it, so
        # what the seed step seals the servers must open
        self.secret_key = uuid.uuid4().hex + uuid.uuid4().hex

    def env(self) -> dict:
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE=self.settings,
            DJANGO_ENV="production",
            DJANGO_SECRET_KEY=self.secret_key,
            DJANGO_ALLOWED_HOSTS="127.0.0.1",
            DATABASE_URL=self.db_url,
            REDIS_URL=self.redis_url,
            LOG_LEVEL=self.args.log_level,
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
            # market/gunicorn_conf.py and the settings (WAIT_MAX_PER_PROCESS: the threads less an eighth) read these
            GUNICORN_WORKERS=str(self.args.workers),
            GUNICORN_THREADS=str(self.args.threads),
        )
        return env

    # -- the database
    def admin_conn(self):
        import psycopg

        return psycopg.connect(
            host=self.args.pg_host, port=self.args.pg_port, user=self.args.pg_user, dbname="postgres", autocommit=True
        )

    def connect(self):
        """A connection to this run's database (autocommit), for the meters and the checks."""
        import psycopg

        return psycopg.connect(self.db_url.replace("postgres://", "postgresql://"), autocommit=True)

    def reset_database(self) -> None:
        from psycopg import sql

        name = sql.Identifier(self.db)
        with self.admin_conn() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
            if self.args.synchronous_commit != "on":
                conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}").format(
                    name, sql.Literal(self.args.synchronous_commit)))

    def drop_database(self) -> None:
        from psycopg import sql

        with self.admin_conn() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.db)))

    def flush_redis(self) -> None:
        import redis

        redis.Redis.from_url(self.redis_url).flushdb()

    def cleanup(self) -> None:
        """After the run: Redis flushed, the database dropped (unless ``--keep-db``)."""
        try:
            self.flush_redis()
        except Exception:
            pass
        if not self.args.keep_db:
            try:
                self.drop_database()
            except Exception as exc:
                print(f"could not drop database {self.db}: {exc}", flush=True)

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

    def gunicorn_command(self, config: Path | None = None) -> list[str]:
        """The one gunicorn command both the product and the baseline are served with: production's
        settings (``market/gunicorn_conf.py``, or ``config``, which starts from them), the bench's own
        bind, workers, threads and timeouts on the command line."""
        a = self.args
        cmd = [
            str(VENV_BIN / "gunicorn"), self.wsgi, "--config", str(config or ROOT / "market" / "gunicorn_conf.py"),
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(a.workers), "--threads", str(a.threads), "--worker-class", "gthread",
            "--keep-alive", "30", "--backlog", "2048", "--timeout", "120", "--graceful-timeout", "20",
            "--log-level", "warning", "--chdir", str(ROOT),
        ]
        return cmd

    def start_gunicorn(self) -> None:
        self.start("gunicorn", self.gunicorn_command(), nice=self.args.nice_web)

    def start_celery(self) -> None:
        self.start("celery", self.celery_command(), nice=self.args.nice_celery)

    def celery_command(self) -> list[str]:
        """The release worker, the same pool, concurrency and options for the product and the baseline."""
        a = self.args
        return [
            str(VENV_BIN / "celery"), "-A", self.celery_app, "worker",
            "--pool", a.pool, "--concurrency", str(a.celery), "--queues", self.queues,
            "--loglevel", a.log_level, "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--hostname", f"load-{os.getpid()}@%h",
        ]

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
                conn.request("GET", self.health_path)
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


class ProductServices(Services):
    """The marketplace: its database, its Redis database, gunicorn and a Celery worker."""

    settings = "market.settings"
    wsgi = "market.wsgi:application"
    health_path = "/api/v1/listings/?page_size=1"
    celery_app = "market.celery:app"
    queues = "celery"  # the default queue only, as in production (docs/operations.md)

    def __init__(self, args, logdir: Path):
        super().__init__(args, logdir, db=args.db)
        self.profile_dir = logdir / "profile"
        self.profile_dir.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict:
        rate = self.args.throttle
        env = super().env()
        env.update(
            DJANGO_SECURE_SSL_REDIRECT="0",  # plain HTTP on 127.0.0.1: no TLS proxy in front here
            THROTTLE_USER=rate,
            THROTTLE_ANON=rate,
            THROTTLE_PURCHASES=rate,
            THROTTLE_AUTH=rate,
            DEMO_MODE="0",
        )
        if self.args.profile:
            env["LOAD_PROFILE_DIR"] = str(self.profile_dir)
            env["LOAD_PROFILE_TIMER"] = self.args.profile_timer
        return env


    def prepare(self, *, listings: int, ceiling: str, buyers: int, seed_file: Path) -> dict:
        """A fresh database, migrated and seeded (``bench.load.seed``); Redis flushed."""
        import json

        a = self.args
        self.reset_database()
        self.flush_redis()
        self.run("migrate", [str(PYTHON), "manage.py", "migrate", "--noinput"])
        self.run("seed", [str(PYTHON), "-m", "bench.load.seed", "--buyers", str(buyers), "--listings",
                          str(listings), "--ceiling", str(ceiling), "--price", str(a.price), "--out", str(seed_file)])
        self.flush_redis()  # nothing the seed step sent to the broker is left for the worker
        return json.loads(seed_file.read_text())

    def start_gunicorn(self) -> None:
        config = ROOT / "bench" / "load" / "gunicorn_profile.py" if self.args.profile else None
        self.start("gunicorn", self.gunicorn_command(config), nice=self.args.nice_web)

    def celery_command(self) -> list[str]:
        return super().celery_command() + (["--include", "bench.load.celery_profile"] if self.args.profile else [])


    def start_ingest(self) -> None:
        """The ingest worker (uploaded datasets), as in production: the ``ingest`` queue, one
        dataset at a time, replaced once it outgrows its memory budget. For runs that upload."""
        budget_mb = int(self.env().get("INGEST_MEMORY_BUDGET_MB", "512"))
        cmd = [
            str(VENV_BIN / "celery"), "-A", "market.celery:app", "worker",
            "--pool", "prefork", "--concurrency", "1", "--queues", "ingest",
            "--max-memory-per-child", str(budget_mb * 1024),
            "--loglevel", self.args.log_level, "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--hostname", f"ingest-{os.getpid()}@%h",
        ]
        self.start("ingest", cmd, nice=self.args.nice_celery)


class BaselineServices(Services):
    """The baseline project (``bench/load/baseline``): its database, gunicorn and its Celery worker
    (queue ``releases``) on the same Redis database."""

    settings = "bench.load.baseline.settings"
    wsgi = "bench.load.baseline.wsgi:application"
    health_path = "/ping/"
    celery_app = "bench.load.baseline.celery_app:app"
    queues = "releases"

    def __init__(self, args, logdir: Path):
        super().__init__(args, logdir, db=args.baseline_db)

    def prepare(self, *, listings: int, ceiling: str, buyers: int, seed_file: Path) -> dict:
        """A fresh database with the baseline's tables, its listings and buyers; Redis flushed."""
        import json

        a = self.args
        self.reset_database()
        self.flush_redis()
        self.run("seed", [str(PYTHON), "-m", "bench.load.baseline.seed", "--buyers", str(buyers), "--listings",
                          str(listings), "--ceiling", str(ceiling), "--price", str(a.price), "--out", str(seed_file)])
        return json.loads(seed_file.read_text())
