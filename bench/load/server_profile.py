"""Where the time goes, measured inside the servers of ``bench.load --profile``.

Loaded only in a profiled run: the gunicorn config ``bench/load/gunicorn_profile.py``
wraps each worker's WSGI application in :class:`WsgiProfiler`, and the Celery
worker imports ``bench.load.celery_profile`` (``--include``), which profiles each task
with :func:`install_celery`. Each process keeps

* a ``cProfile`` profile of the requests or tasks it served, one profiler
  per thread, timed by the thread's CPU time (``LOAD_PROFILE_TIMER=cpu``,
  the default: where the CPU goes) or by the wall clock (``wall``: time
  spent waiting on PostgreSQL, Redis or the GIL shows up in the functions
  that wait);
* per endpoint (method and path with ids replaced by ``{id}``) or task: the
  number served, their wall time and CPU time, the SQL statements run and
  their wall time;

and writes them to ``$LOAD_PROFILE_DIR/<role>-<pid>.prof`` and ``.json`` when
it exits (and every ``DUMP_EVERY`` requests, in case it is killed).
``bench.load.profile_figures`` merges the files. Only requests and tasks that start while the
file ``$LOAD_PROFILE_DIR/on`` exists are recorded: ``bench.load`` creates it
for the measured window, so start-up (imports) and warm-up stay out.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import re
import threading
import time
from pathlib import Path

_ID = re.compile(r"/(\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?=/)")
DUMP_EVERY = 5000
_switch = {"checked": 0.0, "on": False}


def recording() -> bool:
    """Whether ``$LOAD_PROFILE_DIR/on`` exists (looked at most every 0.2 s)."""
    now = time.monotonic()
    if now - _switch["checked"] > 0.2:
        folder = os.environ.get("LOAD_PROFILE_DIR")
        _switch["on"] = bool(folder) and os.path.exists(os.path.join(folder, "on"))
        _switch["checked"] = now
    return _switch["on"]


class _Recorder:
    """Per-process figures: one cProfile profiler per thread, and per-key totals."""

    def __init__(self, role: str):
        self.role = role
        self.lock = threading.Lock()
        self.local = threading.local()
        self.profilers: list[cProfile.Profile] = []
        self.keys: dict[str, list[float]] = {}  # key -> [count, wall s, sql statements, sql s, cpu s]
        self.served = 0
        self.busy: set[int] = set()  # profilers enabled right now (never read from another thread)

    def profiler(self) -> cProfile.Profile:
        prof = getattr(self.local, "prof", None)
        if prof is None:
            # cpu: the thread's own CPU time (what a 2-core machine runs out of); wall: also the waits
            timer = time.thread_time if os.environ.get("LOAD_PROFILE_TIMER", "cpu") == "cpu" else time.perf_counter
            prof = self.local.prof = cProfile.Profile(timer)
            with self.lock:
                self.profilers.append(prof)
        return prof

    def enable(self) -> cProfile.Profile:
        prof = self.profiler()
        with self.lock:
            self.busy.add(id(prof))
        prof.enable()
        return prof

    def disable(self, prof: cProfile.Profile) -> None:
        prof.disable()
        with self.lock:
            self.busy.discard(id(prof))

    def add(self, key: str, wall: float, statements: int, sql: float, cpu: float) -> None:
        with self.lock:
            row = self.keys.setdefault(key, [0, 0.0, 0, 0.0, 0.0])
            row[0] += 1
            row[1] += wall
            row[2] += statements
            row[3] += sql
            row[4] += cpu
            self.served += 1
            due = self.served % DUMP_EVERY == 0
        if due:
            self.dump()

    def dump(self) -> None:
        folder = os.environ.get("LOAD_PROFILE_DIR")
        if not folder:
            return
        base = Path(folder) / f"{self.role}-{os.getpid()}"
        stats = None
        with self.lock:  # no profiler is enabled or disabled meanwhile
            keys = {k: list(v) for k, v in self.keys.items()}
            for prof in self.profilers:
                if id(prof) in self.busy:
                    continue  # serving a request in another thread: left out of this dump
                prof.create_stats()
                if not prof.stats:
                    continue
                if stats is None:
                    stats = pstats.Stats(prof)
                else:
                    stats.add(prof)
        if stats is not None:
            stats.dump_stats(str(base) + ".prof")
        Path(str(base) + ".json").write_text(json.dumps({"role": self.role, "pid": os.getpid(), "keys": keys}))


class SqlCounter:
    """A Django ``execute_wrapper``: counts statements and their time."""

    def __init__(self):
        self.statements = 0
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements += 1
            self.seconds += time.perf_counter() - start


class WsgiProfiler:
    """Wraps a WSGI application: profiles each request in its own thread's profiler."""

    def __init__(self, app, role: str = "web"):
        self.app = app
        self.recorder = _Recorder(role)

    def __call__(self, environ, start_response):
        from django.db import connection

        if not recording():
            return self.app(environ, start_response)
        key = f"{environ.get('REQUEST_METHOD')} {_ID.sub('/{id}', environ.get('PATH_INFO', ''))}"
        counter = SqlCounter()
        start, cpu = time.perf_counter(), time.thread_time()
        with connection.execute_wrapper(counter):
            prof = self.recorder.enable()
            try:
                return self.app(environ, start_response)
            finally:
                self.recorder.disable(prof)
                self.recorder.add(key, time.perf_counter() - start, counter.statements, counter.seconds,
                                  time.thread_time() - cpu)

    def dump(self) -> None:
        self.recorder.dump()


def install_celery() -> None:
    """Profile every task run in this Celery worker's pool processes."""
    from celery import signals

    recorder = _Recorder("task")
    running: dict[str, tuple] = {}

    @signals.task_prerun.connect(weak=False)
    def _start(task_id=None, task=None, **_):
        from django.db import connection

        if not recording():
            return
        counter = SqlCounter()
        connection.execute_wrappers.append(counter)
        running[task_id] = (task.name, counter, time.perf_counter(), time.thread_time())
        recorder.enable()

    @signals.task_postrun.connect(weak=False)
    def _stop(task_id=None, **_):
        from django.db import connection

        if task_id not in running:
            return
        recorder.disable(recorder.profiler())
        name, counter, start, cpu = running.pop(task_id)
        if counter in connection.execute_wrappers:
            connection.execute_wrappers.remove(counter)
        recorder.add(name, time.perf_counter() - start, counter.statements, counter.seconds, time.thread_time() - cpu)

    @signals.worker_process_shutdown.connect(weak=False)
    def _dump(**_):
        recorder.dump()

    @signals.worker_shutdown.connect(weak=False)
    def _dump_main(**_):
        recorder.dump()
