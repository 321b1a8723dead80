"""Synthetic rows from noisy marginals (docs/mathematics.md §19): post-processing only.

A synthetic-data listing measures every 1-way and every 2-way marginal of its columns (each column
coded ``0 .. size - 1``: public categories, or public bins of a number, missing values as a code of
their own where declared) on one noise path. A release at a level is those tables with noise; the
rows a buyer downloads are computed from them alone, so they cost nothing beyond the level, and a
higher level later gives better rows of the same shape. The steps:

1. **Estimate** (:func:`estimate`). The number of rows is public, or the inverse-variance average of
   the tables' noisy totals. Each column's 1-way table is the inverse-variance average of its own
   noisy table and of the margins of the 2-way tables it is in (every cell has the same noise, so a
   margin summed over ``k`` cells has ``k`` times its variance), projected onto the non-negative
   tables of that total (the closest in Euclidean distance). Each 2-way table is moved to the
   closest table with those margins (least squares, in closed form). When the noise's variance is
   known (it is public: the level's law), that table's departure from independence (the table the
   margins alone give) is shrunk toward independence by the positive-part James-Stein factor
   ``max(0, 1 - (f - 2) sigma^2 / |departure|^2)``, ``f = (rows - 1)(columns - 1)`` the departure's
   degrees of freedom: a table whose departure is about what the noise alone would give is mostly
   noise, and is trusted less; one far beyond it is kept almost whole. Then its negative cells are
   cleared and its margins restored by iterative proportional fitting. The result is non-negative
   and consistent: every 2-way table's margins are the shared 1-way tables.
2. **Choose a tree** (:func:`tree`): the maximum spanning tree of the columns weighted by the mutual
   information of their estimated 2-way tables, as MST (McKenna, Miklau and Sheldon 2021) chooses
   one, but from the released tables, so it spends nothing.
3. **Sample** (:func:`sample`): the root column's values in the counts its 1-way table gives the
   rows (rounded by largest remainders), then down the tree each child's values within each value
   of its parent in the counts ``P(child | parent)`` gives that parent's rows, dealt to those rows in
   a random order. Rounding counts instead of drawing each row independently keeps the rows' own
   tables as close to the model's as whole numbers allow; the random order makes a child depend on
   the rest only through its parent.

``rng`` is anything with ``permutation(n)``: the product passes the operating system's source
(``releases.engine.osrandom``), tests a seeded ``numpy.random.Generator``. This module never imports
Django.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["Model", "Workload", "average_tvd", "estimate", "largest_remainder", "sample", "shrunk", "simplex",
           "synthesize", "tables_tvd", "tree"]

#: Iterations of proportional fitting after negative cells are cleared (each a row and a column pass).
FITTING_ROUNDS = 200


@dataclass(frozen=True)
class Workload:
    """The columns' sizes (number of codes each) and the tables measured: every column alone, then
    every pair ``(i, j)`` with ``i < j``, each flattened row by row, all in one vector."""

    sizes: tuple[int, ...]

    def __post_init__(self):
        if len(self.sizes) < 2 or any(int(s) < 1 for s in self.sizes):
            raise ValueError("a workload has two or more columns of at least one code each")

    @cached_property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        d = len(self.sizes)
        return tuple((i,) for i in range(d)) + tuple(itertools.combinations(range(d), 2))

    @cached_property
    def places(self) -> dict[tuple[int, ...], tuple[int, tuple[int, ...]]]:
        """Each table's ``(start, shape)`` in the vector."""
        out, start = {}, 0
        for table in self.tables:
            shape = tuple(self.sizes[i] for i in table)
            out[table] = (start, shape)
            start += int(np.prod(shape))
        return out

    @property
    def width(self) -> int:
        start, shape = self.places[self.tables[-1]]
        return start + int(np.prod(shape))

    def table(self, vector: np.ndarray, table: tuple[int, ...]) -> np.ndarray:
        start, shape = self.places[table]
        return np.asarray(vector[start: start + int(np.prod(shape))], dtype=np.float64).reshape(shape)

    def measure(self, codes: np.ndarray) -> np.ndarray:
        """Every table of rows ``codes`` (``rows x columns`` codes), in the vector's order: the exact
        counts a listing's path adds its noise to."""
        codes = np.asarray(codes, dtype=np.int64)
        out = np.zeros(self.width, dtype=np.int64)
        for table in self.tables:
            start, shape = self.places[table]
            flat = codes[:, table[0]] if len(table) == 1 else codes[:, table[0]] * shape[1] + codes[:, table[1]]
            out[start: start + int(np.prod(shape))] = np.bincount(flat, minlength=int(np.prod(shape)))
        return out


