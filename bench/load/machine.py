"""What the figures were measured on: the CPU, its cores, and the versions of the stack."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def versions() -> dict:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for pkg in ("Django", "djangorestframework", "celery", "gunicorn", "psycopg", "redis", "numpy"):
        try:
            out[pkg if pkg != "redis" else "redis-py"] = version(pkg)
        except Exception:
            pass
    return out


def machine(args) -> dict:
    model = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    info = {"cpu": model, "cores": os.cpu_count(), **versions()}
    try:
        import psycopg

        with psycopg.connect(host=args.pg_host, port=args.pg_port, user=args.pg_user, dbname="postgres") as conn:
            info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
    except Exception:
        pass
    try:
        import redis

        info["redis_server"] = redis.Redis(host=args.redis_host, port=args.redis_port).info("server")["redis_version"]
    except Exception:
        pass
    return info
