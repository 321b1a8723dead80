"""Speed of the exact Skellam path (``releases.engine.skellam``), beside the lattice path in the same run.

    python -m bench.skellam                 # 20,000 coordinates per case, best of 3
    python -m bench.skellam --n 20000 --json docs/perf/skellam.json

For each noise size, in coordinates per CPU second (best of ``--repeat`` runs of ``--n``
coordinates, CPU time), with the product's bit source (``lattice.new_rng()``): the Skellam path's
first draw, more noise (``tighten``, time x 2), less noise (``relax``, time / 2) and a time between
two stored ones (``bridge``); and, as the baseline, the lattice path's steps at the level whose
discrete Laplace noise has the same variance (``2 mu = 2 a / (1 - a)^2``, ``a = e^{-level}``),
between the same two noise sizes.

The sizes: a Skellam time ``mu`` of 4.5, 50 and 5,000 (standard deviations 3, 10 and 100 counts:
a count released at eps 1 with delta 1e-6 is about the first; a sum's grid units the last). No
target: the figures say what the Skellam path costs beside the lattice's.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from fractions import Fraction
from pathlib import Path

from bench.engine import machine
from bench.stamp import write_json
from releases.engine import lattice, skellam

TIMES = [Fraction(9, 2), Fraction(50), Fraction(5000)]


def best_of(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def lattice_level(mu: Fraction) -> Fraction:
    """The lattice level whose discrete Laplace variance ``2a/(1-a)^2`` is ``2 mu`` (a rational
    near it: speed only)."""
    a = 1 + 1 / (2 * float(mu)) - math.sqrt((1 + 1 / (2 * float(mu))) ** 2 - 1)
    return Fraction(-math.log(a)).limit_denominator(10**6)


def steps(engine, first, second, at_first, at_second, n: int, *, lower_first: bool) -> dict:
    """The four timed steps of ``engine`` between its points ``at_first`` (less noise, at ``first``)
    and ``at_second`` (more noise): the first draw at ``first``, more noise (first to second), less
    noise (second to first) and the point halfway. ``lower_first``: the engine's bridge takes the
    point at ``first`` as its lower one (Skellam times; the lattice's lower level is ``second``)."""
    mid = (first + second) / 2
    ends = (at_first, first, at_second, second) if lower_first else (at_second, second, at_first, first)
    return {
        "sample": lambda: engine.sample(first, n, lattice.new_rng()),
        "tighten": lambda: engine.tighten(at_first, first, second, lattice.new_rng()),
        "relax": lambda: engine.relax(at_second, second, first, lattice.new_rng()),
        "bridge": lambda: engine.bridge(*ends, mid, lattice.new_rng()),
    }


def cases(mu: Fraction, n: int):
    """The Skellam path between times ``mu`` and ``2 mu``, and the lattice between the levels of the
    same two noise sizes (more noise is a larger time and a lower level)."""
    rng = lattice.new_rng()
    at_low = skellam.sample(mu, n, rng)
    out = steps(skellam, mu, 2 * mu, at_low, skellam.tighten(at_low, mu, 2 * mu, rng), n, lower_first=True)
    lvl_high, lvl_low = lattice_level(mu), lattice_level(2 * mu)
    x_high = lattice.sample(lvl_high, n, rng)
    base = steps(lattice, lvl_high, lvl_low, x_high, lattice.tighten(x_high, lvl_high, lvl_low, rng), n,
                 lower_first=False)
    return out, base


def run(n: int, repeat: int) -> list[dict]:
    rows = []
    for mu in TIMES:
        out, base = cases(mu, n)
        row = {"mu": str(mu), "sd": math.sqrt(2 * float(mu)), "skellam": {}, "lattice": {}}
        for step in out:
            row["skellam"][step] = n / best_of(out[step], repeat)
            row["lattice"][step] = n / best_of(base[step], repeat)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="coordinates per timed call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    rows = run(args.n, args.repeat)
    print(f"machine: {machine()}; load average {load:.1f} at the start")
    print(f"coordinates per CPU second ({args.n:,} coordinates, best of {args.repeat}); the lattice at the same variance")
    print(f"{'mu (sd)':>16} " + " ".join(f"{s:>22}" for s in ("sample", "tighten", "relax", "bridge")))
    for row in rows:
        cells = [f"{row['skellam'][s]:>10,.0f} / {row['lattice'][s]:>9,.0f}" for s in ("sample", "tighten", "relax", "bridge")]
        print(f"{row['mu'] + ' (' + format(row['sd'], '.0f') + ')':>16} " + " ".join(cells))
    if args.json:
        write_json(args.json, "skellam", {"n": args.n, "repeat": args.repeat, "load": load, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
