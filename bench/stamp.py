"""When and on what a bench's figures were measured: added to every bench's JSON.

``docs/performance.md`` is generated from those files (``scripts/perf_page.py``), so each carries
its date (UTC), the CPU model (from /proc/cpuinfo), the number of cores, the Python and numpy
versions and the load average (1 minute) when the figures are written, at the end of the run.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def stamp(bench: str) -> dict:
    try:
        import numpy

        numpy_version = numpy.__version__
    except ImportError:  # pragma: no cover - numpy is a runtime requirement
        numpy_version = None
    return {
        "bench": bench,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": numpy_version,
            "load_average": round(os.getloadavg()[0], 2),
        },
    }


def write_json(path, bench: str, figures: dict) -> None:
    """Writes ``figures`` to ``path`` with the bench's name, the date and the machine first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**stamp(bench), **figures}, indent=2) + "\n")
