"""The checks the lattice path must pass, as functions of a seed.

``test_lattice.py`` runs them on the engine; ``test_lattice_mutations.py``
runs the same functions on deliberately broken engines and shows that they
fail. Each statistical check draws from the engine with a fixed seed and
compares the draws with an exact law of ``lattice_laws`` by a G-test
(likelihood-ratio goodness of fit): cells whose expected count is below 5 are
pooled into one cell, and the statistic is referred to the chi-square law
with (cells - 1) degrees of freedom. A check fails when its p-value is below
``ALARM`` = 1e-4, so each one raises a false alarm on a correct engine with
probability about 1e-4 (the seeds are fixed, so a run either always passes or
always fails).

Every draw uses a bit source that has ``getrandbits`` and nothing else: an
engine that reached for a float uniform would fail at once.
"""

from __future__ import annotations

import ast
import inspect
import math
import random
import textwrap
import types
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import stats

from releases.engine import lattice, lattice_batch, lattice_coins

from . import lattice_laws as laws

ALARM = 1e-4
MIN_EXPECTED = 5
#: Roughly how many cells a one-dimensional law is cut into (wide laws get wider cells).
CELLS = 300


def bits_only(seed: int):
    """A bit source with ``getrandbits`` and nothing else (no ``random()``, no floats)."""
    return types.SimpleNamespace(getrandbits=random.Random(seed).getrandbits)


@dataclass(frozen=True)
class Fit:
    """A G-test's outcome."""

    g: float
    df: int
    p: float
    n: int

    @property
    def passes(self) -> bool:
        return self.p > ALARM

    def __str__(self) -> str:
        return f"G = {self.g:.1f} on {self.df} df, p = {self.p:.3g} (n = {self.n})"


def g_test(observed, probabilities) -> Fit:
    """G-test of counts against cell probabilities (which sum to 1), small cells pooled."""
    observed = np.asarray(observed, dtype=float)
    n = observed.sum()
    expected = n * np.asarray(probabilities, dtype=float)
    keep = expected >= MIN_EXPECTED
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    used = (obs > 0) | (exp > 0)
    obs, exp = obs[used], exp[used]
    if np.any((exp == 0) & (obs > 0)):
        g = math.inf
    else:
        seen = obs > 0
        g = float(2 * (np.sum(obs[seen] * np.log(obs[seen] / exp[seen])) - np.sum(obs - exp)))
    df = obs.size - 1
    return Fit(g, df, float(stats.chi2.sf(g, df)), int(n))


