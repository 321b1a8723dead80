"""Counts, rates and latency percentiles of what the buyers wrote down in the measured window,
and the CPU each part of the setup used in it."""

from __future__ import annotations

from collections import Counter

import numpy as np


def pct(values, qs=(50, 95, 99)) -> dict:
    """Percentiles, mean and max of durations in seconds, in milliseconds."""
    if not len(values):
        return {f"p{q}": None for q in qs} | {"mean": None, "max": None, "n": 0}
    arr = np.asarray(values, dtype=float) * 1e3
    return {**{f"p{q}": round(float(np.percentile(arr, q)), 2) for q in qs},
            "mean": round(float(arr.mean()), 2), "max": round(float(arr.max()), 2), "n": int(arr.size)}


def _inside(logs, name: str, t0: float, t1: float) -> list:
    """Rows of every buyer's ``name`` list that started in [t0, t1)."""
    return [r for log in logs for r in getattr(log, name) if t0 <= r[0] < t1]


def _honoured(rows) -> dict:
    return {"honoured": sum(1 for r in rows if r[3]), "of": len(rows)}


def product_figures(logs, t0: float, t1: float, *, wait: float) -> dict:
    """The product's counts and latencies of calls started in the measured window [t0, t1)."""
    quotes = _inside(logs, "quotes", t0, t1)
    posts = _inside(logs, "posts", t0, t1)
    polls = _inside(logs, "polls", t0, t1)
    releases = _inside(logs, "releases", t0, t1)
    window = t1 - t0
    accepted = [r for r in posts if r[2] in (200, 201, 202)]
    released = [r for r in releases if r[2] == "released"]
    done_in_window = [r for log in logs for r in log.releases if r[2] == "released" and t0 <= r[0] + r[1] < t1]
    return {
        "window_s": round(window, 2),
        "purchases": len(accepted),
        "purchases_per_s": round(len(accepted) / window, 2),
        "releases_completed_in_window_per_s": round(len(done_in_window) / window, 2),
        "quotes": len(quotes),
        "quotes_per_s": round(len([r for r in quotes if r[2] == 200]) / window, 2),
        "polls": len(polls),
        "polls_per_purchase": round(len(polls) / max(1, len(accepted)), 2),
        "http_requests_per_s": round((len(quotes) + len(posts) + len(polls)) / window, 1),
        "prefer_wait": {"sent": wait, "post": _honoured(posts), "get": _honoured(polls)},
        "latency_ms": {
            "quote": pct([r[1] for r in quotes]),
            "purchase_post": pct([r[1] for r in accepted]),
            "poll": pct([r[1] for r in polls]),
            "purchase_to_release_client": pct([r[1] for r in released]),
        },
        **buyer_troubles(logs),
    }


def buyer_troubles(logs) -> dict:
    """Errors by kind (with a sample message each), reconnects, buyers that ran out of steps."""
    errors: Counter = Counter()
    samples: dict = {}
    for log in logs:
        errors.update(log.errors)
        for k, v in log.error_samples.items():
            samples.setdefault(k, v)
    return {"errors": dict(errors), "error_samples": samples,
            "reconnects": sum(log.reconnects for log in logs),
            "buyers_done_all_listings": sum(log.exhausted for log in logs)}


def cpu_figures(cpu: dict, count: int, unit: str) -> dict:
    """A :meth:`CpuMeter.diff` as cores used and CPU ms per ``unit`` (purchase, request) by part."""
    n = max(1, count)
    return {
        "window_s": round(cpu["seconds"], 2),
        "machine_busy_pct_of_all_cores": round(100 * cpu["machine_busy"] / max(1e-9, cpu["machine_capacity"]), 1),
        "by_part": {k: {"cores_used": round(v / cpu["seconds"], 2), f"cpu_ms_per_{unit}": round(v / n * 1e3, 2)}
                    for k, v in sorted(cpu["by_part"].items(), key=lambda kv: -kv[1])},
    }


#: the process groups CPU per purchase is reported by: web (gunicorn and its workers), worker (Celery and
#: its pool), db (PostgreSQL's backends serving this run's database)
GROUPS = {"web": "gunicorn", "worker": "celery", "db": "postgres: our backends"}


def cpu_per_purchase(cpu: dict) -> dict:
    """CPU ms per purchase of the run's own processes by group, and their total (from :func:`cpu_figures`)."""
    parts = cpu["by_part"]
    out = {g: parts.get(part, {}).get("cpu_ms_per_purchase", 0.0) for g, part in GROUPS.items()}
    out["total"] = round(sum(out.values()), 2)
    return out


def db_latency(conn, t0: float, t1: float, releases: str = "releases_release", purchases: str = "trading_purchase",
               fk: str = "purchase_id") -> dict:
    """Purchase row to release row, from the stored timestamps (no polling in it)."""
    rows = conn.execute(
        f"SELECT extract(epoch FROM r.created_at - p.created_at) FROM {releases} r "  # noqa: S608 (our table names)
        f"JOIN {purchases} p ON p.id = r.{fk} "
        "WHERE p.created_at >= to_timestamp(%s) AND p.created_at < to_timestamp(%s)", (t0, t1)
    ).fetchall()
    return pct([float(r[0]) for r in rows])


def phases_model(phases: dict, figures: dict, cores: int) -> dict:
    """CPU of one purchase as the buyers made it (a quote, a purchase, its polls, the release), from the
    phases timed alone, against the CPU measured under load; and the rate ``cores`` could sustain."""
    polls = figures["polls_per_purchase"]
    cpu = lambda name: phases[name]["cpu_ms_mean"]  # noqa: E731
    web = cpu("quote") + cpu("purchase") + max(0.0, polls - 1) * cpu("poll queued") + cpu("poll released (first)")
    worker = cpu("release")
    parts = figures["cpu"]["by_part"]
    measured = {k: parts.get(k, {}).get("cpu_ms_per_purchase") for k in ("gunicorn", "celery", "postgres: our backends")}
    return {
        "polls_per_purchase": polls,
        "web_python_cpu_ms": round(web, 2),
        "release_python_cpu_ms": round(worker, 2),
        "measured_under_load_cpu_ms": measured,
        "ceiling_purchases_per_s_python_only": round(cores * 1e3 / (web + worker), 1),
        "ceiling_purchases_per_s_measured": round(
            cores * 1e3 / max(1e-9, sum(v or 0.0 for v in measured.values())), 1),
    }