@dataclass(frozen=True)
class Model:
    """Non-negative, consistent tables: ``total`` rows, ``ones[i]`` column ``i``'s counts, ``twos[(i, j)]``
    the pair's (rows ``i``, columns ``j``), whose margins are ``ones[i]`` and ``ones[j]``."""

    total: float
    ones: tuple[np.ndarray, ...]
    twos: dict


def simplex(values: np.ndarray, total: float) -> np.ndarray:
    """The closest vector (Euclidean) with non-negative entries adding up to ``total``."""
    v = np.asarray(values, dtype=np.float64)
    if total <= 0:
        return np.zeros_like(v)
    ordered = np.sort(v)[::-1]
    kept = np.cumsum(ordered) - total
    ranks = np.arange(1, v.size + 1)
    last = np.flatnonzero(ordered - kept / ranks > 0)[-1]
    return np.maximum(v - kept[last] / (last + 1), 0.0)


def _ratio(wanted: np.ndarray, found: np.ndarray) -> np.ndarray:
    """``wanted / found``, 0 where nothing is wanted (a margin of 0 empties its row or column)."""
    return np.divide(wanted, found, out=np.zeros_like(wanted, dtype=np.float64), where=found > 0)


def _fit(table: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``table`` (non-negative) raked to the margins ``rows`` and ``columns`` (equal totals)."""
    out = table + 1e-9 * max(rows.sum(), 1.0) / table.size  # every cell may grow: the margins are always met
    for _ in range(FITTING_ROUNDS):
        out *= _ratio(rows, out.sum(axis=1))[:, None]
        out *= _ratio(columns, out.sum(axis=0))[None, :]
        if np.abs(out.sum(axis=1) - rows).max() <= 1e-9 * max(rows.sum(), 1.0):
            break
    return out


def shrunk(table: np.ndarray, rows: np.ndarray, columns: np.ndarray, variance: float) -> np.ndarray:
    """``table`` (margins ``rows`` and ``columns``, total ``t``) with its departure from independence
    (``rows columns^T / t``) shrunk by the positive-part James-Stein factor for noise of ``variance``
    per cell (the module's step 1); unchanged when the departure has fewer than 3 degrees of freedom
    (the factor then never shrinks) or the variance is 0."""
    total = float(rows.sum())
    free = (table.shape[0] - 1) * (table.shape[1] - 1)
    if total <= 0 or free < 3 or variance <= 0:
        return table
    independent = np.outer(rows, columns) / total
    departure = table - independent
    size = float((departure * departure).sum())
    factor = max(0.0, 1.0 - (free - 2) * variance / size) if size > 0 else 0.0
    return independent + factor * departure


def estimate(noisy: np.ndarray, workload: Workload, *, total: float | None = None,
             variance=None) -> Model:
    """Non-negative, consistent tables from the noisy vector (the module's step 1); ``total`` the
    public number of rows (None: estimated from the tables); ``variance`` the noise's variance, one
    figure or one per value (None: not known, no table is shrunk)."""
    noisy = np.asarray(noisy, dtype=np.float64)
    sizes = workload.sizes
    if total is None:  # each table's total has variance (cells) sigma^2: inverse-variance average
        weights = np.array([1.0 / np.prod([sizes[i] for i in t]) for t in workload.tables])
        totals = np.array([workload.table(noisy, t).sum() for t in workload.tables])
        total = max(float((weights * totals).sum() / weights.sum()), 0.0)
    d = len(sizes)
    ones = []
    for i in range(d):
        parts, weights = [workload.table(noisy, (i,))], [1.0]
        for j in range(d):
            if j == i:
                continue
            pair = workload.table(noisy, (min(i, j), max(i, j)))
            parts.append(pair.sum(axis=1 if i < j else 0))
            weights.append(1.0 / sizes[j])  # a margin over sizes[j] cells: sizes[j] times the variance
        combined = sum(w * p for w, p in zip(weights, parts)) / sum(weights)
        ones.append(simplex(combined, total))
    twos = {}
    spread = None if variance is None else np.broadcast_to(np.asarray(variance, dtype=np.float64), noisy.shape)
    for i, j in itertools.combinations(range(d), 2):
        a = workload.table(noisy, (i, j))
        rows, cols = ones[i], ones[j]
        moved = (a + (rows - a.sum(axis=1))[:, None] / a.shape[1] + (cols - a.sum(axis=0))[None, :] / a.shape[0]
                 + (a.sum() - total) / a.size)
        if spread is not None:
            moved = shrunk(moved, rows, cols, float(workload.table(spread, (i, j)).mean()))
        twos[(i, j)] = _fit(np.maximum(moved, 0.0), rows, cols) if total > 0 else np.zeros_like(a)
    return Model(total, tuple(ones), twos)


def _information(joint: np.ndarray) -> float:
    total = joint.sum()
    if total <= 0:
        return 0.0
    p = joint / total
    outer = p.sum(axis=1)[:, None] * p.sum(axis=0)[None, :]
    inside = p > 0
    return float((p[inside] * np.log(p[inside] / outer[inside])).sum())


def tree(model: Model) -> list[tuple[int, int]]:
    """The maximum spanning tree of the columns by the mutual information of their 2-way tables, as
    ``(parent, child)`` edges from the root (column 0) outwards; ties go to the earlier pair."""
    d = len(model.ones)
    weighted = sorted(model.twos, key=lambda pair: (-_information(model.twos[pair]), pair))
    group = list(range(d))

    def find(x: int) -> int:
        while group[x] != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    chosen = []
    for i, j in weighted:
        a, b = find(i), find(j)
        if a != b:
            group[a] = b
            chosen.append((i, j))
    edges, seen, frontier = [], {0}, [0]
    while frontier:
        parent = frontier.pop(0)
        for i, j in chosen:
            child = j if i == parent else i if j == parent else None
            if child is not None and child not in seen:
                seen.add(child)
                edges.append((parent, child))
                frontier.append(child)
    return edges


def largest_remainder(weights: np.ndarray, count: int) -> np.ndarray:
    """Whole numbers adding up to ``count`` in proportion to ``weights`` (non-negative): the floors,
    then one more to the largest remainders (the earlier on ties). Uniform when all weights are 0."""
    w = np.asarray(weights, dtype=np.float64)
    if count <= 0:
        return np.zeros(w.size, dtype=np.int64)
    if w.sum() <= 0:
        w = np.ones_like(w)
    share = w / w.sum() * count
    out = np.floor(share).astype(np.int64)
    short = count - int(out.sum())
    if short > 0:
        order = np.lexsort((np.arange(w.size), -(share - out)))
        out[order[:short]] += 1
    return out


def sample(model: Model, edges: list[tuple[int, int]], rows: int, rng) -> np.ndarray:
    """``rows x columns`` codes drawn down the tree (the module's step 3)."""
    d = len(model.ones)
    codes = np.zeros((rows, d), dtype=np.int64)
    root = edges[0][0] if edges else 0
    counts = largest_remainder(model.ones[root], rows)
    codes[:, root] = np.repeat(np.arange(counts.size), counts)[np.asarray(rng.permutation(rows), dtype=np.int64)]
    for parent, child in edges:
        joint = model.twos[(parent, child)] if parent < child else model.twos[(child, parent)].T
        for value in range(joint.shape[0]):
            at = np.flatnonzero(codes[:, parent] == value)
            if not at.size:
                continue
            dealt = largest_remainder(joint[value] if joint[value].sum() > 0 else model.ones[child], at.size)
            values = np.repeat(np.arange(dealt.size), dealt)
            codes[at[np.asarray(rng.permutation(at.size), dtype=np.int64)], child] = values
    return codes


def synthesize(noisy: np.ndarray, workload: Workload, *, rows: int | None = None, total: float | None = None,
               variance=None, rng) -> np.ndarray:
    """Synthetic codes from a release's noisy tables: :func:`estimate`, :func:`tree`, :func:`sample`.
    ``total``: the public number of records (None: estimated); ``variance``: the noise's (None: not
    shrunk); ``rows``: how many to draw (default the total, rounded)."""
    model = estimate(noisy, workload, total=total, variance=variance)
    count = int(round(model.total)) if rows is None else int(rows)
    return sample(model, tree(model), count, rng)


def average_tvd(codes: np.ndarray, truth: np.ndarray, workload: Workload) -> float:
    """The average over all 2-way tables of the total-variation distance between the two sets of
    rows' tables (each as a distribution): the delivered quality an owner sees."""
    return tables_tvd(workload.measure(codes), workload.measure(truth), workload)


def tables_tvd(a: np.ndarray, b: np.ndarray, workload: Workload) -> float:
    """:func:`average_tvd` from the two sets of tables (vectors in the workload's order)."""
    out = []
    for table in workload.tables:
        if len(table) != 2:
            continue
        p, q = workload.table(a, table), workload.table(b, table)
        p, q = p / max(p.sum(), 1.0), q / max(q.sum(), 1.0)
        out.append(0.5 * float(np.abs(p - q).sum()))
    return float(np.mean(out))