def geometric_fit(draws: np.ndarray, s: int, t: int, cells: int = 60) -> Fit:
    """G-test of geometric draws against ``P(G >= g) = alpha^g``, ``alpha = e^{-s/t}``, in cells of
    equal width (about ``cells`` of them up to where the tail is below 1e-5, and the tail)."""
    top = int(math.ceil(12 * t / s)) + 1
    width = max(1, top // cells)
    edges = np.arange(0, top + width, width)
    tail = np.exp(-edges.astype(float) * (s / t))  # P(G >= edge)
    probabilities = np.append(-np.diff(tail), tail[-1])
    observed = np.bincount(np.minimum(draws // width, edges.size - 1), minlength=edges.size)
    return g_test(observed, probabilities)


def cuts_for(law: laws.Law) -> list[int]:
    """Cell boundaries for a one-dimensional law: single integers where the law is narrow,
    about ``CELLS`` equal stretches where it is wide, and every point mass in a cell of its own."""
    first, last = law.quantile(1e-6), law.quantile(1 - 1e-6)
    width = max(1, math.ceil((last - first + 1) / CELLS))
    cuts = set(range(first, last + 2, width))
    for _, p in law.atoms:
        cuts |= {p, p + 1}
    return sorted(cuts)


def fit(law: laws.Law, draws) -> Fit:
    """G-test of integer draws against an exact one-dimensional law."""
    cuts = cuts_for(law)
    cells = np.searchsorted(np.array(cuts, dtype=np.int64), np.asarray(draws, dtype=np.int64), side="right")
    return g_test(np.bincount(cells, minlength=len(cuts) + 1), law.probabilities(cuts))


# --------------------------------------------------------------------------
# one step, fixed inputs


def check_sample(level, n: int, seed: int) -> Fit:
    return fit(laws.dlap(level), lattice.sample(level, n, bits_only(seed)))


def check_relax(x: int, lo, hi, n: int, seed: int) -> Fit:
    """``relax`` from ``V_lo = x`` against Bayes' rule over the tightening step."""
    return fit(laws.relax_law(x, lo, hi), lattice.relax(np.full(n, x), lo, hi, bits_only(seed)))


def check_tighten(y: int, lo, hi, n: int, seed: int) -> Fit:
    return fit(laws.tighten_law(y, lo, hi), lattice.tighten(np.full(n, y), hi, lo, bits_only(seed)))


def check_bridge(x_lo: int, x_hi: int, lo, mid, hi, n: int, seed: int) -> Fit:
    draws = lattice.bridge(np.full(n, x_lo), lo, np.full(n, x_hi), hi, mid, bits_only(seed))
    return fit(laws.bridge_law(x_lo, x_hi, lo, mid, hi), draws)


def check_step(kind: str, weights, noise_lo, noise_hi, n: int, seed: int) -> list[Fit]:
    """``step`` on ``n`` repeats of a listing whose coordinates have different weights.

    The listing level is 1; the known points are level 1/2 (``noise_lo``) and
    level 2 (``noise_hi``), so coordinate ``i`` runs at ``1/w_i`` between
    ``1/(2 w_i)`` and ``2/w_i``. One call serves every coordinate; each
    coordinate's draws are compared with its own exact law.
    """
    reps = len(weights)
    w = list(weights) * n
    lo_noise, hi_noise = np.tile(noise_lo, n), np.tile(noise_hi, n)
    below = (Fraction(1, 2), lo_noise) if kind in ("relax", "bridge") else None
    above = (Fraction(2), hi_noise) if kind in ("tighten", "bridge") else None
    out, method = lattice.step(Fraction(1), w, bits_only(seed), below=below, above=above)
    assert method == kind
    fits = []
    for i, wi in enumerate(weights):
        law = _step_law(kind, noise_lo[i], noise_hi[i], Fraction(1, 2 * wi), Fraction(1, wi), Fraction(2, wi))
        fits.append(fit(law, out[i::reps]))
    return fits


def _step_law(kind: str, x_lo: int, x_hi: int, lo, mid, hi) -> laws.Law:
    """The exact law of the noise at ``mid`` that ``step`` of this kind draws."""
    if kind == "initial":
        return laws.dlap(mid)
    if kind == "relax":
        return laws.relax_law(x_lo, lo, mid)
    if kind == "tighten":
        return laws.tighten_law(x_hi, mid, hi)
    return laws.bridge_law(x_lo, x_hi, lo, mid, hi)


# --------------------------------------------------------------------------
# joint laws of several levels


def check_joint(levels, columns) -> Fit:
    """G-test of draws of ``(V_l1, ..., V_lk)`` (one array per level) against the exact joint law."""
    axes, table = laws.joint_table(levels)
    inside = np.ones(len(columns[0]), dtype=bool)
    index = np.zeros(len(columns[0]), dtype=np.int64)
    for axis, column in zip(axes, columns):
        k = axis[-1]
        inside &= np.abs(column) <= k
        index = index * axis.size + np.clip(column, -k, k) + k
    cells = np.where(inside, index, table.size)  # one cell for everything outside the box
    observed = np.bincount(cells, minlength=table.size + 1)
    return g_test(observed, np.append(table.ravel(), max(0.0, 1 - table.sum())))


def check_same_law(columns_a, columns_b) -> Fit:
    """Two-sample G-test (homogeneity) of two sets of integer tuples; cells with fewer than
    10 draws in both sets together are pooled."""
    a = np.stack(columns_a, axis=1)
    b = np.stack(columns_b, axis=1)
    values, cells = np.unique(np.concatenate([a, b]), axis=0, return_inverse=True)
    cells = cells.reshape(-1)
    ca = np.bincount(cells[: len(a)], minlength=len(values)).astype(float)
    cb = np.bincount(cells[len(a):], minlength=len(values)).astype(float)
    small = ca + cb < 2 * MIN_EXPECTED
    table = np.stack([np.append(ca[~small], ca[small].sum()), np.append(cb[~small], cb[small].sum())])
    table = table[:, table.sum(axis=0) > 0]
    g, p, df, _ = stats.chi2_contingency(table, lambda_="log-likelihood", correction=False)
    return Fit(float(g), int(df), float(p), len(a) + len(b))


def two_levels_upwards(lo, hi, n: int, seed: int):
    """``(V_lo, V_hi)``: sample at ``lo``, relax to ``hi``."""
    rng = bits_only(seed)
    v_lo = lattice.sample(lo, n, rng)
    return v_lo, lattice.relax(v_lo, lo, hi, rng)


def two_levels_downwards(lo, hi, n: int, seed: int):
    """``(V_lo, V_hi)``: sample at ``hi``, tighten to ``lo``."""
    rng = bits_only(seed)
    v_hi = lattice.sample(hi, n, rng)
    return lattice.tighten(v_hi, hi, lo, rng), v_hi


def three_levels_bridged(lo, mid, hi, n: int, seed: int):
    """``(V_lo, V_mid, V_hi, redrawn V_mid)``: sample at ``lo``, relax to ``mid`` and ``hi``,
    then draw the middle again by the bridge from the two ends."""
    rng = bits_only(seed)
    v_lo = lattice.sample(lo, n, rng)
    v_mid = lattice.relax(v_lo, lo, mid, rng)
    v_hi = lattice.relax(v_mid, mid, hi, rng)
    return v_lo, v_mid, v_hi, lattice.bridge(v_lo, lo, v_hi, hi, mid, rng)


# --------------------------------------------------------------------------
# no float in any decision

#: Functions of releases/engine/lattice.py that compute display figures or build the product's
#: generator: they decide nothing about the noise.
DISPLAY = {"tail_probability", "error_bound", "new_rng"}


#: The modules whose functions make the lattice path's random choices.
ENGINE = (lattice, lattice_coins, lattice_batch)


def _defined_in_engine() -> list[tuple[object, str]]:
    out = []
    for module in ENGINE:
        tree = ast.parse(Path(module.__file__).read_text())
        out += [(module, n.name) for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name not in DISPLAY]
    return out


def float_problems() -> list[str]:
    """Ways a float could enter the sampling code, as the module now stands.

    Reads the source of every function and class that ``releases/engine/lattice.py``,
    ``lattice_coins.py`` and ``lattice_batch.py`` define (except ``DISPLAY``), as currently bound
    in its module (so a
    replaced function is read in its replacement's source), and reports a
    float literal, a call of ``float``, any use of ``math`` but its integer functions, ``numpy.random``
    or the ``random`` module, and any use of the bit source other than its integer draws
    (``BIT_SOURCE``: ``rng.getrandbits``, and ``rng.u64``, whole 64-bit words of the product's buffer).
    """
    problems = []
    for module, name in _defined_in_engine():
        source = textwrap.dedent(inspect.getsource(getattr(module, name)))
        for node in ast.walk(ast.parse(source)):
            where = f"{name}: line {getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Constant) and isinstance(node.value, (float, complex)):
                problems.append(f"{where}: float literal {node.value!r}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float":
                problems.append(f"{where}: float()")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                owner = node.value.id
                if (owner == "math" and node.attr not in INTEGER_MATH) or owner == "random" \
                        or (owner == "np" and node.attr == "random"):
                    problems.append(f"{where}: {owner}.{node.attr}")
                elif owner == "rng" and node.attr not in BIT_SOURCE:
                    problems.append(f"{where}: rng.{node.attr}")
    return problems


#: what the sampling code may ask of its bit source: integers only
BIT_SOURCE = frozenset({"getrandbits", "u64"})

#: ``math``'s functions of integers only (exact): allowed in the sampling code.
INTEGER_MATH = frozenset({"gcd", "lcm", "isqrt", "comb"})


def run_every_step(rng) -> list[np.ndarray]:
    """Each public step once, on a few coordinates, with the given bit source; their outputs."""
    lo, mid, hi = Fraction(1, 3), Fraction(1, 2), Fraction(2)
    v_lo = lattice.sample(lo, 50, rng)
    v_hi = lattice.relax(v_lo, lo, hi, rng)
    out = [v_lo, v_hi, lattice.tighten(v_hi, hi, mid, rng), lattice.bridge(v_lo, lo, v_hi, hi, mid, rng)]
    return out + [lattice.step(Fraction(1), [1, 2, 3], rng, below=(Fraction(1, 2), np.array([3, 0, -1])))[0]]
