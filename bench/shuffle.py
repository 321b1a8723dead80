"""The microdata row shuffle's cost: the operating system's bits against the old seeded generator.

    .venv/bin/python -m bench.shuffle                 # 10^6 rows, JSON on stdout
    .venv/bin/python -m bench.shuffle --rows 1000000 --repeat 3 --json out.json

A microdata listing's rows are put in a secret order once, when it is made
(``market.catalog.microdata.truth``). The order now comes from
``releases.engine.osrandom.OSRandom.permutation`` (Fisher-Yates, each swap's
position an unbiased bounded integer from ``os.urandom``); before, from
``numpy.random.Generator(PCG64DXSM)`` seeded with 256 OS bits (its
``permutation``). Both are timed alone and applied to the rows' bits (one
byte per bit, ``--bits`` of them, as ``truth`` holds them), best of ``--repeat``.
Nothing here is a unit test: timings belong in this script only.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys

import numpy as np

from bench.engine import best_of
from bench.stamp import write_json
from releases.engine.osrandom import new_source


def old_permutation(n: int) -> np.ndarray:
    """The shuffle as it was: PCG64DXSM seeded from 256 OS bits (not a CSPRNG)."""
    gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence(secrets.randbits(256))))
    return gen.permutation(n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    n = args.rows
    bits = np.zeros((n, args.bits), dtype=bool)
    source = new_source()
    figures = {
        "rows": n,
        "bits_per_row": args.bits,
        "repeat": args.repeat,
        "old_permutation_s": best_of(lambda: old_permutation(n), args.repeat),
        "os_permutation_s": best_of(lambda: source.permutation(n), args.repeat),
        "old_shuffle_rows_s": best_of(lambda: bits[old_permutation(n)], args.repeat),
        "os_shuffle_rows_s": best_of(lambda: bits[source.permutation(n)], args.repeat),
    }
    figures["slowdown_permutation"] = figures["os_permutation_s"] / figures["old_permutation_s"]
    figures["slowdown_shuffle_rows"] = figures["os_shuffle_rows_s"] / figures["old_shuffle_rows_s"]
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        write_json(args.json, "shuffle", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
