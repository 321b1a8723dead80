"""Accuracy of wide listings on the Skellam path against the lattice path, at equal budget.

    python -m bench.skellam_wide --json docs/perf/skellam_wide.json
    python -m bench.skellam_wide --rows 2000 --draws 200      # a quick look

Two wide listings, each laid out by the product (``build_plan``, ``compute``) for both relations, on
a generated table (seed fixed):

* ``wide``: 20 statistics, 40 values: 10 counts filtered by ``x >= 0, 10, ..., 90`` and 10
  histograms of 3 bins on their own columns. One record added counts in every filtered count at
  once (``x >= 90``) and in one bin of each histogram: 20 values move by 1 (a replaced one moves
  the 10 counts by 1 and two bins of each histogram by 1: 30 values). 20 is as wide as one record
  reaches: a listing has at most 20 statistics (``spec.MAX_STATISTICS``) and each moves one value
  per record added, or two per record replaced.
* ``tables``: three two-way tables of 9 x 4 declared categories (10 x 5 = 50 cells with each
  side's "other"), on their own pairs of columns: every record counts once in each table, so one
  record moves 3 values (6 when replaced).

Both listings at the same ceiling, 2: the lattice listing is pure eps-DP at each level, the
Skellam one (eps, 1e-9)-DP, calibrated when it is made (its ladder holds 0.25, 0.5, 1 and 2).
For each level and value: the 95% error bound before purchase (the lattice's exact discrete
Laplace quantile, ``plan.bound``; the Skellam law's exact quantile, ``Skellam.value_bound``), and
the realised error of ``--draws`` releases of each path (the mechanisms' own ``step`` and
``values``, seeded ``random.Random``): its root mean square and the share of draws within the
bound. Many listings are drawn at once, as one path of ``draws x values`` coordinates: each
mechanism's step is per coordinate given the levels (its weight's level or time), so that is, in
law, ``draws`` independent listings.

The answer: Gaussian-like noise is sized by the l2 length of a record's move, ``sqrt(m)`` steps for
``m`` values moved by one, against ``m`` for Laplace noise, but needs about ``sqrt(2 ln(1.25 /
delta))`` times more noise per unit of length: at delta 1e-9 it wins from about 15 values moved.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

from bench.stamp import write_json
from market.catalog.compute import Table, compute
from market.catalog.spec import PRIVATE_SIZE, PUBLIC_SIZE, Neighbours, build_plan
from market.catalog.spec.columns import Column
from releases.engine.mechanisms import mechanism
from releases.engine.mechanisms.skellam import Skellam, calibration, shift_cases

CEILING = Decimal(2)
DELTA = Decimal("1e-9")
LEVELS = (Decimal("0.25"), Decimal("0.5"), Decimal(1), Decimal(2))
HISTOGRAMS = 10
ROW_CATEGORIES = [f"r{i}" for i in range(9)]
COLUMN_CATEGORIES = [f"k{i}" for i in range(4)]
COLUMNS = (Column("x", "decimal"), *(Column(f"y{i}", "decimal") for i in range(HISTOGRAMS)),
           *(Column(f"c{i}", "categorical") for i in range(6)))


def specs() -> dict[str, list[dict]]:
    """The two listings' statistics (module docstring)."""
    wide = [{"kind": "count", "where": [{"column": "x", "op": ">=", "value": 10 * k}]} for k in range(10)]
    wide += [{"kind": "histogram", "column": f"y{i}", "bins": [0, 1, 2, 3]} for i in range(HISTOGRAMS)]
    tables = [{"kind": "table", "rows": f"c{2 * t}", "columns": f"c{2 * t + 1}", "row_categories": ROW_CATEGORIES,
               "column_categories": COLUMN_CATEGORIES, "categories_public": True} for t in range(3)]
    return {"wide": wide, "tables": tables}


def dataset(rows: int, seed: int) -> Table:
    """``rows`` records: ``x`` uniform in [0, 100), ``y0..y9`` uniform in [0, 3), ``c0..c5`` one of
    the declared categories or (one in twenty) another."""
    rng = np.random.default_rng(seed)
    columns = {"x": rng.uniform(0, 100, rows)}
    for i in range(HISTOGRAMS):
        columns[f"y{i}"] = rng.uniform(0, 3, rows)
    for i in range(6):
        names = (ROW_CATEGORIES if i % 2 == 0 else COLUMN_CATEGORIES) + ["other value"]
        p = np.full(len(names), 0.95 / (len(names) - 1))
        p[-1] = 0.05
        columns[f"c{i}"] = np.array(names, dtype=object)[rng.choice(len(names), rows, p=p)].tolist()
    return Table.from_columns(columns)


@dataclass
class Listing:
    """One spec laid out for one relation on both paths: ``u`` the answer in steps, ``lattice`` and
    ``skellam`` the plans, ``bound`` the Skellam mechanism with the listing's calibration."""

    name: str
    relation: str
    u: np.ndarray
    lattice: object
    skellam: object
    bound: Skellam
    seconds: float  # the calibration's


