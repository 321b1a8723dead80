"""What the machine does during a run: CPU per part of the setup (from /proc), and what
PostgreSQL's sessions of the run's database are doing or waiting on (pg_stat_activity)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

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


class CpuMeter:
    """CPU seconds per part of the setup between two snapshots."""

    def __init__(self, procs: dict, db_pids):
        self.procs = procs  # name -> Popen: gunicorn, celery (each counted with its children)
        self.db_pids = db_pids  # callable: our database's backend pids

    def snapshot(self) -> dict:
        groups: dict[str, dict[int, float]] = defaultdict(dict)
        for name in ("gunicorn", "celery"):
            proc = self.procs.get(name)
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
                    part = "postgres: our backends" if pid in ours else \
                        "postgres: other (WAL writer, checkpointer, other databases)"
                    groups[part][pid] = st[1]
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
    """Samples pg_stat_activity of one database: what each session is doing or waiting on."""

    def __init__(self, connect, interval: float = 0.1):
        super().__init__(daemon=True, name="pg-sampler")
        self.connect, self.interval = connect, interval
        self.active = threading.Event()
        self.done = threading.Event()
        self.samples = 0
        self.states: Counter = Counter()
        self.lock_queries: Counter = Counter()
        self.error: str | None = None

    def run(self) -> None:
        try:
            conn = self.connect()
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
