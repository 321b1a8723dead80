"""What the profiles found, merged and named: the cProfile files the servers of ``--profile``
wrote (``bench.load.server_profile``), and the named hot spots that both the cProfile figures
and py-spy's samples (``bench.load.pyspy``) are summed into."""

from __future__ import annotations

import json
import pstats
from pathlib import Path

from . import ROOT


def where(key) -> str:
    filename, line, func = key
    for marker in ("/site-packages/", str(ROOT) + "/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    if filename == "~":
        return func  # a C function: "<method 'execute' of ...>"
    return f"{filename}:{line}({func})"


def product_code(key) -> bool:
    """Whether a pstats key is a function of the product (not of a library, nor of the bench)."""
    filename = key[0]
    return filename.startswith(str(ROOT)) and "/.venv/" not in filename and "/bench/" not in filename


def read_profile(folder: Path, role: str, per: int, top: int = 20) -> dict | None:
    files = sorted(folder.glob(f"{role}-*.prof"))
    if not files:
        return None
    stats = pstats.Stats(str(files[0]))
    for f in files[1:]:
        stats.add(str(f))
    rows = stats.stats  # key -> (primitive calls, calls, tottime, cumtime, callers)
    total = sum(tt for _, _, tt, _, _ in rows.values())
    per = max(1, per)

    def item(key, v):
        cc, nc, tt, ct, _ = v
        return {"function": where(key), "calls_per_unit": round(nc / per, 2),
                "self_ms_per_unit": round(tt / per * 1e3, 3), "cum_ms_per_unit": round(ct / per * 1e3, 3)}

    by_self = sorted(rows.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    ours = [kv for kv in rows.items() if product_code(kv[0])]
    by_cum = sorted(ours, key=lambda kv: kv[1][3], reverse=True)[:top]
    keys: dict[str, list] = {}
    for f in folder.glob(f"{role}-*.json"):
        for k, v in json.loads(f.read_text())["keys"].items():
            row = keys.setdefault(k, [0, 0.0, 0, 0.0, 0.0])
            for i in range(5):
                row[i] += v[i]
    return {
        "processes": len(files),
        "profiled_seconds": round(total, 2),
        "by_endpoint": {
            k: {"count": int(v[0]), "wall_ms": round(v[1] / v[0] * 1e3, 2), "cpu_ms": round(v[4] / v[0] * 1e3, 2),
                "sql_statements": round(v[2] / v[0], 2), "sql_wall_ms": round(v[3] / v[0] * 1e3, 2)}
            for k, v in sorted(keys.items(), key=lambda kv: -kv[1][1]) if v[0]
        },
        "hot_spots_cumulative": [{"function": h["function"], "ms_per_unit": h["ms"]} for h in cprofile_hot_spots(rows, per)],
        "top_self": [item(k, v) for k, v in by_self],
        "top_cumulative_product_code": [item(k, v) for k, v in by_cum],
    }


PACKAGES = [  # (path prefix of a frame's file, as py-spy shortens it, name)
    ("market/", "product: market/"), ("releases/", "product: releases/"),
    ("django/db/", "Django ORM and database layer"), ("django/core/cache", "Django cache (throttling)"),
    ("django/", "Django (other)"), ("rest_framework/", "Django REST framework"), ("psycopg", "psycopg"),
    ("redis/", "redis-py"), ("kombu/", "Celery: kombu"), ("celery/", "Celery"), ("billiard/", "Celery: billiard"),
    ("vine/", "Celery: vine"), ("amqp/", "Celery: amqp"), ("gunicorn/", "gunicorn"), ("numpy/", "numpy"),
    ("scipy/", "scipy"), ("drf_spectacular", "drf-spectacular"), ("whitenoise/", "whitenoise"),
    ("django_htmx/", "django-htmx"),
]
#: places worth naming whatever calls them: (name, file as shortened in profiles, function name)
HOT_SPOTS = [
    ("DRF throttles (history read + written in the Redis cache)", "rest_framework/throttling.py", "allow_request"),
    ("  Django RedisCache.get_client: a new redis.Redis per call", "django/core/cache/backends/redis.py", "get_client"),
    ("DRF token authentication (a query per request)", "rest_framework/authentication.py", "authenticate"),
    ("connection health check (SELECT 1 per request)", "django/db/backends/base/base.py", "close_if_health_check_failed"),
    ("database connect", "django/db/backends/base/base.py", "connect"),
    ("transaction commit", "django/db/backends/base/base.py", "commit"),
    ("queueing the release task (Celery apply_async)", "celery/app/task.py", "apply_async"),
    ("purchase_create", "market/trading/services.py", "purchase_create"),
    ("  transfer_create (ledger)", "market/ledger/services.py", "transfer_create"),
    ("  accounts_for_payment (the wallet locked, the earnings read)", "market/ledger/services.py", "accounts_for_payment"),
    ("  _existing_for_key (idempotency look-ups)", "market/trading/services.py", "_existing_for_key"),
    ("purchase_quote", "market/trading/services.py", "purchase_quote"),
    ("  listing_accuracy (error bounds in a quote)", "market/trading/services.py", "listing_accuracy"),
    ("  buyer_caps (trust cap check)", "market/trust/selectors.py", "buyer_caps"),
    ("listing_get (loads the listing with its dataset)", "market/catalog/selectors.py", "listing_get"),
    ("purchase_get (the purchase with listing and release)", "market/trading/selectors.py", "purchase_get"),
    ("PurchaseSerializer.get_release (a released purchase)", "market/api/serializers.py", "get_release"),
    ("  privacy at risk of the release (level_at_risk)", "market/catalog/risk.py", "level_at_risk"),
    ("  release_readings (build_plan + present)", "market/trading/selectors.py", "release_readings"),
    ("purchase_release (the task's work)", "market/trading/services.py", "purchase_release"),
    ("  the noise step (_point_at / _l2_point_at)", "releases/services.py", "_point_at"),
    ("DRF response rendering", "rest_framework/response.py", "rendered_content"),
]


def hot(frame: str, file: str, func: str) -> bool:
    """Whether a py-spy frame ``Class.func (file:line)`` or a cProfile key text ``file:line(func)`` is this spot."""
    if f"({file}:" in frame:  # py-spy
        name = frame.split(" (", 1)[0]
        return name == func or name.endswith("." + func) or name.endswith("._" + func.lstrip("_"))
    return f"{file}:" in frame and (frame.endswith(f"({func})") or frame.endswith(f"(_{func.lstrip('_')})"))


def cprofile_hot_spots(rows: dict, per: int) -> list[dict]:
    """Cumulative ms per unit of each hot spot, from pstats rows (recursion counted once by cProfile)."""
    out = []
    for name, file, func in HOT_SPOTS:
        ms = sum(v[3] for k, v in rows.items() if hot(where(k), file, func)) / max(1, per) * 1e3
        out.append({"function": name, "ms": round(ms, 3)})
    return out

