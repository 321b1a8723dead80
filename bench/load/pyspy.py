"""``--py-spy``: py-spy samples gunicorn and Celery (with their children) during the measured
window; its on-CPU samples become shares and CPU ms per purchase."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

from . import VENV_BIN
from .profile_figures import HOT_SPOTS, PACKAGES, hot
from .services import die_with_parent


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
                            preexec_fn=die_with_parent)
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
    spots = [row(name, sum(c for f, c in incl.items() if hot(f, file, func))) for name, file, func in HOT_SPOTS]
    return {
        "samples": total,
        "by_package_self": [row(k, v) for k, v in packages.most_common()],
        "hot_spots_inclusive": spots,
        "top_self": [row(k, v) for k, v in self_counts.most_common(top)],
        "top_inclusive_product_code": [row(k, v) for k, v in sorted(product, key=lambda kv: -kv[1])[:top]],
    }

