"""Speed of the exact lattice path (``releases.engine.lattice``), step by step and regime by regime.

    python -m bench.lattice                 # 20,000 coordinates per case, best of 3
    python -m bench.lattice --n 20000 --json out.json

For each regime of levels it times, in coordinates per second of CPU time
(best of ``--repeat`` runs, each on ``--n`` coordinates; CPU time, so that
other work on a shared machine does not count), ``sample``, ``relax``,
``tighten`` and ``bridge``, with the product's bit source
(``lattice.new_rng()``: ChaCha20 under a key from ``os.urandom``) and, for comparison,
``random.Random``:

* levels around 1 (ratios 1.001, 2 and 100 between the two levels) and
  tiny per-unit levels (1e-5 to 1e-3, what a sum counted in grid units has);
* path inputs: the noise the engine itself makes (``sample`` at the lower
  level, then ``relax`` to the upper one), and, for the bridge, fixed
  worst-case inputs: both ends equal (``x_lo == x_hi = 0``) and ends a
  million units apart.

Beside them, in the same run and on the same number of coordinates, the
float path's baseline: numpy's Laplace sampler and ``releases.engine.mechanism.relax``.
Last, a listing of 1,000 values (weights 3 for counts, 3 * 10^4 for sums in
grid units on a grid of 0.01) released through each engine's mechanism object
(``step`` then ``values``, what the release service runs for a new level): the
first level, then a relax, a tighten and a bridge, each timed in CPU time and
in wall-clock time (best of ``max(--repeat, 10)``), on the lattice and, in the
same run on the same values and levels, on the float path, with the ratio.

Targets: at least 20,000 coordinates a second for every step in every regime
with the product's bit source, each release of the 1,000-value listing under
100 ms (CPU time), and within 1.3x the float path's CPU time. The exit status
is 1 if one is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np

from bench.engine import machine
from bench.stamp import write_json
from releases.engine import lattice, mechanism, mechanisms

TARGET_RATE = 20_000
TARGET_LISTING_MS = 100.0
TARGET_RATIO = 1.3  # a lattice release's CPU time over the float path's, same values, same run
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


def _release_pair(size: int):
    """The four releases of a ``size``-value listing (half counts of weight 3, half sums of weight
    3 * 10^4 on a grid of 0.01), each on the exact lattice path and on the float path: the same
    answer, the same levels, each engine's own step and released values (``mechanism.step`` then
    ``mechanism.values``, what ``releases.services`` runs for a new level), its own bit source."""
    lattice_engine, float_engine = mechanisms.mechanism("lattice"), mechanisms.mechanism("laplace")
    weights = [3] * (size // 2) + [3 * 10**4] * (size - size // 2)
    grids = ["1"] * (size // 2) + ["0.01"] * (size - size // 2)
    answer = np.arange(size, dtype=np.int64) * 7
    lower, upper = [0] * size, [10**9] * size
    levels = {"initial (eps 1)": ("1", (), ()), "relax (1 -> 2)": ("2", ("1",), ()),
              "tighten (1 -> 0.5)": ("0.5", (), ("1",)), "bridge (1.5 in 1, 2)": ("1.5", ("1",), ("2",))}

    def engine_releases(engine, rng, exact):
        number = Fraction if exact else float
        first, _ = engine.step(number("1"), dim=size, weights=weights, rng=rng)
        upper_noise, _ = engine.step(number("2"), dim=size, weights=weights, rng=rng, below=(number("1"), first))
        known = {"1": first, "2": upper_noise}

        def release(level, below, above):
            sides = {name: (number(at[0]), known[at[0]]) for name, at in (("below", below), ("above", above)) if at}
            noise, _ = engine.step(number(level), dim=size, weights=weights, rng=rng, **sides)
            return engine.values(answer if exact else answer.astype(np.float64), noise, level=Decimal(level),
                                 weights=weights, lower=lower, upper=upper, grids=grids)

        return {name: (lambda a=args: release(*a)) for name, args in levels.items()}

    return (engine_releases(lattice_engine, lattice.new_rng(), True),
            engine_releases(float_engine, mechanism.new_rng(), False))


def run_listing(repeat: int, size: int = 1000):
    """Each release of a ``size``-value listing on the lattice and, in the same run, on the float
    path, in CPU and wall-clock time (best of ``repeat``), and the lattice's time over the float's."""
    exact, floats = _release_pair(size)
    out = {}
    for name in exact:
        row = {}
        for prefix, fns in (("", exact), ("float_", floats)):
            row[prefix + "cpu_ms"] = best_of(fns[name], repeat) * 1e3
            row[prefix + "wall_ms"] = best_of(fns[name], repeat, time.perf_counter) * 1e3
        row["ratio_cpu"] = row["cpu_ms"] / row["float_cpu_ms"]
        row["ratio_wall"] = row["wall_ms"] / row["float_wall_ms"]
        out[name] = row
    return out


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
    parser.add_argument("--listing-only", action="store_true", help="time the 1,000-value listing alone (no JSON)")
    args = parser.parse_args(argv)
    if args.listing_only:
        for name, ms in run_listing(max(args.repeat, 10)).items():
            print(f"{name:>22}: lattice {ms['cpu_ms']:6.2f} ms CPU, float {ms['float_cpu_ms']:5.2f} ms, "
                  f"ratio {ms['ratio_cpu']:4.1f}x (wall {ms['ratio_wall']:4.1f}x)")
        return 0

    load = os.getloadavg()[0]
    sources = {"system": lattice.new_rng, "random": lambda: random.Random(12345)}
    rows = run_regimes(args.n, args.repeat, sources)
    baseline = run_baseline(args.n, args.repeat)
    listing = run_listing(max(args.repeat, 10))

    print(f"machine: {machine()}; load average {load:.1f} at the start")
    print_table("coordinates per CPU second, the product's bit source (lattice.new_rng)", rows, "system")
    print_table("coordinates per CPU second, random.Random (for comparison)", rows, "random")
    print("\nfloat path baseline, coordinates per CPU second: " + ", ".join(f"{k} {v:,.0f}" for k, v in baseline.items()))
    print("\n1,000-value listing (weights 3 and 3e4), step and values, ms per release (CPU / wall),"
          " lattice then the float path in the same run, and the ratio:")
    for name, ms in listing.items():
        print(f"  {name:>22}: lattice {ms['cpu_ms']:7.2f} / {ms['wall_ms']:7.2f}   float {ms['float_cpu_ms']:6.2f} / "
              f"{ms['float_wall_ms']:6.2f}   ratio {ms['ratio_cpu']:5.1f}x / {ms['ratio_wall']:5.1f}x")

    worst = min(min(row["system"].values()) for row in rows)
    slowest = max(ms["cpu_ms"] for ms in listing.values())
    ratio = max(ms["ratio_cpu"] for ms in listing.values())
    ok = worst >= TARGET_RATE and slowest <= TARGET_LISTING_MS
    ratio_ok = ratio <= TARGET_RATIO
    print(
        f"\ntarget >= {TARGET_RATE:,} coordinates a second per step (worst {worst:,.0f}) and "
        f"a 1,000-value release <= {TARGET_LISTING_MS:.0f} ms (slowest {slowest:.1f} ms): "
        f"{'met' if ok else 'MISSED'}"
    )
    print(f"target: a lattice release <= {TARGET_RATIO}x the float path's CPU time (largest ratio {ratio:.1f}x): "
          f"{'met' if ratio_ok else 'MISSED'}")
    ok = ok and ratio_ok
    if args.json:
        report = {"load": load, "n": args.n, "repeat": args.repeat, "regimes": rows, "baseline": baseline,
                  "listing_ms": listing, "target_ratio": TARGET_RATIO, "met": ok}
        write_json(args.json, "lattice", report)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
