"""The figures and the verdicts of the fault test under load (``tests/faults/under_load.py``).

Read from what the buyers wrote down (every answer: when, how long, status, Idempotency-Key;
``bench.load.buyers``) and from the stored rows (statuses, release times, the invariants). Each
check is ``{ok, detail}``; a failed one says exactly what broke.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from bench.load.figures import pct
from bench.load.invariants import check_invariants

#: the buyers' request lists (bench.load.buyers.BuyerLog), by what they ask
KINDS = {"quotes": "GET quote", "posts": "POST purchases", "polls": "GET purchase", "resyncs": "GET listing"}
SHOWN = 10  # keys or ids named in a failure message

#: purchases (not the canary's) with their release time, or when they failed, or now if still in flight
_PURCHASES = """
SELECT p.id, p.status, extract(epoch FROM p.created_at)::float8,
       extract(epoch FROM coalesce(r.created_at, CASE WHEN p.status = 'failed' THEN p.updated_at END, now())
               - p.created_at)::float8
FROM trading_purchase p
JOIN accounts_user u ON u.id = p.buyer_id AND u.username <> 'load-canary'
LEFT JOIN releases_release r ON r.purchase_id = p.id
"""


def _answers(logs) -> list[tuple]:
    """Every request of every buyer: (start, seconds, status, kind, key)."""
    return [(r[0], r[1], r[2], label, r[4]) for log in logs for name, label in KINDS.items()
            for r in getattr(log, name)]


def _phase_of(phases, t: float) -> str:
    name = "before"
    for p in phases:
        if t >= p.t0:
            name = p.name
    return name


def _status_class(status: int) -> str:
    return "no answer" if status == 0 else f"{status // 100}xx"


def judge(report: dict, *, conn, logs, seed: dict, phases, origin: float, limit_s: float) -> None:
    """Fill ``report`` with the answers, the purchases, the latencies, the invariants and the checks."""
    answers = _answers(logs)
    by_kind: dict[str, Counter] = defaultdict(Counter)
    by_phase: dict[str, Counter] = defaultdict(Counter)
    fives: dict[str, Counter] = defaultdict(Counter)
    for start, _, status, kind, _ in answers:
        by_kind[kind][str(status)] += 1
        phase = _phase_of(phases, start)
        by_phase[phase][_status_class(status)] += 1
        by_phase[phase]["requests"] += 1
        if status >= 500:
            fives[phase][f"{kind} {status}"] += 1
    report["answers"] = {"by_kind": {k: dict(v) for k, v in by_kind.items()},
                         "by_phase": {k: dict(v) for k, v in by_phase.items()},
                         "5xx_by_phase": {k: dict(v) for k, v in fives.items()}}
    errors, samples = Counter(), {}
    for log in logs:
        errors.update(log.errors)
        for key, text in log.error_samples.items():
            samples.setdefault(key, text)
    report["buyer_errors"] = {key: {"count": n, "sample": samples.get(key)} for key, n in errors.most_common()}
    checks: dict[str, dict] = {}
    checks["a. no 5xx answered to a request that charged"] = _charged(report, conn, answers, phases, origin)
    rows = conn.execute(_PURCHASES).fetchall()
    checks["b. every purchase released, or failed and refunded"] = _final(report, conn)
    checks["c. every invariant holds"] = _invariants(report, conn, logs, seed)
    _latencies(report, rows, phases)
    checks[f"d. release p99 during the upload under {limit_s:g} s"] = _upload_p99(report, rows, phases, origin, limit_s)
    deaths = report.get("deaths") or []
    checks["e. no server process died"] = {"ok": not deaths, "detail": "; ".join(deaths) or "none died"}
    report["checks"] = checks


def _charged(report, conn, answers, phases, origin) -> dict:
    """(a): POSTs answered 5xx (or not at all) whose Idempotency-Key is stored with a purchase."""
    posts = [a for a in answers if a[3] == KINDS["posts"] and (a[2] >= 500 or a[2] == 0) and a[4]]
    keys = [a[4] for a in posts]
    stored = dict(conn.execute(
        "SELECT idempotency_key, status FROM trading_purchase WHERE idempotency_key = ANY(%s)", (keys,)).fetchall())
    charged_5xx = [a for a in posts if a[2] >= 500 and a[4] in stored]
    unanswered = [a for a in posts if a[2] == 0 and a[4] in stored]
    total_5xx = sum(1 for a in answers if a[2] >= 500)
    report["charged"] = {
        "answered_5xx": [{"key": a[4], "status": a[2], "at_s": round(a[0] - origin, 2), "phase": _phase_of(phases, a[0]),
                          "purchase_status": stored[a[4]]} for a in charged_5xx],
        "never_answered": [{"key": a[4], "at_s": round(a[0] - origin, 2), "phase": _phase_of(phases, a[0])}
                           for a in unanswered],
        "posts_5xx": sum(1 for a in posts if a[2] >= 500),
        "answers_5xx": total_5xx,
    }
    kinds = Counter(f"{a[3]} {a[2]}" for a in answers if a[2] >= 500)
    summary = ", ".join(f"{k} x{n}" for k, n in kinds.most_common()) or "none"
    if not charged_5xx:
        return {"ok": True, "detail": f"0 of {report['charged']['posts_5xx']} purchase POSTs answered 5xx had charged "
                                      f"({len(unanswered)} charged but never answered); 5xx answers in all: {summary}"}
    named = ", ".join(f"{a[4]} ({a[2]} at {a[0] - origin:.1f} s, {_phase_of(phases, a[0])})" for a in charged_5xx[:SHOWN])
    more = f" and {len(charged_5xx) - SHOWN} more" if len(charged_5xx) > SHOWN else ""
    return {"ok": False, "detail": f"{len(charged_5xx)} purchases charged and answered 5xx: keys {named}{more}; "
                                   f"5xx answers in all: {summary}"}


def _final(report, conn) -> dict:
    """(b): nothing in flight; every failed purchase with a price has its refund transfer."""
    statuses = dict(conn.execute("SELECT status, count(*) FROM trading_purchase GROUP BY status").fetchall())
    unrefunded = [str(r[0]) for r in conn.execute(
        "SELECT p.id FROM trading_purchase p WHERE p.status = 'failed' AND p.price > 0 AND NOT EXISTS "
        "(SELECT 1 FROM ledger_transfer t WHERE t.purchase_id = p.id AND t.kind = 'refund')")]
    stuck = [str(r[0]) for r in conn.execute(
        "SELECT id FROM trading_purchase WHERE status IN ('queued', 'computing') ORDER BY created_at")]
    report["purchases"] = {"by_status": statuses, "in_flight": len(stuck), "failed_without_refund": len(unrefunded)}
    problems = []
    if stuck:
        problems.append(f"{len(stuck)} purchases still in flight after the drain (queued {statuses.get('queued', 0)}, "
                        f"computing {statuses.get('computing', 0)}): ids {', '.join(stuck[:SHOWN])}")
    if unrefunded:
        problems.append(f"{len(unrefunded)} failed purchases without a refund: ids {', '.join(unrefunded[:SHOWN])}")
    return {"ok": not problems, "detail": "; ".join(problems) or f"purchases by status: {statuses}"}


def _invariants(report, conn, logs, seed) -> dict:
    """(c): market.core.invariants and bench.load.invariants (a failed purchase is judged by (b), not here)."""
    found = check_invariants(conn, logs, seed)
    found.pop("no purchase failed", None)  # under faults a purchase may fail, if it is refunded: (b)
    report["invariants"] = found
    broken = [f"{name} ({c['violations']}: {c['detail']})" for name, c in found.items() if not c["ok"]]
    return {"ok": not broken, "detail": "violated: " + "; ".join(broken) if broken else f"all {len(found)} hold"}


def _seconds(values) -> dict:
    figures = pct(values)  # milliseconds
    return {k: (round(v / 1e3, 3) if k not in ("n",) and v is not None else v) for k, v in figures.items()}


def _latencies(report, rows, phases) -> None:
    """Purchase row to release row of the purchases made in each phase, in seconds."""
    out = {}
    for i, p in enumerate(phases):
        end = phases[i + 1].t0 if i + 1 < len(phases) else float("inf")
        made = [r for r in rows if p.t0 <= r[2] < end]
        out[p.name] = {**_seconds([r[3] for r in made if r[1] == "released"]), "made": len(made),
                       "not_released": sum(1 for r in made if r[1] != "released")}
    report["release_latency_s"] = out


def _upload_p99(report, rows, phases, origin, limit_s) -> dict:
    """(d): purchases in flight at some time in the upload's window (made in it, or made before and
    not yet final when it opened); one still in flight counts with its age so far."""
    upload = next((p for p in phases if p.name == "upload" and "window" in p.detail), None)
    if upload is None:
        return {"ok": False, "detail": "the upload step did not run"}
    w0, w1 = upload.detail["window"]
    inside = [r for r in rows if r[2] < w1 and r[2] + r[3] >= w0]
    figures = _seconds([r[3] for r in inside])
    pending = sum(1 for r in inside if r[1] in ("queued", "computing"))
    report["upload_window"] = {"start_s": round(w0 - origin, 2), "end_s": round(w1 - origin, 2),
                               "dataset_status": upload.detail.get("dataset_status"), "release_s": figures,
                               "not_released_by_the_end": pending}
    where = (f"window {w0 - origin:.1f}-{w1 - origin:.1f} s, dataset {upload.detail.get('dataset_status')}, "
             f"upload answered {upload.detail.get('http_status')}")
    if not inside:
        return {"ok": False, "detail": f"no purchase was in flight during the upload window: the buyers stalled ({where})"}
    p99 = figures["p99"]
    text = (f"release p99 during the upload window {p99:.2f} s (n={figures['n']}, p50 {figures['p50']:.2f} s, "
            f"max {figures['max']:.2f} s, {pending} not released by the end; {where})")
    return {"ok": p99 < limit_s, "detail": text if p99 < limit_s else f"{text}: not under {limit_s:g} s"}


def print_summary(report: dict) -> None:
    """The phases side by side, then each check."""
    head = (f"{'phase':<9} {'start':>6} {'fault':>6} {'recov':>6} {'reqs':>6} {'2xx':>6} {'4xx':>5} {'5xx':>5} "
            f"{'noans':>5} {'made':>5} {'rel p50':>7} {'rel p99':>7} {'rel max':>7} {'unrel':>5}")
    print("\nfault test under load: " + ", ".join(f"{k} {report.get(k)}" for k in ("setup_s", "load_s", "wall_s")))
    print(head)
    print("-" * len(head))
    answers, latency = report["answers"]["by_phase"], report["release_latency_s"]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    for p in report["phases"]:
        a, lat = answers.get(p["name"], {}), latency.get(p["name"], {})
        print(f"{p['name']:<9} {p['start_s']:>6.1f} {p['fault_s']:>6.1f} {fmt(p['recovered_s']):>6} "
              f"{a.get('requests', 0):>6} {a.get('2xx', 0):>6} {a.get('4xx', 0):>5} {a.get('5xx', 0):>5} "
              f"{a.get('no answer', 0):>5} {lat.get('made', 0):>5} {fmt(lat.get('p50')):>7} {fmt(lat.get('p99')):>7} "
              f"{fmt(lat.get('max')):>7} {lat.get('not_released', 0):>5}")
    print("(seconds; recov: until every purchase made so far was final, '-' not within the limit; "
          "rel: purchase row to release row of the purchases made in the phase)")
    for phase, kinds in report["answers"]["5xx_by_phase"].items():
        print(f"5xx in {phase}: " + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())))
    upload = next((p for p in report["phases"] if p["name"] == "upload"), {})
    print(f"upload: answered {upload.get('http_status')} in {upload.get('upload_request_s')} s, dataset "
          f"{upload.get('dataset_status')} after {upload.get('processing_s')} s; worker memory peak (MB): "
          f"{report.get('memory_peak_mb')}; drain {report.get('drain_s')} s, buyers stuck {report.get('buyers_stuck')}")
    for key, e in list(report.get("buyer_errors", {}).items())[:8]:
        print(f"buyers saw {key} x{e['count']}: {e['sample']}")
    for name, check in report["checks"].items():
        print(f"{'PASS' if check['ok'] else 'FAIL'}  {name}: {check['detail']}")
