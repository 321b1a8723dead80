"""The load bench's verdicts and report (bench/load/targets.py, report.py, figures.py, client.py),
from made-up runs: which target passes or misses, the exit status, and what the tables say."""

from collections import Counter

import pytest

from bench.load.buyers import BuyerLog
from bench.load.client import wait_applied
from bench.load.figures import product_figures
from bench.load.report import format_side_by_side, format_targets
from bench.load.targets import compare, exit_status, ratio, verdicts


def _latency(p99, p50=None):
    return {"p50": p50 if p50 is not None else p99 / 2, "p95": p99 * 0.9, "p99": p99, "mean": p99 / 2,
            "max": p99, "n": 100}


def product(rate, p99_release, invariants_ok=True):
    return {"kind": "product", "figures": {
        "purchases_per_s": rate, "errors": {},
        "latency_ms": {"purchase_post": _latency(40.0), "purchase_to_release_client": _latency(p99_release)}},
        "invariants": {"every transfer balances": {"ok": invariants_ok, "violations": 0 if invariants_ok else 3,
                                                   "detail": ""}}}


def baseline(rate):
    return {"kind": "baseline", "figures": {"requests_per_s": rate, "errors": {"debit 500": 2},
                                            "latency_ms": {"request": _latency(20.0)}},
            "invariants": {"every debit balances": {"ok": True, "violations": 0, "detail": ""}}}


def judged(runs):
    comparison = compare(runs)
    return comparison, {r["target"].split(" (")[0]: r for r in verdicts(runs, comparison, buyers=50)}


def test_ratio_needs_both_rates_and_a_baseline_that_served():
    assert ratio(130.0, 520.0) == pytest.approx(0.25)
    assert ratio(None, 520.0) is None and ratio(130.0, None) is None and ratio(130.0, 0.0) is None


def test_targets_met_and_missed_each_for_its_own_figure():
    runs = {"baseline spread": baseline(520.0), "baseline hot": baseline(410.0),
            "product spread": product(300.0, 250.0), "product hot": product(150.0, 900.0)}
    comparison, rows = judged(runs)
    assert comparison["spread"]["ratio"] == pytest.approx(300 / 520, abs=1e-4)
    assert rows["purchases/s over the spread baseline's requests/s"]["verdict"] == "PASS"  # 57.7% >= 50%
    assert rows["purchases/s over the hot baseline's requests/s"]["verdict"] == "MISS"  # 36.6% < 40%
    assert rows["purchase -> release p99, as the buyer sees it"]["verdict"] == "PASS"  # the hot p99 is not judged
    assert rows["every invariant holds"]["verdict"] == "PASS"
    assert exit_status(list(rows.values()), check_target=True) == 2
    assert exit_status(list(rows.values()), check_target=False) == 0


def test_the_bounds_themselves_pass():
    runs = {"baseline spread": baseline(500.0), "baseline hot": baseline(400.0),
            "product spread": product(250.0, 300.0), "product hot": product(160.0, 300.0)}
    _, rows = judged(runs)
    assert {r["verdict"] for r in rows.values()} == {"PASS"}
    assert exit_status(list(rows.values()), check_target=True) == 0


def test_a_slow_release_misses_even_at_a_good_rate():
    runs = {"baseline spread": baseline(500.0), "product spread": product(400.0, 300.5)}
    _, rows = judged(runs)
    assert rows["purchase -> release p99, as the buyer sees it"]["verdict"] == "MISS"
    assert rows["purchases/s over the hot baseline's requests/s"]["verdict"] == "n/a"  # --no-hot


def test_a_broken_invariant_exits_1_whatever_the_rates():
    runs = {"baseline spread": baseline(100.0), "product spread": product(100.0, 10.0, invariants_ok=False)}
    _, rows = judged(runs)
    assert rows["every invariant holds"]["verdict"] == "MISS"
    assert rows["every invariant holds"]["value"] == ["product spread: every transfer balances"]
    assert exit_status(list(rows.values()), check_target=False) == 1
    assert exit_status(list(rows.values()), check_target=True) == 1


