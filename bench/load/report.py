"""The printed report and the JSON: each run in detail, then the runs side by side with the
targets. Every function here formats a report's dicts into text; nothing is measured here."""

from __future__ import annotations

import json
from pathlib import Path

LATENCIES = {"quote": "quote GET", "purchase_post": "purchase POST", "poll": "poll GET",
             "purchase_to_release_client": "purchase -> release (buyer sees)",
             "purchase_to_release_db": "purchase -> release (stored rows)"}


def _ms(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def format_header(report: dict, args) -> str:
    m = report.get("machine", {})
    nice = "".join(f", nice {n} +{v}" for n, v in (("gunicorn", args.nice_web), ("celery", args.nice_celery)) if v)
    return "\n".join([
        f"machine: {m.get('cpu')}, {m.get('cores')} cores, Python {m.get('python')}, PostgreSQL {m.get('postgresql')}, "
        f"Redis {m.get('redis_server', '?')}, Django {m.get('Django')}, DRF {m.get('djangorestframework')}, "
        f"gunicorn {m.get('gunicorn')}, celery {m.get('celery')}",
        f"setup: gunicorn {args.workers} gthread workers x {args.threads} threads, Celery {args.pool} x "
        f"{args.celery}{nice} (product and baseline), {args.buyers} buyers (closed loop), {args.open_buyers} "
        f"(open loop at {', '.join(f'{r:g}' for r in args.rates)}/s), {args.listings} listings, "
        f"{args.warmup:g} s warm-up + {args.seconds:g} s measured per run, Prefer: wait={args.wait:g} "
        f"(else a poll every {args.poll * 1e3:g} ms), synchronous_commit={args.synchronous_commit}"
        f"{', PROFILED' if args.profile else ''}",
    ])


def format_latencies(latency: dict) -> list[str]:
    lines = [f"  {'latency (ms)':<34}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'n':>8}"]
    for key, label in LATENCIES.items():
        d = latency.get(key)
        if d and d["n"]:
            lines.append(f"  {label:<34}{d['p50']:>9.1f}{d['p95']:>9.1f}{d['p99']:>9.1f}{d['max']:>9.1f}{d['n']:>8}")
    return lines


def format_run(name: str, run: dict) -> str:
    """One run in detail: rates, latencies, errors, CPU, PostgreSQL sessions, invariants."""
    f = run["figures"]
    lines = [f"\n== {name} (logs: {run.get('logs')})"]
    pw = f["prefer_wait"]
    lines.append(
        f"  measured {f['window_s']:g} s: {f['purchases']} purchases = {f['purchases_per_s']:.1f}/s "
        f"(released {f['releases_completed_in_window_per_s']:.1f}/s), quotes {f['quotes_per_s']:.1f}/s, "
        f"{f['http_requests_per_s']:.0f} HTTP requests/s ({f['polls_per_purchase']:.1f} GETs per purchase)")
    lines.append(f"  Prefer: wait={pw['sent']:g} honoured on {pw['post']['honoured']} of {pw['post']['of']} "
                 f"purchase POSTs and {pw['get']['honoured']} of {pw['get']['of']} GETs")
    c = f["cpu_ms_per_purchase"]
    lines.append(f"  CPU per purchase: {c['total']:.1f} ms = web {c['web']:.1f} + worker {c['worker']:.1f} "
                 f"+ database {c['db']:.1f}")
    if "open_loop" in f:
        o = f["open_loop"]
        lat = o["latency_from_arrival_ms"]
        lines.append(f"  open loop at {o['rate_offered_nominal']:g}/s: offered {o['offered_per_s']:.1f}/s, achieved "
                     f"{o['achieved_per_s']:.1f}/s, backlog {o['backlog_at_end']} at the end (max {o['max_backlog']}), "
                     f"{o['abandoned_at_stop']} unfinished; from arrival p50 {_ms(lat['p50'])} p95 {_ms(lat['p95'])} "
                     f"p99 {_ms(lat['p99'])} ms; not released: {o['not_released'] or 'none'}")
    unit = "purchase"
    lines += format_latencies(f["latency_ms"])
    lines.append(f"  errors: {f['errors'] or 'none'}" + (f"; samples: {f['error_samples']}" if f["error_samples"] else "")
                 + f"; reconnects {f['reconnects']}")
    if f.get("buyers_done_all_listings"):
        lines.append(f"  note: {f['buyers_done_all_listings']} buyers reached every ceiling and stopped early "
                     "(raise --ceiling or --hot-ceiling)")
    cpu = f["cpu"]
    lines.append(f"  CPU ({cpu['machine_busy_pct_of_all_cores']:.0f}% of the machine busy):")
    for part, v in cpu["by_part"].items():
        lines.append(f"    {part:<62}{v['cores_used']:>6.2f} cores {v[f'cpu_ms_per_{unit}']:>8.2f} ms per {unit}")
    pg = f["postgres_sessions"]
    lines.append(f"  PostgreSQL sessions of this database, mean over {pg['samples']} samples:")
    for k, v in list(pg["mean_sessions"].items())[:10]:
        lines.append(f"    {k:<62}{v:>7.2f}")
    for k, v in pg["lock_waits_by_query"].items():
        lines.append(f"      waiting on a lock: {v:5.2f}  {k}")
    stored = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in run.get("stored", {}).items())
    lines.append(f"  invariants ({stored}):")
    for inv, v in run.get("invariants", {}).items():
        lines.append(f"    {'pass' if v['ok'] else 'FAIL'}  {inv}" + ("" if v["ok"] else f": {v['violations']} ({v['detail']})"))
    return "\n".join(lines)


