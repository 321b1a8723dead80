"""Speed and storage of bit-report microdata (``releases.engine.bitreport``) at listing scale.

    python -m bench.microdata                       # 1,000,000 records x 20 bits
    python -m bench.microdata --n 100000 --bits 20 --json out.json

The listing: ``--n`` records of two categorical columns of ``--bits / 2``
categories each, one-hot (``--bits`` bits a record; a record change flips 2
bits per column, so the weight is 4), and a ladder of four record levels
0.5, 1, 2 and 4 (per-bit levels 1/8, 1/4, 1/2 and 1), with the product's word
source (``os.urandom``). Timed, in wall-clock and CPU seconds:

* sampling the noise at the top of the ladder, and each tightening down it;
* for each level, making its report and packing its noise and its report;
* the first release of the bottom level (the worst case): the top sampled,
  tightened down the whole ladder, every level's noise packed (each is stored
  for the later purchases) and the bottom level's report made and packed.

Storage: the packed noise plus the packed report of each level, in bytes per
record-bit and level; peak memory (the process's maximum resident set).

Beside them, in the same run, the baseline: the scalar exact sampler
``releases.engine.lattice.sample`` / ``tighten`` (``secrets.SystemRandom``),
timed on 20,000 coordinates per step and extrapolated to the whole ladder of
the listing, and the naive storage of 8-byte noise plus an 8-byte float
report value (16 bytes a record-bit and level). Also Bloom filters of
``--n`` short strings (32 bits, 2 hashes).

Targets: storage under 2 bytes per record-bit and level, and the first release
of the bottom level under 60 s (wall clock). The exit status is 1 if one is
missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import time
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import numpy as np

from bench.engine import machine
from bench.stamp import write_json
from releases.engine import bitreport, lattice

TARGET_BYTES = 2.0
TARGET_RELEASE_S = 60.0
NAIVE_BYTES = 16.0
RECORD_LEVELS = [Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4)]
COLUMNS = 2
WEIGHT = 2 * COLUMNS
BASELINE_N = 20_000


class Clock:
    """Wall-clock and CPU seconds of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def figures(self) -> dict:
        return {"wall_s": self.wall, "cpu_s": self.cpu}


def one_hot(n: int, bits: int) -> np.ndarray:
    """``n`` records of ``COLUMNS`` categorical columns of ``bits / COLUMNS`` categories, one-hot
    (the categories from a seeded generator: data, not noise)."""
    per = bits // COLUMNS
    cats = np.random.default_rng(1).integers(0, per, size=(n, COLUMNS))
    truth = np.zeros((n, bits), dtype=bool)
    rows = np.arange(n)
    for c in range(COLUMNS):
        truth[rows, c * per + cats[:, c]] = True
    return truth


def run_ladder(truth: np.ndarray) -> dict:
    """The ladder of one listing, from the top down, with the product's word source."""
    src = bitreport.new_source()
    levels = [bitreport.bit_level(eps, WEIGHT) for eps in RECORD_LEVELS][::-1]  # descending
    cells = truth.size
    with Clock() as top:
        noise = bitreport.sample(levels[0], truth.shape, src)
    steps, per_level = [], []
    for i, level in enumerate(levels):
        if i:
            with Clock() as clock:
                noise = bitreport.tighten(noise, levels[i - 1], level, src)
            steps.append({"from": str(levels[i - 1]), "to": str(level), **clock.figures()})
        with Clock() as pack_noise:
            packed_noise = bitreport.pack_noise(noise)
        with Clock() as make_report:
            z = bitreport.report(truth, noise)
            packed_report = bitreport.pack_bits(z)
        per_level.append({
            "record_level": str(RECORD_LEVELS[::-1][i]),
            "bit_level": str(level),
            "pack_noise": pack_noise.figures(),
            "report_and_pack": make_report.figures(),
            "noise_bytes": len(packed_noise),
            "report_bytes": len(packed_report),
            "bytes_per_cell": (len(packed_noise) + len(packed_report)) / cells,
        })
    bottom = per_level[-1]
    sampling = {key: top.figures()[key] + sum(s[key] for s in steps) for key in ("wall_s", "cpu_s")}
    release = {
        key: top.figures()[key]
        + sum(s[key] for s in steps)
        + sum(p["pack_noise"][key] for p in per_level)
        + bottom["report_and_pack"][key]
        for key in ("wall_s", "cpu_s")
    }
    return {"top": {"level": str(levels[0]), **top.figures()}, "steps": steps, "levels": per_level,
            "ladder_sampling": sampling, "bottom_release": release}