def test_without_the_baseline_the_ratios_are_not_judged():
    runs = {"product spread": product(20.0, 3600.0), "product hot": product(12.0, 5000.0)}
    comparison, rows = judged(runs)
    assert comparison["spread"] == {"product_purchases_per_s": 20.0, "baseline_requests_per_s": None, "ratio": None}
    assert rows["purchases/s over the spread baseline's requests/s"]["verdict"] == "n/a"
    assert rows["purchases/s over the hot baseline's requests/s"]["verdict"] == "n/a"
    assert rows["purchase -> release p99, as the buyer sees it"]["verdict"] == "MISS"
    assert exit_status(list(rows.values()), check_target=True) == 2


def test_the_tables_show_rates_ratios_and_verdicts():
    runs = {"baseline spread": baseline(520.0), "baseline hot": baseline(410.0),
            "product spread": product(18.0, 3600.0), "product hot": product(205.0, 250.0)}
    comparison = compare(runs)
    table = format_side_by_side(runs, comparison)
    lines = table.strip().splitlines()
    assert [n in lines[1] for n in ("baseline spread", "product spread", "baseline hot", "product hot")] == [True] * 4
    rate_row = next(line for line in lines if line.startswith("rate"))
    assert rate_row.split()[1:] == ["520.0", "req/s", "18.0", "purch/s", "410.0", "req/s", "205.0", "purch/s"]
    p99_row = next(line for line in lines if line.startswith("purchase -> release p99"))
    assert p99_row.split()[-4:] == ["-", "3600.0", "-", "250.0"]
    assert "product / baseline, spread: 18.0 purchases/s over 520.0 requests/s = 3.5%" in table
    assert "product / baseline, hot: 205.0 purchases/s over 410.0 requests/s = 50.0%" in table
    targets = format_targets(verdicts(runs, comparison, buyers=50)).strip().splitlines()
    verdict = lambda start: next(line for line in targets if line.startswith(start)).split()[-2:]  # noqa: E731
    assert verdict("purchases/s over the spread baseline's") == ["3.5%", "MISS"]
    assert verdict("purchases/s over the hot baseline's") == ["50.0%", "PASS"]
    assert verdict("purchase -> release p99") == ["ms", "MISS"]  # "3600 ms"
    assert "3600 ms" in next(line for line in targets if line.startswith("purchase -> release p99"))
    assert verdict("every invariant holds") == ["hold", "PASS"]  # "all hold"


def test_prefer_wait_applied_is_read_from_the_header():
    assert wait_applied({"preference-applied": "wait=5"})
    assert wait_applied({"preference-applied": "return=minimal, wait=5"})
    assert not wait_applied({"preference-applied": "return=minimal"})
    assert not wait_applied({})


def test_product_figures_count_the_window_and_the_honoured_waits():
    log = BuyerLog()
    # (start, seconds, status, wait honoured): one POST before the window, two in it (one refused)
    log.posts = [(9.0, 0.1, 202, False), (10.5, 0.2, 202, True), (11.0, 0.3, 409, False)]
    log.polls = [(10.6, 0.05, 200, True), (10.7, 0.05, 200, False), (20.0, 0.05, 200, True)]
    log.releases = [(10.5, 0.4, "released", "p1")]
    log.errors = Counter({"purchase 409": 1})
    f = product_figures([log], 10.0, 12.0, wait=5)
    assert f["purchases"] == 1 and f["purchases_per_s"] == 0.5
    assert f["prefer_wait"] == {"sent": 5, "post": {"honoured": 1, "of": 2}, "get": {"honoured": 1, "of": 2}}
    assert f["latency_ms"]["purchase_to_release_client"]["p99"] == pytest.approx(400.0)
    assert f["errors"] == {"purchase 409": 1}
