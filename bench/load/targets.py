"""The product against its baseline: ratios, and the targets of issue 14 with a verdict each.

* spread: the product's purchases per second at least 50% of the baseline's requests per
  second, and purchase -> release (as the buyer sees it) p99 at most 300 ms;
* hot (every buyer on one listing / one budget row): at least 40% of the hot baseline;
* every invariant of every run holds.

A verdict is ``PASS``, ``MISS``, or ``n/a`` when a run it needs was left out (``--no-baseline``,
``--no-hot``). Pure functions of a report's runs: no server, no database.
"""

from __future__ import annotations

SPREAD_RATIO = 0.50
HOT_RATIO = 0.40
P99_MS = 300.0
INVARIANTS = "every invariant holds"


def ratio(product: float | None, baseline: float | None) -> float | None:
    """product / baseline, or None when either is missing or the baseline served nothing."""
    if product is None or baseline is None or baseline <= 0:
        return None
    return product / baseline


def compare(runs: dict) -> dict:
    """Per mode: the product's purchases/s, the baseline's requests/s and their ratio."""
    out = {}
    for mode in ("spread", "hot"):
        product, baseline = runs.get(f"product {mode}"), runs.get(f"baseline {mode}")
        rate = product["figures"]["purchases_per_s"] if product else None
        base = baseline["figures"]["requests_per_s"] if baseline else None
        r = ratio(rate, base)
        out[mode] = {"product_purchases_per_s": rate, "baseline_requests_per_s": base,
                     "ratio": None if r is None else round(r, 4)}
    return out


def _verdict(name: str, wanted: str, value, shown: str, ok: bool | None) -> dict:
    return {"target": name, "wanted": wanted, "value": value, "shown": shown,
            "verdict": "n/a" if ok is None else "PASS" if ok else "MISS"}


def verdicts(runs: dict, comparison: dict, buyers: int) -> list[dict]:
    """One row per target: what was wanted, what was measured, PASS / MISS / n/a."""
    rows = []
    for mode, least in (("spread", SPREAD_RATIO), ("hot", HOT_RATIO)):
        r = comparison[mode]["ratio"]
        where = "buyers over the listings" if mode == "spread" else "buyers on one listing"
        rows.append(_verdict(
            f"purchases/s over the {mode} baseline's requests/s ({buyers} {where})", f">= {least:.0%}",
            r, "-" if r is None else f"{r:.1%}", None if r is None else r >= least))
    spread = runs.get("product spread")
    p99 = spread["figures"]["latency_ms"]["purchase_to_release_client"]["p99"] if spread else None
    rows.append(_verdict(
        f"purchase -> release p99, as the buyer sees it ({buyers} buyers over the listings)", f"<= {P99_MS:g} ms",
        p99, "-" if p99 is None else f"{p99:.0f} ms", None if spread is None else p99 is not None and p99 <= P99_MS))
    failed = [f"{run}: {name}" for run, v in runs.items() for name, inv in v.get("invariants", {}).items()
              if not inv["ok"]]
    checked = any("invariants" in v for v in runs.values())
    rows.append(_verdict(INVARIANTS, "all", failed, "all hold" if not failed else f"{len(failed)} fail",
                         None if not checked else not failed))
    return rows


def exit_status(rows: list[dict], check_target: bool) -> int:
    """1 if an invariant fails; else 2 if ``check_target`` and a target is missed; else 0."""
    if any(r["target"] == INVARIANTS and r["verdict"] == "MISS" for r in rows):
        return 1
    if check_target and any(r["verdict"] == "MISS" for r in rows):
        return 2
    return 0
