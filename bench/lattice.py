"""Speed of the exact lattice path (``releases.engine.lattice``), step by step and regime by regime.

    python -m bench.lattice                 # 20,000 coordinates per case, best of 3
    python -m bench.lattice --n 20000 --json out.json

For each regime of levels it times, in coordinates per second of CPU time
(best of ``--repeat`` runs, each on ``--n`` coordinates; CPU time, so that
other work on a shared machine does not count), ``sample``, ``relax``,
``tighten`` and ``bridge``, with the product's bit source
(``secrets.SystemRandom``) and, for comparison, ``random.Random``:

* levels around 1 (ratios 1.001, 2 and 100 between the two levels) and
  tiny per-unit levels (1e-5 to 1e-3, what a sum counted in grid units has);
* path inputs: the noise the engine itself makes (``sample`` at the lower
  level, then ``relax`` to the upper one), and, for the bridge, fixed
  worst-case inputs: both ends equal (``x_lo == x_hi = 0``) and ends a
  million units apart.

Beside them, in the same run and on the same number of coordinates, the
float path's baseline: numpy's Laplace sampler and ``releases.engine.mechanism.relax``.
Last, a listing of 1,000 values (weights 3 for counts, 3 * 10^4 for sums in
grid units) released through ``lattice.step``: the first level, then a relax,
a tighten and a bridge, each timed in CPU time and in wall-clock time.

Targets: at least 20,000 coordinates a second for every step in every regime
with the product's bit source, and each release of the 1,000-value listing
under 100 ms (CPU time). The exit status is 1 if one is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from bench.engine import machine
from bench.stamp import write_json
from releases.engine import lattice, mechanism

TARGET_RATE = 20_000
TARGET_LISTING_MS = 100.0
FAR = 10**6  # the bridge's far-apart ends

# (label, lo, hi); the bridge's middle level is the midpoint.
REGIMES = [
    ("1 -> 1.001", Fraction(1), Fraction(1001, 1000)),
    ("1 -> 2", Fraction(1), Fraction(2)),
    ("0.1 -> 10", Fraction(1, 10), Fraction(10)),
    ("1e-5 -> 1.001e-5", Fraction(1, 10**5), Fraction(1001, 10**8)),
    ("1e-5 -> 2e-5", Fraction(1, 10**5), Fraction(2, 10**5)),
    ("1e-5 -> 1e-3", Fraction(1, 10**5), Fraction(1, 10**3)),
]
STEPS = ["sample", "relax", "tighten", "bridge", "bridge x_lo=x_hi", "bridge |d|=1e6"]


def best_of(fn, repeat: int, clock=time.process_time) -> float:
    """The shortest of ``repeat`` runs of ``fn``, in seconds of ``clock``."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return max(best, 1e-9)


def regime_cases(lo: Fraction, hi: Fraction, n: int, rng):
    """The timed calls of one regime; their inputs are made here, outside the timing."""
    mid = (lo + hi) / 2
    x = lattice.sample(lo, n, rng)
    y = lattice.relax(x, lo, hi, rng)
    zero = np.zeros(n, dtype=np.int64)
    far = np.full(n, FAR, dtype=np.int64)
    return {
        "sample": lambda: lattice.sample(lo, n, rng),
        "relax": lambda: lattice.relax(x, lo, hi, rng),
        "tighten": lambda: lattice.tighten(y, hi, lo, rng),
        "bridge": lambda: lattice.bridge(x, lo, y, hi, mid, rng),
        "bridge x_lo=x_hi": lambda: lattice.bridge(zero, lo, zero, hi, mid, rng),
        "bridge |d|=1e6": lambda: lattice.bridge(zero, lo, far, hi, mid, rng),
    }


def run_regimes(n: int, repeat: int, sources):
    rows = []
    for label, lo, hi in REGIMES:
        row = {"regime": label, "lo": str(lo), "hi": str(hi)}
        for name, make in sources.items():
            cases = regime_cases(lo, hi, n, make())
            row[name] = {step: n / best_of(fn, repeat) for step, fn in cases.items()}
        rows.append(row)
    return rows


def run_baseline(n: int, repeat: int):
    gen = np.random.default_rng()  # numpy's own sampler as the baseline: speed only
    x = gen.laplace(0.0, 1.0, n)
    return {
        "numpy laplace": n / best_of(lambda: gen.laplace(0.0, 1.0, n), repeat),
        "float relax": n / best_of(lambda: mechanism.relax(x, 1.0, 2.0, gen), repeat),
    }


def run_listing(repeat: int, size: int = 1000):
    """One listing of ``size`` values, half counts (weight 3), half sums (weight 3 * 10^4)."""
    weights = [3] * (size // 2) + [3 * 10**4] * (size - size // 2)
    rng = lattice.new_rng()
    first, _ = lattice.step("1", weights, rng)
    upper, _ = lattice.step("2", weights, rng, below=(Fraction(1), first))
    releases = {
        "initial (eps 1)": lambda: lattice.step("1", weights, rng),
        "relax (1 -> 2)": lambda: lattice.step("2", weights, rng, below=(Fraction(1), first)),
        "tighten (1 -> 0.5)": lambda: lattice.step("0.5", weights, rng, above=(Fraction(1), first)),
        "bridge (1.5 in 1, 2)": lambda: lattice.step(
            "1.5", weights, rng, below=(Fraction(1), first), above=(Fraction(2), upper)
        ),
    }
    return {
        name: {"cpu_ms": best_of(fn, repeat) * 1e3, "wall_ms": best_of(fn, repeat, time.perf_counter) * 1e3}
        for name, fn in releases.items()
    }


def print_table(title: str, rows, source: str) -> None:
    print(f"\n{title}")
    print(f"{'levels':>18} " + " ".join(f"{s:>17}" for s in STEPS))
    for row in rows:
        print(f"{row['regime']:>18} " + " ".join(f"{row[source][s]:>17,.0f}" for s in STEPS))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="coordinates per timed call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    load = os.getloadavg()[0]
    sources = {"system": secrets.SystemRandom, "random": lambda: random.Random(12345)}
    rows = run_regimes(args.n, args.repeat, sources)
    baseline = run_baseline(args.n, args.repeat)
    listing = run_listing(args.repeat)

    print(f"machine: {machine()}; load average {load:.1f} at the start")
    print_table("coordinates per CPU second, secrets.SystemRandom (the product's bit source)", rows, "system")
    print_table("coordinates per CPU second, random.Random (for comparison)", rows, "random")
    print("\nfloat path baseline, coordinates per CPU second: " + ", ".join(f"{k} {v:,.0f}" for k, v in baseline.items()))
    print("\n1,000-value listing through lattice.step (weights 3 and 3e4), ms per release (CPU / wall):")
    for name, ms in listing.items():
        print(f"  {name:>22}: {ms['cpu_ms']:7.1f} / {ms['wall_ms']:7.1f}")

    worst = min(min(row["system"].values()) for row in rows)
    slowest = max(ms["cpu_ms"] for ms in listing.values())
    ok = worst >= TARGET_RATE and slowest <= TARGET_LISTING_MS
    print(
        f"\ntarget >= {TARGET_RATE:,} coordinates a second per step (worst {worst:,.0f}) and "
        f"a 1,000-value release <= {TARGET_LISTING_MS:.0f} ms (slowest {slowest:.1f} ms): "
        f"{'met' if ok else 'MISSED'}"
    )
    if args.json:
        report = {"load": load, "n": args.n, "repeat": args.repeat, "regimes": rows, "baseline": baseline,
                  "listing_ms": listing, "met": ok}
        write_json(args.json, "lattice", report)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
