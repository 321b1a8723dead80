"""The load bench's verdicts and report (bench/load/targets.py, report.py, figures.py, openloop.py,
client.py), from made-up runs: which target passes or misses, the exit status, what the tables say,
and the open loop's arrivals and figures."""

import queue
import statistics
import threading
from collections import Counter

import pytest

from bench.load.buyers import BuyerLog
from bench.load.client import wait_applied
from bench.load.figures import cpu_per_purchase, product_figures
from bench.load.openloop import Arrival, OpenLoop, dispatcher, open_figures
from bench.load.report import format_side_by_side, format_targets
from bench.load.targets import compare, exit_status, keeps_up, ratio, verdicts


def _latency(p99, p50=None):
    return {"p50": p50 if p50 is not None else p99 / 2, "p95": p99 * 0.9, "p99": p99, "mean": p99 / 2,
            "max": p99, "n": 100}


def run(kind, mode, rate, cpu, invariants_ok=True, open_loop=None, open_rate=None):
    figures = {"purchases_per_s": rate, "errors": {}, "cpu_ms_per_purchase": {
        "web": cpu * 0.5, "worker": cpu * 0.3, "db": cpu * 0.2, "total": cpu},
        "latency_ms": {"purchase_post": _latency(40.0), "purchase_to_release_client": _latency(90.0)}}
    if open_loop:
        figures["open_loop"] = open_loop
    out = {"kind": kind, "mode": mode, "figures": figures,
           "invariants": {"every transfer balances": {"ok": invariants_ok, "violations": 0 if invariants_ok else 3,
                                                      "detail": ""}}}
    if open_rate:
        out["rate"] = open_rate
    return out


def opened(offered, achieved, backlog, p99):
    return {"offered_per_s": offered, "achieved_per_s": achieved, "achieved_over_offered": achieved / offered,
            "backlog_at_end": backlog, "latency_from_arrival_ms": _latency(p99)}


def full(spread_cpu=20.0, hot_cpu=20.0, p99_20=250.0, open40=(40.0, 39.0, 6, 900.0), broken=False):
    return {
        "baseline spread": run("baseline", "spread", 90.0, 19.0), "product spread": run("product", "spread", 60.0, spread_cpu),
        "baseline hot": run("baseline", "hot", 80.0, 18.0),
        "product hot": run("product", "hot", 50.0, hot_cpu, invariants_ok=not broken),
        "baseline open 20/s": run("baseline", "open", 20.0, 19.0, open_loop=opened(20.0, 20.0, 1, 60.0), open_rate=20.0),
        "product open 20/s": run("product", "open", 20.0, 25.0, open_loop=opened(20.0, 20.0, 2, p99_20), open_rate=20.0),
        "product open 40/s": run("product", "open", 40.0, 25.0, open_loop=opened(*open40), open_rate=40.0),
    }


def judged(runs):
    comparison = compare(runs)
    return comparison, {r["target"].split(" (")[0].split(":")[0]: r for r in verdicts(runs, comparison, buyers=50)}


def test_ratio_needs_both_figures_and_a_positive_baseline():
    assert ratio(130.0, 520.0) == pytest.approx(0.25)
    assert ratio(None, 520.0) is None and ratio(130.0, None) is None and ratio(130.0, 0.0) is None


def test_cpu_per_purchase_is_web_worker_and_our_database_backends():
    cpu = {"by_part": {"gunicorn": {"cpu_ms_per_purchase": 9.5}, "celery": {"cpu_ms_per_purchase": 5.25},
                       "postgres: our backends": {"cpu_ms_per_purchase": 3.0},
                       "postgres: other (WAL writer, checkpointer, other databases)": {"cpu_ms_per_purchase": 7.0}}}
    assert cpu_per_purchase(cpu) == {"web": 9.5, "worker": 5.25, "db": 3.0, "total": 17.75}


def test_targets_met_and_missed_each_for_its_own_figure():
    comparison, rows = judged(full(spread_cpu=19.0, hot_cpu=18.5, p99_20=300.5))
    assert comparison["spread"]["cpu_ratio"] == 1.0 and comparison["hot"]["cpu_ratio"] == pytest.approx(18.5 / 18, abs=1e-4)
    assert comparison["spread"]["ratio"] == pytest.approx(60 / 90, abs=1e-4)
    assert rows["CPU per purchase over the baseline's, closed loop, spread"]["verdict"] == "PASS"  # exactly the bound
    assert rows["CPU per purchase over the baseline's, closed loop, hot"]["verdict"] == "MISS"  # 18.5 ms over 18.0
    assert rows["open loop 20/s"]["verdict"] == "MISS"  # 300.5 ms > 300
    assert rows["open loop 40/s"]["verdict"] == "PASS"  # 39 of 40/s, backlog 6, p99 900 ms
    assert rows["every invariant holds"]["verdict"] == "PASS"
    assert exit_status(list(rows.values()), check_target=True) == 2
    assert exit_status(list(rows.values()), check_target=False) == 0


def test_the_bounds_themselves_pass():
    _, rows = judged(full(spread_cpu=19.0, hot_cpu=18.0, p99_20=300.0, open40=(40.0, 38.0, 40, 1000.0)))
    assert {r["verdict"] for r in rows.values()} == {"PASS"}
    assert exit_status(list(rows.values()), check_target=True) == 0