def format_profile(run: dict, timer: str) -> str:
    lines = []
    for role in ("web", "celery"):
        p = run["profile"][role]
        if not p:
            lines.append(f"\nprofile ({role}): no data")
            continue
        lines.append(f"\nprofile ({role}, {p['processes']} processes, {timer} timer): per endpoint/task (mean)")
        for k, v in p["by_endpoint"].items():
            lines.append(f"  {k:<36}{v['count']:>7} x  wall {v['wall_ms']:>7.2f} ms  CPU {v['cpu_ms']:>6.2f} ms  "
                         f"{v['sql_statements']:>5.1f} SQL statements taking {v['sql_wall_ms']:>6.2f} ms")
        lines.append("  hot spots (cumulative ms per purchase):")
        lines += [f"    {it['ms_per_unit']:>8.3f}  {it['function']}" for it in p["hot_spots_cumulative"]
                  if it["ms_per_unit"] > 0]
        lines.append("  top self time (ms per purchase):")
        lines += [f"    {it['self_ms_per_unit']:>8.3f}  {it['calls_per_unit']:>7.1f} calls  {it['function'][:110]}"
                  for it in p["top_self"][:15]]
        lines.append("  top cumulative time in the product's code (ms per purchase):")
        lines += [f"    {it['cum_ms_per_unit']:>8.3f}  {it['calls_per_unit']:>7.1f} calls  {it['function'][:110]}"
                  for it in p["top_cumulative_product_code"][:15]]
    return "\n".join(lines)


def format_py_spy(run: dict) -> str:
    lines = []
    for part in ("gunicorn", "celery"):
        p = run["py_spy"].get(part)
        if not p:
            lines.append(f"\npy-spy ({part}): no samples")
            continue
        lines.append(f"\npy-spy ({part}, {p['samples']} samples of on-CPU threads): CPU ms per purchase")
        row = lambda it, width=110: f"    {it['cpu_ms_per_purchase']:>7.2f} ms {100 * it['share']:>5.1f}%  {it['function'][:width]}"  # noqa: E731
        lines.append("  by package (self time):")
        lines += [row(it) for it in p["by_package_self"][:12]]
        lines.append("  hot spots (inclusive):")
        lines += [row(it) for it in p["hot_spots_inclusive"] if it["share"] > 0]
        lines.append("  top self:")
        lines += [row(it) for it in p["top_self"][:10]]
        lines.append("  top inclusive in the product's code:")
        lines += [row(it) for it in p["top_inclusive_product_code"][:12]]
    return "\n".join(lines)


def format_phases(run: dict, cores: int) -> str:
    ph = run["phases"]
    lines = ["\nphases of one purchase, timed alone in one thread on the loaded database (ms per call):",
             f"  {'phase':<24}{'calls':>6}{'CPU p50':>9}{'CPU mean':>9}{'wall p50':>9}{'SQL':>6}{'SQL ms':>8}"]
    for name, v in ph.items():
        if v.get("calls"):
            lines.append(f"  {name:<24}{v['calls']:>6}{v['cpu_ms_p50']:>9.2f}{v['cpu_ms_mean']:>9.2f}"
                         f"{v['wall_ms_p50']:>9.2f}{v['sql_statements']:>6.1f}{v['sql_wall_ms_mean']:>8.2f}")
    for name, v in ph.items():
        if not v.get("calls"):
            continue
        lines.append(f"  {name}: hot spots, top cumulative in the product's code, top self "
                     f"(wall ms per profiled call: cProfile slows Python code by about 2x)")
        lines += [f"    {it['ms']:>8.3f}          {it['function']}" for it in v.get("hot_spots", []) if it["ms"] >= 0.05]
        lines += [f"    {it['ms']:>8.3f}  {it['calls']:>6.1f}x  {it['function'][:100]}"
                  for it in v["top_cumulative_product_code"][:6]]
        lines += [f"    {it['ms']:>8.3f}  {it['calls']:>6.1f}x  self  {it['function'][:94]}" for it in v["top_self"][:6]]
    m = run["phases_model"]
    under = m["measured_under_load_cpu_ms"]
    lines += [
        f"  one purchase as the buyers made it (quote, purchase, {m['polls_per_purchase']:.1f} GETs, release): "
        f"{m['web_python_cpu_ms']:.1f} ms (web) + {m['release_python_cpu_ms']:.1f} ms (release) of CPU in the phases alone;",
        f"  under load, per purchase: gunicorn {under['gunicorn']} ms, Celery {under['celery']} ms, "
        f"PostgreSQL {under['postgres: our backends']} ms (with the servers' own overhead)",
        f"  so {cores} cores sustain at most ~{m['ceiling_purchases_per_s_python_only']:.0f} purchases/s (the phases' "
        f"CPU alone) or ~{m['ceiling_purchases_per_s_measured']:.0f}/s (all the CPU measured under load) "
        f"if nothing else ran on the machine",
    ]
    return "\n".join(lines)


