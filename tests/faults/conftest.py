"""Fault tests run against the real PostgreSQL, Redis and worker processes."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.fixtures.market import STATISTICS, api, buyer, fund, listing, make_csv, make_listing, owner, users  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
needs_services = pytest.mark.skipif(
    connection.vendor != "postgresql" or not settings.REDIS_URL,
    reason="needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL) and worker processes",
)


def database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def broker(transactional_db):
    """A clean queue on the test's Redis: no message from another test is consumed."""
    import redis

    from market.celery import app

    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in client.scan_iter("celery*"):
        client.delete(key)
    client.delete("ingest", "webhooks", "unacked", "unacked_index", "unacked_mutex")  # the other queues too
    app.conf.task_always_eager = False
    yield client


@pytest.fixture
def workers(broker):
    """Start worker processes (with an optional fault); all are killed at the end. A worker serves
    the release queue unless told otherwise: ``start(queues="ingest")`` is an ingest worker (uploaded
    datasets), as in production each queue on its own worker (docs/operations.md). ``args`` go to
    ``celery worker`` (e.g. ``--pool=prefork``), keyword arguments to its environment."""
    started = []

    def start(fault: str = "", queues: str = "celery", args=(), **environ: str) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_VISIBILITY_TIMEOUT": "3",  # redeliver an unacknowledged task after 3 s,
            "CELERY_UNACKED_RESTORE_INTERVAL": "1",  # looking for such tasks every second
            "CELERY_UNACKED_RESTORE_THROTTLE": "1",
            "FAULT": fault,
            **environ,
        }
        log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"fault-worker-{len(started)}.log", "w")
        command = [sys.executable, "-m", "tests.faults.worker", f"--queues={queues}",
                   f"--hostname={queues.replace(',', '-')}-{len(started)}@test", *args]
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def own_redis(settings):
    """A redis-server of this test's own (``tests.faults.redis_server``), used as the cache and the
    Celery broker while the test runs, and by the workers it starts: the test may kill it, hang it
    and start it again. The cache's breaker (``market.core.cache``) tries Redis again after 1 s."""
    from market.celery import app

    from .redis_server import RedisServer

    if not RedisServer.available():
        pytest.skip("needs redis-server on the PATH")
    before = app.conf.broker_url  # read (and the app configured) before the settings change
    server = RedisServer()
    server.start()
    cache = dict(settings.CACHES["default"], LOCATION=server.url)
    if "COOLDOWN" in cache.get("OPTIONS", {}):
        cache["OPTIONS"] = dict(cache["OPTIONS"], COOLDOWN=1.0)
    settings.CACHES = {"default": cache}
    settings.REDIS_URL = settings.CELERY_BROKER_URL = server.url

    def use(url):
        app.conf.broker_url = url
        app._pool = app.amqp._producer_pool = None  # tasks are published to ``url`` from now on

    use(server.url)
    try:
        yield server
    finally:
        server.kill()  # a hung (stopped) server too
        use(before)