def listing(name: str, spec, table: Table, neighbours: Neighbours) -> Listing:
    lattice_plan = build_plan(spec, COLUMNS, neighbours=neighbours, mechanism="lattice")
    skellam_plan = build_plan(spec, COLUMNS, neighbours=neighbours, mechanism="skellam")
    u = compute(skellam_plan, table)
    assert np.array_equal(u, compute(lattice_plan, table))  # the same values, in the same steps
    layout = skellam_plan.lattice
    start = time.perf_counter()
    calibrated = calibration(ceiling=CEILING, delta=DELTA, cases=shift_cases(layout.unit_cases, layout.unit_weights))
    seconds = time.perf_counter() - start
    plan_dict = {"calibration": calibrated, "weights": list(layout.unit_weights),
                 "layout": {"unit_cases": [list(map(list, case)) for case in layout.unit_cases]}}
    return Listing(name, neighbours.relation, u, lattice_plan, skellam_plan, mechanism("skellam").bound(plan_dict),
                   seconds)


def realised(found, layout, u: np.ndarray, level, draws: int, seed: int) -> np.ndarray:
    """``draws`` releases' errors at ``level`` (``(draws, values)``, in the values' units): one first
    step of the mechanism ``found`` on ``draws`` listings at once, released by its ``values``."""
    n = len(u)
    weights = np.tile(np.asarray(layout.unit_weights, dtype=np.int64), draws)
    noise, _ = found.step(level, dim=n * draws, weights=weights, rng=random.Random(seed))
    grids = [str(g) for g in layout.grids] * draws
    values = found.values(np.tile(u, draws), noise, level=level, weights=weights,
                          lower=np.tile(layout.unit_lower, draws), upper=np.tile(layout.unit_upper, draws), grids=grids)
    truth = u * np.array([float(g) for g in layout.grids])
    return np.asarray(values, dtype=np.float64).reshape(draws, n) - truth


def figures(item: Listing, draws: int, seed: int) -> list[dict]:
    """Per level: each value's 95% bound on both paths, and the realised RMS error and coverage."""
    lattice = mechanism("lattice")
    out = []
    for j, level in enumerate(LEVELS):
        n = len(item.u)
        row = {"level": str(level), "time": str(item.bound.time(level)), "values": []}
        errors = {
            "lattice": realised(lattice, item.lattice.lattice, item.u, level, draws, seed + 2 * j),
            "skellam": realised(item.bound, item.skellam.lattice, item.u, level, draws, seed + 2 * j + 1),
        }
        bounds = {
            "lattice": [item.lattice.bound(i, level) for i in range(n)],
            "skellam": [item.bound.value_bound(item.skellam.lattice, i, level, 0.95) for i in range(n)],
        }
        for i in range(n):
            value = {"label": item.skellam.labels[i]}
            for path in ("lattice", "skellam"):
                e = errors[path][:, i]
                value[path] = {"bound": bounds[path][i], "rms": float(np.sqrt(np.mean(e * e))),
                               "within": float(np.mean(np.abs(e) <= bounds[path][i]))}
            row["values"].append(value)
        for path in ("lattice", "skellam"):
            e = errors[path]
            row[path] = {"rms": float(np.sqrt(np.mean(e * e))), "within": float(np.mean(np.abs(e) <= np.array(bounds[path]))),
                         "bound_mean": float(np.mean(bounds[path]))}
        row["bound_ratio"] = row["skellam"]["bound_mean"] / row["lattice"]["bound_mean"]
        row["rms_ratio"] = row["skellam"]["rms"] / row["lattice"]["rms"]
        out.append(row)
    return out


def run(rows: int, draws: int, seed: int) -> list[dict]:
    table_of = {}
    out = []
    for relation in (PRIVATE_SIZE, PUBLIC_SIZE):
        nb = Neighbours(relation) if relation == PRIVATE_SIZE else Neighbours(relation, size=rows)
        for name, spec in specs().items():
            table = table_of.get(rows) or table_of.setdefault(rows, dataset(rows, seed))
            item = listing(name, spec, table, nb)
            layout = item.skellam.lattice
            out.append({
                "listing": name, "relation": relation, "values": len(item.u),
                "moved": sum(1 for _, move in layout.unit_cases[0] if move),
                "lattice_weights": sorted(set(item.lattice.lattice.unit_weights)),
                "skellam_weights": sorted(set(layout.unit_weights)),
                "calibration_s": item.seconds, "levels": figures(item, draws, seed),
            })
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="records of the generated table")
    parser.add_argument("--draws", type=int, default=2_000, help="releases of each path per level")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = run(args.rows, args.draws, args.seed)
    print(f"{args.rows:,} records, {args.draws:,} releases per path and level; ceiling {CEILING}, Skellam delta {DELTA}")
    for r in results:
        print(f"\n{r['listing']} ({r['relation']}): {r['values']} values, {r['moved']} moved by a neighbour; "
              f"calibration {r['calibration_s']:.1f} s")
        print(f"{'eps':>6} {'bound lat':>10} {'bound sk':>10} {'ratio':>6} {'rms lat':>9} {'rms sk':>9} {'ratio':>6} "
              f"{'within lat':>10} {'within sk':>10}")
        for row in r["levels"]:
            lat, sk = row["lattice"], row["skellam"]
            print(f"{row['level']:>6} {lat['bound_mean']:>10.1f} {sk['bound_mean']:>10.1f} {row['bound_ratio']:>6.2f} "
                  f"{lat['rms']:>9.2f} {sk['rms']:>9.2f} {row['rms_ratio']:>6.2f} {lat['within']:>10.4f} {sk['within']:>10.4f}")
    if args.json:
        write_json(args.json, "skellam_wide", {"rows": args.rows, "draws": args.draws, "seed": args.seed,
                                               "ceiling": str(CEILING), "delta": str(DELTA),
                                               "load": os.getloadavg()[0], "listings": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
