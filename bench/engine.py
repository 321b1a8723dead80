"""Speed of the release engine's steps against numpy's own Laplace sampling.

    python -m bench.engine            # 10^6 and 10^7 coordinates
    python -m bench.engine --sizes 1000000 --repeat 3 --json out.json

For each size it times ``relax``, ``tighten`` and ``bridge`` (best of
``--repeat`` runs) and ``numpy.random.Generator.laplace`` on the same number
of coordinates, and reports the ratios. The target is relax <= 3x numpy's
Laplace; the exit status is 1 if it is missed.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

from bench.stamp import write_json
from releases.engine.mechanism import bridge, relax, tighten

TARGET_RELAX = 3.0


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


def run(sizes, repeat: int):
    rng = np.random.default_rng()  # speed of the steps only: no release is made here
    rows = []
    for n in sizes:
        x = rng.laplace(0.0, 1.0, n)
        hi = relax(x, 1.0, 4.0, rng)
        base = best_of(lambda: rng.laplace(0.0, 1.0, n), repeat)
        times = {
            "relax": best_of(lambda: relax(x, 1.0, 2.0, rng), repeat),
            "tighten": best_of(lambda: tighten(x, 1.0, 0.5, rng), repeat),
            "bridge": best_of(lambda: bridge(x, 1.0, hi, 4.0, 2.0, rng), repeat),
        }
        rows.append(
            {
                "coordinates": n,
                "numpy_laplace_s": base,
                **{f"{k}_s": v for k, v in times.items()},
                **{f"{k}_ratio": v / base for k, v in times.items()},
            }
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    rows = run(args.sizes, args.repeat)
    print(f"machine: {machine()}")
    print(f"{'coordinates':>12} {'numpy laplace':>14} {'relax':>14} {'tighten':>14} {'bridge':>14}")
    for r in rows:
        cells = [f"{r['numpy_laplace_s'] * 1e3:9.1f} ms"] + [
            f"{r[k + '_s'] * 1e3:7.1f} ({r[k + '_ratio']:.2f}x)" for k in ("relax", "tighten", "bridge")
        ]
        print(f"{r['coordinates']:>12} " + " ".join(f"{c:>14}" for c in cells))
    worst = max(r["relax_ratio"] for r in rows)
    ok = worst <= TARGET_RELAX
    print(f"target relax <= {TARGET_RELAX}x numpy's Laplace: {'met' if ok else 'MISSED'} (worst {worst:.2f}x)")
    if args.json:
        write_json(args.json, "engine", {"repeat": args.repeat, "rows": rows})
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
