"""The product against its like-for-like baseline: ratios, and the targets of issue 32 with a verdict each.

* closed loop, spread and hot: the product's CPU per purchase (web + worker + its database backends,
  ``cpu_ms_per_purchase.total``) at most the baseline's (the aim, shown beside: two thirds of it).
  CPU per purchase is the figure that survives a noisy machine; purchases per second are compared too,
  without a verdict;
* open loop at 20 purchases/s: p99 from the scheduled arrival to the release in hand <= 300 ms;
* open loop at 40 purchases/s: it keeps up (achieved rate within 5% of the offered one, and the
  backlog at the end of the window at most one second of arrivals) with p99 <= 1 s;
* every invariant of every run holds.

A verdict is ``PASS``, ``MISS``, or ``n/a`` when a run it needs was left out. Pure functions of a
report's runs: no server, no database.
"""

from __future__ import annotations

CPU_RATIO = 1.0
CPU_AIM = 2 / 3
OPEN_P99_MS = {20.0: 300.0, 40.0: 1000.0}
KEEP_UP = 0.95  # achieved / offered
INVARIANTS = "every invariant holds"


def ratio(product: float | None, baseline: float | None) -> float | None:
    """product / baseline, or None when either is missing or the baseline's figure is not positive."""
    if product is None or baseline is None or baseline <= 0:
        return None
    return product / baseline


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def compare(runs: dict) -> dict:
    """Per closed mode: purchases/s and CPU ms per purchase, product and baseline, with their ratios;
    per open-loop rate: achieved rate and p99 from arrival, both."""
    out = {}
    for mode in ("spread", "hot"):
        product, baseline = runs.get(f"product {mode}"), runs.get(f"baseline {mode}")
        if not product:
            continue
        rate = product["figures"]["purchases_per_s"]
        base = baseline["figures"]["purchases_per_s"] if baseline else None
        cpu = product["figures"]["cpu_ms_per_purchase"]
        base_cpu = baseline["figures"]["cpu_ms_per_purchase"] if baseline else None
        out[mode] = {"product_purchases_per_s": rate, "baseline_purchases_per_s": base, "ratio": _r(ratio(rate, base)),
                     "product_cpu_ms": cpu, "baseline_cpu_ms": base_cpu,
                     "cpu_ratio": _r(ratio(cpu["total"], base_cpu["total"] if base_cpu else None))}
    for name, run in runs.items():
        if run["mode"] != "open" or run["kind"] != "product":
            continue
        baseline = runs.get(name.replace("product", "baseline", 1))
        pick = lambda r: None if r is None else {  # noqa: E731
            "achieved_per_s": r["figures"]["open_loop"]["achieved_per_s"],
            "offered_per_s": r["figures"]["open_loop"]["offered_per_s"],
            "backlog_at_end": r["figures"]["open_loop"]["backlog_at_end"],
            "p99_ms": r["figures"]["open_loop"]["latency_from_arrival_ms"]["p99"],
            "cpu_ms": r["figures"]["cpu_ms_per_purchase"]}
        out[f"open {run['rate']:g}/s"] = {"product": pick(run), "baseline": pick(baseline)}
    return out


def _verdict(name: str, wanted: str, value, shown: str, ok: bool | None) -> dict:
    return {"target": name, "wanted": wanted, "value": value, "shown": shown,
            "verdict": "n/a" if ok is None else "PASS" if ok else "MISS"}


def keeps_up(open_loop: dict) -> bool:
    """Achieved within 5% of offered, and no more than one second of arrivals left at the end of the window."""
    done = open_loop["achieved_over_offered"]
    return done is not None and done >= KEEP_UP and open_loop["backlog_at_end"] <= max(1.0, open_loop["offered_per_s"])


def verdicts(runs: dict, comparison: dict, buyers: int) -> list[dict]:
    """One row per target: what was wanted, what was measured, PASS / MISS / n/a."""
    rows = []
    for mode in ("spread", "hot"):
        c = comparison.get(mode, {})
        r = c.get("cpu_ratio")
        where = "buyers over the listings" if mode == "spread" else "buyers on one listing"
        shown = "-" if r is None else (f"{c['product_cpu_ms']['total']:.1f}/{c['baseline_cpu_ms']['total']:.1f} ms"
                                       f" = {r:.0%} (aim {CPU_AIM:.0%})")
        rows.append(_verdict(f"CPU per purchase over the baseline's, closed loop, {mode} ({buyers} {where})",
                             f"<= {CPU_RATIO:.0%}", r, shown, None if r is None else r <= CPU_RATIO))
    for rate, bound in OPEN_P99_MS.items():
        run = runs.get(f"product open {rate:g}/s")
        o = run["figures"]["open_loop"] if run else None
        p99 = o["latency_from_arrival_ms"]["p99"] if o else None
        if rate >= 40:
            ok = None if o is None else keeps_up(o) and p99 is not None and p99 <= bound
            shown = "-" if o is None else (f"{o['achieved_per_s']:.1f}/s, backlog {o['backlog_at_end']}, "
                                           f"p99 {_ms(p99)}")
            rows.append(_verdict(f"open loop {rate:g}/s: keeps up, p99 from arrival to release",
                                 f"<= {bound:g} ms", p99, shown, ok))
        else:
            rows.append(_verdict(f"open loop {rate:g}/s: p99 from arrival to release", f"<= {bound:g} ms", p99,
                                 "-" if o is None else _ms(p99),
                                 None if o is None else p99 is not None and p99 <= bound))
    failed = [f"{run}: {name}" for run, v in runs.items() for name, inv in v.get("invariants", {}).items()
              if not inv["ok"]]
    checked = any("invariants" in v for v in runs.values())
    rows.append(_verdict(INVARIANTS, "all", failed, "all hold" if not failed else f"{len(failed)} fail",
                         None if not checked else not failed))
    return rows


def _ms(v) -> str:
    return "-" if v is None else f"{v:.0f} ms"


def exit_status(rows: list[dict], check_target: bool) -> int:
    """1 if an invariant fails; else 2 if ``check_target`` and a target is missed; else 0."""
    if any(r["target"] == INVARIANTS and r["verdict"] == "MISS" for r in rows):
        return 1
    if check_target and any(r["verdict"] == "MISS" for r in rows):
        return 2
    return 0