def format_side_by_side(runs: dict, comparison: dict) -> str:
    """The runs in columns: rate, CPU per purchase, latencies, errors, invariants; then the ratios."""
    names = list(runs)
    width = max([17] + [len(n) + 2 for n in names])
    head = f"{'':<36}" + "".join(f"{n:>{width}}" for n in names)

    def row(label: str, cell) -> str:
        return f"{label:<36}" + "".join(f"{cell(runs[n]):>{width}}" for n in names)

    def fig(*path, fmt="{:.1f}"):
        def cell(run):
            v = run["figures"]
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            return "-" if v is None else fmt.format(v)
        return cell

    lines = ["\nside by side", head, row("purchases/s", fig("purchases_per_s"))]
    for part in ("total", "web", "worker", "db"):
        lines.append(row(f"CPU ms per purchase: {part}", fig("cpu_ms_per_purchase", part)))
    for q in ("p50", "p95", "p99"):
        lines.append(row(f"purchase POST {q} (ms)", fig("latency_ms", "purchase_post", q)))
    for q in ("p50", "p95", "p99"):
        lines.append(row(f"purchase -> release {q} (ms)", fig("latency_ms", "purchase_to_release_client", q)))
    lines.append(row("open: achieved/s", fig("open_loop", "achieved_per_s")))
    lines.append(row("open: backlog at end", fig("open_loop", "backlog_at_end", fmt="{}")))
    for q in ("p50", "p99"):
        lines.append(row(f"open: arrival -> release {q} (ms)", fig("open_loop", "latency_from_arrival_ms", q)))
    lines.append(row("errors", lambda run: str(sum(run["figures"]["errors"].values()))))
    lines.append(row("invariants", lambda run: "pass" if all(v["ok"] for v in run.get("invariants", {}).values())
                     else "FAIL"))
    for mode in ("spread", "hot"):
        c = comparison.get(mode)
        if c and c["ratio"] is not None:
            lines.append(f"product / baseline, {mode}: {c['product_purchases_per_s']:.1f} over "
                         f"{c['baseline_purchases_per_s']:.1f} purchases/s = {c['ratio']:.1%}; CPU per purchase "
                         f"{c['product_cpu_ms']['total']:.1f} over {c['baseline_cpu_ms']['total']:.1f} ms = "
                         f"{c['cpu_ratio']:.1%}")
    return "\n".join(lines)


def format_targets(rows: list[dict]) -> str:
    wt = max(len(r["target"]) for r in rows) + 2
    ww = max(len(r["wanted"]) for r in rows) + 2
    wm = max([len("measured")] + [len(r["shown"]) for r in rows]) + 2
    lines = [f"\n{'target':<{wt}}{'wanted':>{ww}}{'measured':>{wm}}   verdict"]
    lines += [f"{r['target']:<{wt}}{r['wanted']:>{ww}}{r['shown']:>{wm}}   {r['verdict']}" for r in rows]
    return "\n".join(lines)


def print_report(report: dict, args) -> None:
    print("\n" + format_header(report, args))
    runs = report["runs"]
    for name, run in runs.items():  # in the order they ran
        print(format_run(name, run))
        if "profile" in run:
            print(format_profile(run, args.profile_timer))
        if "py_spy" in run:
            print(format_py_spy(run))
        if "phases" in run:
            print(format_phases(run, report["machine"]["cores"]))
    print(format_side_by_side(runs, report["comparison"]))
    print(format_targets(report["targets"]))


def write_json(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwritten: {path}")