def test_falling_behind_at_40_per_second_misses_even_with_a_good_p99():
    assert not keeps_up(opened(40.0, 37.9, 3, 100.0))  # achieved < 95% of offered
    assert not keeps_up(opened(40.0, 40.0, 41, 100.0))  # more than a second of arrivals left
    assert keeps_up(opened(40.0, 38.0, 40, 100.0))
    _, rows = judged(full(open40=(40.0, 30.0, 195, 400.0)))
    assert rows["open loop 40/s"]["verdict"] == "MISS"
    assert "backlog 195" in rows["open loop 40/s"]["shown"]


def test_a_broken_invariant_exits_1_whatever_the_figures():
    _, rows = judged(full(broken=True))
    assert rows["every invariant holds"]["verdict"] == "MISS"
    assert rows["every invariant holds"]["value"] == ["product hot: every transfer balances"]
    assert exit_status(list(rows.values()), check_target=False) == 1
    assert exit_status(list(rows.values()), check_target=True) == 1


def test_without_the_baseline_or_a_run_the_target_is_not_judged():
    runs = {"product spread": run("product", "spread", 20.0, 30.0)}
    comparison, rows = judged(runs)
    assert comparison["spread"]["cpu_ratio"] is None and comparison["spread"]["baseline_purchases_per_s"] is None
    assert {r["verdict"] for k, r in rows.items() if k != "every invariant holds"} == {"n/a"}
    assert exit_status(list(rows.values()), check_target=True) == 0


def test_the_tables_show_rates_cpu_ratios_and_verdicts():
    runs = full(spread_cpu=38.0)
    comparison = compare(runs)
    table = format_side_by_side(runs, comparison)
    lines = table.strip().splitlines()
    assert all(name in lines[1] for name in runs)
    cpu_row = next(line for line in lines if line.startswith("CPU ms per purchase: total"))
    assert cpu_row.split()[5:] == ["19.0", "38.0", "18.0", "20.0", "19.0", "25.0", "25.0"]
    backlog = next(line for line in lines if line.startswith("open: backlog at end"))
    assert backlog.split()[4:] == ["-", "-", "-", "-", "1", "2", "6"]
    assert "CPU per purchase 38.0 over 19.0 ms = 200.0%" in table
    assert "product / baseline, hot: 50.0 over 80.0 purchases/s = 62.5%" in table
    targets = format_targets(verdicts(runs, comparison, buyers=50)).strip().splitlines()
    row = lambda start: next(line for line in targets if line.startswith(start))  # noqa: E731
    assert row("CPU per purchase over the baseline's, closed loop, spread").split()[-1] == "MISS"
    assert "38.0/19.0 ms = 200% (aim 67%)" in row("CPU per purchase over the baseline's, closed loop, spread")
    assert row("open loop 20/s").split()[-3:] == ["250", "ms", "PASS"]
    assert row("every invariant holds").split()[-1] == "PASS"


def test_arrivals_are_poisson_at_the_rate_asked():
    """A fixed seed, 20/s for 3 s: about 60 arrivals, exponential gaps of mean 50 ms (mean = sd).
    A dispatcher drawing gaps at the wrong rate, or evenly spaced, fails here."""
    loop, work, stop = OpenLoop(rate=20.0), queue.Queue(), threading.Event()
    th = threading.Thread(target=dispatcher, args=(loop, work, stop, 7))
    th.start()
    stop.wait(3.0)
    stop.set()
    th.join()
    times = [a.scheduled for a in loop.arrivals]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert 40 <= len(times) <= 80
    assert statistics.mean(gaps) == pytest.approx(0.05, rel=0.3)
    assert statistics.stdev(gaps) == pytest.approx(statistics.mean(gaps), rel=0.35)  # exponential, not even
    assert work.qsize() == len(times) + 1  # every arrival handed out, then the end mark


def test_open_figures_count_latency_from_the_scheduled_arrival_and_the_backlog():
    loop = OpenLoop(rate=2.0)
    # in the window [10, 12): 4 arrivals; one released late (queued behind the others), one never finished
    loop.arrivals = [Arrival(9.5, 9.5, 9.9, "released"), Arrival(10.0, 10.0, 10.2, "released"),
                     Arrival(10.5, 10.9, 11.5, "released"), Arrival(11.0, 11.5, 12.5, "released"),
                     Arrival(11.5, None, None, None), Arrival(12.1, 12.1, 12.2, "released")]
    loop.backlog_at_end = loop.backlog(12.0)
    f = open_figures(loop, 10.0, 12.0)
    assert f["backlog_at_end"] == 2  # scheduled by 12.0, not done by then
    assert f["arrivals"] == 4 and f["offered_per_s"] == 2.0
    assert f["achieved_per_s"] == 1.0  # released in the window: at 10.2 and 11.5
    assert f["abandoned_at_stop"] == 1 and f["released"] == 3
    assert f["latency_from_arrival_ms"]["max"] == pytest.approx(1500.0)  # 11.0 -> 12.5, from the schedule
    assert f["queueing_ms"]["max"] == pytest.approx(500.0)


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