def run_baseline(cells: int) -> dict:
    """The scalar exact sampler on ``BASELINE_N`` coordinates per step, extrapolated to ``cells``."""
    rng = secrets.SystemRandom()
    levels = [bitreport.bit_level(eps, WEIGHT) for eps in RECORD_LEVELS][::-1]
    with Clock() as top:
        noise = lattice.sample(levels[0], BASELINE_N, rng)
    wall, cpu = top.wall, top.cpu
    for hi, lo in pairwise(levels):
        with Clock() as clock:
            noise = lattice.tighten(noise, hi, lo, rng)
        wall, cpu = wall + clock.wall, cpu + clock.cpu
    scale = cells / BASELINE_N
    return {"n": BASELINE_N, "ladder_wall_s": wall, "ladder_cpu_s": cpu,
            "extrapolated_wall_s": wall * scale, "extrapolated_cpu_s": cpu * scale,
            "naive_bytes_per_cell": NAIVE_BYTES}


def run_bloom(n: int) -> dict:
    strings = [f"user{i % (n // 2 or 1)}@example.org" for i in range(n)]  # half of them repeated
    with Clock() as clock:
        bitreport.bloom(strings, 32, 2, b"bench-salt")
    return {"strings": n, "distinct": min(n, n // 2 or 1), **clock.figures()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="records")
    parser.add_argument("--bits", type=int, default=20, help="bits a record (two one-hot columns)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.bits < 2 * COLUMNS or args.bits % COLUMNS:
        parser.error(f"--bits must be a multiple of {COLUMNS}, at least {2 * COLUMNS}")

    load = os.getloadavg()[0]
    truth = one_hot(args.n, args.bits)
    cells = truth.size
    ladder = run_ladder(truth)
    baseline = run_baseline(cells)
    bloom = run_bloom(args.n)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"machine: {machine()}; load average {load:.1f} at the start")
    print(f"listing: {args.n:,} records x {args.bits} bits = {cells:,} coordinates; "
          f"record levels {', '.join(map(str, RECORD_LEVELS))} (weight {WEIGHT})")
    top = ladder["top"]
    print(f"\nsample the top (per-bit {top['level']}): {top['wall_s']:.2f} s wall, {top['cpu_s']:.2f} s CPU "
          f"({cells / top['wall_s'] / 1e6:.1f} M coordinates/s)")
    for s in ladder["steps"]:
        print(f"tighten {s['from']:>4} -> {s['to']:<4}: {s['wall_s']:.2f} s wall, {s['cpu_s']:.2f} s CPU")
    print(f"\n{'record':>7} {'per-bit':>7} {'pack noise s':>13} {'report+pack s':>14} "
          f"{'noise B':>12} {'report B':>12} {'B/cell':>7}")
    for p in ladder["levels"]:
        print(f"{p['record_level']:>7} {p['bit_level']:>7} {p['pack_noise']['wall_s']:>13.2f} "
              f"{p['report_and_pack']['wall_s']:>14.2f} {p['noise_bytes']:>12,} {p['report_bytes']:>12,} "
              f"{p['bytes_per_cell']:>7.3f}")
    release = ladder["bottom_release"]
    print(f"\nfirst release of the bottom level (top sampled, whole ladder tightened and stored): "
          f"{release['wall_s']:.2f} s wall, {release['cpu_s']:.2f} s CPU")
    print(f"peak memory (max RSS): {peak_mb:,.0f} MB")
    sampling = ladder["ladder_sampling"]
    print(f"\nbaseline, scalar lattice.sample + tighten on {baseline['n']:,} coordinates: "
          f"{baseline['ladder_wall_s']:.2f} s wall for the ladder; extrapolated to {cells:,}: "
          f"{baseline['extrapolated_wall_s']:,.0f} s wall ({baseline['extrapolated_wall_s'] / 3600:.2f} h)")
    print(f"vectorized, the same ladder (sample the top, three tightenings): {sampling['wall_s']:.2f} s wall, "
          f"{baseline['extrapolated_wall_s'] / sampling['wall_s']:,.0f}x faster")
    print(f"naive storage: {NAIVE_BYTES:.0f} B per record-bit and level (8-byte noise + 8-byte float report)")
    print(f"Bloom filters: {bloom['strings']:,} strings ({bloom['distinct']:,} distinct), 32 bits, 2 hashes: "
          f"{bloom['wall_s']:.2f} s wall")

    worst_bytes = max(p["bytes_per_cell"] for p in ladder["levels"])
    ok = worst_bytes < TARGET_BYTES and release["wall_s"] < TARGET_RELEASE_S
    print(f"\ntarget < {TARGET_BYTES} B per record-bit and level (worst {worst_bytes:.3f}) and the bottom "
          f"release < {TARGET_RELEASE_S:.0f} s ({release['wall_s']:.2f} s): {'met' if ok else 'MISSED'}")
    if args.json:
        out = {"load": load, "n": args.n, "bits": args.bits, "ladder": ladder,
               "baseline": baseline, "bloom": bloom, "peak_mb": peak_mb, "met": ok}
        write_json(args.json, "microdata", out)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
