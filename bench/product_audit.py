"""A black-box privacy audit of the product's release pipeline.

    python -m bench.product_audit                  # the deep run: 2 x 10^6 listings per dataset
    python -m bench.product_audit --listings 1000000 --seed 7

The audit plays a marketplace that sells one spec of statistics on a dataset
``D`` and, separately, on a worst-case neighbour ``D'`` of it (one record
added under a private size, one record replaced under a public size). Each
*listing* has its own noise path and releases the whole answer vector at a few
levels, in a given order (ascending, descending, bridged...). Every step is
the product's own code:

* :func:`market.catalog.spec.build_plan` and ``compute`` lay out the
  spec for the relation and give the true answer vector ``u`` and the noise
  weights;
* the noise at each level comes from :class:`releases.engine.path.NoisePath`, asked
  exactly as ``releases.services._point_at`` asks it: a level already released
  is reused, otherwise a path is rebuilt from the nearest released levels
  below and above and drawn at the new level (initial, relax, tighten or
  bridge);
* the released value is ``snap(u + weights * V_eps, weights / eps, lower,
  upper)`` (``releases.engine.postprocess.snap``: rounding to the grid and clamping),
  as ``releases.services._release_make`` computes it.

Many listings are simulated at once: the l1 path treats every coordinate on
its own, so one path of dimension ``listings * dim`` is, in law, ``listings``
independent paths of dimension ``dim``, each taking the same step (the step
depends only on the levels already released, which all listings share).

What is measured: for a family of events ``E`` on the joint output (all levels
of one listing) fixed in advance, a Clopper-Pearson lower confidence bound on
``ln(P_D(E) / P_D'(E))`` and on the reverse ratio. All bounds of one audit
hold together (Bonferroni) with probability at least ``1 - FALSE_ALARM``
(10^-6): the largest of them is, with that confidence, a lower bound on the
pipeline's true privacy loss. The pipeline claims that a listing released at
several levels costs the largest level; an audit bound above that level would
be a privacy bug. The same audit on broken variants (:func:`independent_noise`,
fresh noise at every level; :func:`halved_histogram`, a histogram released
with the sensitivity of the wrong relation) shows that it has the power to
see a loss above the claim.

The events: the auditor knows which coordinates the neighbour moves, by how
much and in which direction (``delta = u(D') - u(D)``), and reduces each
level's released vector to two numbers:

* ``loss``: the privacy loss that level's release would have if it were
  exactly Laplace with the plan's weights, ``sum_i (|y_i - u_i| - |y_i - u'_i|)
  * eps / w_i``, divided by eps (so it lies in ``[-1, 1]``): the
  Neyman-Pearson statistic for one level;
* ``sum``: the released coordinates that move, projected on the direction of
  the move, each in units of its noise scale.

For each of them, the events are every combination, over the levels, of
"at most t", "above t" or "anything" for a grid of thresholds t (the tail
sets of the existing engine audit, ``tests/engine/test_privacy_audit.py``, in
as many dimensions as levels). A third family, ``total``, thresholds the
levels' losses added up (``sum_j eps_j * loss_j`` over ``sum_j eps_j``): the
Neyman-Pearson statistic if the levels were released independently. Any choice of events keeps the bounds valid;
these are chosen so that the worst case of an honest release (every moving
coordinate beyond both answers) and the extra loss of a broken one (the same
at several levels at once) are events of the family.

Plain numpy and scipy: no Django.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from market.catalog.compute import Table, compute
from market.catalog.spec import (
    PRIVATE_SIZE,
    PUBLIC_SIZE,
    Neighbours,
    Plan,
    build_plan,
)
from releases.engine.path import NoisePath
from releases.engine.postprocess import snap


def compute_on(plan, names, values):
    """The plan's answer on a float matrix with one column per name (through DuckDB)."""
    return compute(plan, Table.from_matrix(names, values))

__all__ = [
    "DEEP_ORDERS",
    "FALSE_ALARM",
    "ORDERS",
    "Case",
    "Result",
    "audit",
    "cases",
    "halved_histogram",
    "independent_noise",
    "product_noise",
    "release",
]

#: The probability that any bound of one audit is wrong (exceeds the true loss).
FALSE_ALARM = 1e-6

#: Orders of release for the CI test: the levels one listing is sold at, in order.
ORDERS: dict[str, tuple[float, ...]] = {
    "ascending": (0.5, 1.0),  # initial, relax
    "descending": (1.0, 0.5),  # initial, tighten
    "bridged": (0.25, 1.0, 0.5),  # initial, relax, bridge
}
#: More orders for the deep run.
DEEP_ORDERS: dict[str, tuple[float, ...]] = {
    **ORDERS,
    "tighten then bridge": (1.0, 0.25, 0.5),  # initial, tighten, bridge
    "tighten then relax": (0.5, 0.25, 1.0),  # initial, tighten, relax
    "relax twice": (0.25, 0.5, 1.0),  # initial, relax, relax
    "reuse": (0.5, 1.0, 0.5, 1.0),  # initial, relax, reuse, reuse
    "four levels": (0.5, 2.0, 0.25, 1.0),  # initial, relax, tighten, bridge
}

#: Thresholds for the per-level loss divided by eps (it lies in [-1, 1]);
#: +-0.999 isolate the atoms "every moving coordinate beyond both answers".
LOSS_THRESHOLDS = np.array([-0.999, -0.9, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 0.9, 0.999])
#: Thresholds for the projection, in units of the noise scale.
SUM_THRESHOLDS = np.array([-6.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 6.0])
#: Thresholds for the levels' losses added up, over the sum of the levels (in [-1, 1]).
TOTAL_THRESHOLDS = np.array(
    [-0.999, -0.95, -0.9, -0.85, -0.8, -0.75, -0.7, -0.6, -0.5, -0.25, 0.0,
     0.25, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.999]
)
THRESHOLDS = {"loss": LOSS_THRESHOLDS, "total": TOTAL_THRESHOLDS, "sum": SUM_THRESHOLDS}


# --------------------------------------------------------------------------
# the datasets and their worst-case neighbours


@dataclass(frozen=True, eq=False)
class Case:
    """One relation's spec, dataset ``D``, neighbour ``D'`` and plan.

    ``u`` and ``u_neighbour`` are the true answers (``compute``) on D and D'.
    """

    name: str
    plan: Plan
    columns: tuple[str, ...]
    data: np.ndarray
    neighbour: np.ndarray
    u: np.ndarray
    u_neighbour: np.ndarray

    @property
    def moving(self) -> np.ndarray:
        """The coordinates the neighbour moves."""
        return np.flatnonzero(self.u != self.u_neighbour)

    def shares(self, weights=None) -> np.ndarray:
        """Per moving coordinate, its move over its weight: the fraction of eps
        its privacy loss reaches. They add up to 1 for the product's weights."""
        w = self.plan.weights if weights is None else np.asarray(weights)
        i = self.moving
        return np.abs(self.u_neighbour[i] - self.u[i]) / w[i]


COLUMNS = ("age", "score", "balance")


def _dataset(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Records well inside the bounds, so that clamping rarely hides a tail."""
    return np.column_stack(
        [
            rng.integers(20, 80, rows).astype(float),
            rng.uniform(0.0, 30.0, rows),
            rng.uniform(-300.0, 150.0, rows),
        ]
    )


def cases(rows: int = 40, seed: int = 20261121) -> dict[str, Case]:
    """The two cases, one per relation, each with four groups of different weights.

    Private size: a count, a sum of ``age`` in [0, 100], the mean of age (it
    reads the sum and the count), a histogram of ``score`` in 3 bins and a sum
    of ``balance`` in [-500, 200]. The neighbour adds the record (age 100,
    score 25, balance -500): the count moves by 1, the age sum by 100, the
    last bin by 1, the balance sum by -500: each group by its full sensitivity.

    Public size: the same without the count (the size is public, not sold).
    The neighbour replaces the record (age 0, score 5, balance 200) by (age
    100, score 25, balance -500): the age sum moves by 100, the first bin by -1
    and the last by +1, the balance sum by -700: again each group by its full
    sensitivity (``U - L`` for a sum, 2 for a histogram).
    """
    rng = np.random.default_rng(seed)
    data = _dataset(rng, rows)
    common = [
        {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
        {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
        {"kind": "histogram", "column": "score", "bins": [0, 10, 20, 30]},
        {"kind": "sum", "column": "balance", "lower": -500, "upper": 200},
    ]
    extreme = np.array([[100.0, 25.0, -500.0]])
    out = {}

    private = build_plan([{"kind": "count"}, *common], COLUMNS, neighbours=Neighbours(PRIVATE_SIZE))
    added = np.concatenate([data, extreme])
    out["private size"] = Case(
        "private size", private, COLUMNS, data, added,
        compute_on(private, COLUMNS, data), compute_on(private, COLUMNS, added),
    )

    public = build_plan(common, COLUMNS, neighbours=Neighbours(PUBLIC_SIZE, size=rows))
    before = data.copy()
    before[0] = [0.0, 5.0, 200.0]
    replaced = before.copy()
    replaced[0] = extreme[0]
    out["public size"] = Case(
        "public size", public, COLUMNS, before, replaced,
        compute_on(public, COLUMNS, before), compute_on(public, COLUMNS, replaced),
    )
    return out


# --------------------------------------------------------------------------
# noise for many listings at once


def product_noise(dim: int, listings: int, levels, rng: np.random.Generator, methods=None) -> dict[float, np.ndarray]:
    """The unit noise of ``listings`` independent listings released at
    ``levels`` in that order, as the product makes it.

    Mirrors ``releases.services._point_at``: a released level is read back;
    a new one is drawn by a :class:`NoisePath` holding only the nearest
    released levels below and above. Returns ``{level: (listings, dim) array}``;
    appends each step's method to ``methods`` if given.
    """
    known: dict[float, np.ndarray] = {}
    for level in levels:
        level = float(level)
        if level in known:
            if methods is not None:
                methods.append("reuse")
            continue
        below = [e for e in known if e < level]
        above = [e for e in known if e > level]
        near = ([max(below)] if below else []) + ([min(above)] if above else [])
        path = NoisePath(
            dim * listings, near, [known[e].ravel() for e in near] if near else None
        )
        draw = path.draw(level, rng)
        if methods is not None:
            methods.append(draw.method)
        known[level] = draw.noise.reshape(listings, dim)
    return known


def independent_noise(dim: int, listings: int, levels, rng: np.random.Generator, methods=None) -> dict[float, np.ndarray]:
    """Broken on purpose: fresh Laplace noise at every new level, no path.

    Each level alone is as accurate as the product's, but together they cost
    the sum of the levels, not the largest.
    """
    known: dict[float, np.ndarray] = {}
    for level in levels:
        level = float(level)
        if level not in known:
            known[level] = rng.laplace(0.0, 1.0 / level, (listings, dim))
    return known


def release(plan: Plan, u: np.ndarray, noise: np.ndarray, eps: float, weights=None) -> np.ndarray:
    """The released vectors ``snap(u + weights * noise, weights / eps, lower, upper)``,
    one row per listing, as ``releases.services._release_make`` computes one.

    ``snap`` is called once per coordinate (a scalar scale: one grid step)
    rather than once per listing; the test suite checks that this gives the
    same values bit for bit.
    """
    w = plan.weights if weights is None else np.asarray(weights, dtype=np.float64)
    noisy = u + w * noise
    out = np.empty_like(noisy)
    for i in range(noisy.shape[1]):
        out[:, i] = snap(noisy[:, i], w[i] / eps, plan.lower[i], plan.upper[i])
    return out


def halved_histogram(case: Case) -> np.ndarray:
    """Broken weights: the histogram's bins with half their weight.

    Under a public size that is the sensitivity of the wrong relation (one
    bin moves by 1 when a record is added, but two bins move when one is
    replaced): the histogram's share of the loss doubles, so a release at eps
    costs ``(1 + histogram share) * eps``.
    """
    w = np.array(case.plan.weights, dtype=np.float64)
    for stat, where in zip(case.plan.statistics, case.plan.indices):
        if stat["kind"] == "histogram":
            w[list(where)] /= 2.0
    return w


# --------------------------------------------------------------------------
# the audit


@dataclass(frozen=True)
class Result:
    """An audit's outcome: ``bound`` the largest lower confidence bound on the
    privacy loss over all events (jointly valid at ``1 - FALSE_ALARM``),
    ``estimate`` the largest plain estimate among events seen at least 1000
    times under both datasets, ``event`` the event of the largest bound,
    ``events`` how many events were tried (each in both directions), and
    ``methods`` the steps the noise path took."""

    bound: float
    estimate: float
    event: str
    events: int
    methods: tuple[str, ...]


def tail_counts(bins: np.ndarray, k: int) -> np.ndarray:
    """Counts of every event "for each level: bin <= i, bin > i, or anything".

    ``bins`` is (samples, levels) of bin indices in ``0..k-1``. Returns an
    array of shape ``(2(k-1)+1,) * levels``: along each level, the lower tails
    ``bin <= i`` (i = 0..k-2), the upper tails ``bin > i``, then "anything".
    """
    levels = bins.shape[1]
    flat = np.ravel_multi_index(tuple(bins.T), (k,) * levels)
    grid = np.bincount(flat, minlength=k**levels).reshape((k,) * levels)
    for axis in range(levels):
        low = np.cumsum(grid, axis=axis).take(range(k - 1), axis=axis)
        up = np.flip(np.cumsum(np.flip(grid, axis), axis=axis), axis).take(range(1, k), axis=axis)
        total = grid.sum(axis=axis, keepdims=True)
        grid = np.concatenate([low, up, total], axis=axis)
    return grid


def _describe(index: tuple[int, ...], thresholds: np.ndarray, axes) -> str:
    k = thresholds.size
    parts = []
    for axis, i in zip(axes, index):
        if i < k:
            parts.append(f"{axis} <= {thresholds[i]:g}")
        elif i < 2 * k:
            parts.append(f"{axis} > {thresholds[i - k]:g}")
    return " and ".join(parts) or "anything"


def _statistics(case: Case, released: dict[float, np.ndarray], levels) -> dict[str, np.ndarray]:
    """Per listing and level, the ``loss`` and ``sum`` statistics (module docstring)."""
    i = case.moving
    u, v, w = case.u[i], case.u_neighbour[i], case.plan.weights[i]
    sign = np.sign(v - u)
    loss = np.empty((next(iter(released.values())).shape[0], len(levels)))
    proj = np.empty_like(loss)
    for j, eps in enumerate(levels):
        y = released[eps][:, i]
        loss[:, j] = ((np.abs(y - u) - np.abs(y - v)) / w).sum(axis=1)
        proj[:, j] = (sign * (y - (u + v) / 2.0) * eps / w).sum(axis=1)
    eps = np.array(levels)
    total = (loss * eps).sum(axis=1, keepdims=True) / eps.sum()
    return {"loss": loss, "total": total, "sum": proj}


def audit(
    case: Case,
    order,
    listings: int,
    rng: np.random.Generator,
    noise: Callable = product_noise,
    weights=None,
    families=("loss", "total", "sum"),
) -> Result:
    """Audit one case released at the levels ``order`` (in that order).

    ``listings`` listings are simulated on D and as many, independently, on
    D'; ``noise`` makes their unit noise (:func:`product_noise`, or a broken
    variant); ``weights`` replaces the plan's weights (a broken variant);
    ``families`` picks the statistics the events are built on.
    """
    plan = case.plan
    dim = len(plan.labels)
    levels = tuple(sorted({float(e) for e in order}))
    counts = {}
    methods: list[str] = []
    for u in (case.u, case.u_neighbour):
        steps: list[str] = []
        drawn = noise(dim, listings, order, rng, steps)
        released = {eps: release(plan, u, drawn[eps], eps, weights) for eps in levels}
        methods = methods or steps
        for name, values in _statistics(case, released, levels).items():
            if name not in families:
                continue
            thresholds = THRESHOLDS[name]
            bins = np.searchsorted(thresholds, values, side="left")  # bin <= i  <=>  value <= t_i
            counts.setdefault(name, []).append(tail_counts(bins, thresholds.size + 1).ravel())
    events = sum(c[0].size for c in counts.values())
    alpha = FALSE_ALARM / (2 * events) / 2  # two directions; one lower and one upper bound each
    best = (-np.inf, "")
    best_estimate = -np.inf
    for name, (c_d, c_n) in counts.items():
        thresholds = THRESHOLDS[name]
        for num, den, direction in ((c_d, c_n, "D/D'"), (c_n, c_d, "D'/D")):
            n = listings
            with np.errstate(divide="ignore", invalid="ignore"):
                lower = stats.beta.ppf(alpha, num, n - num + 1)  # CP lower bound on p_num
                upper = stats.beta.ppf(1 - alpha, den + 1, n - den)  # CP upper bound on p_den
                bound = np.log(lower / upper)
                estimate = np.log(num / den)
            bound[~np.isfinite(bound)] = -np.inf
            top = int(np.argmax(bound))
            if bound[top] > best[0]:
                axes = ["total loss"] if name == "total" else [f"{name}@{eps:g}" for eps in levels]
                index = np.unravel_index(top, (2 * thresholds.size + 1,) * len(axes))
                best = (float(bound[top]), f"{direction}: {_describe(index, thresholds, axes)}")
            seen = (num >= 1000) & (den >= 1000)
            if seen.any():
                best_estimate = max(best_estimate, float(estimate[seen].max()))
    return Result(best[0], best_estimate, best[1], events, tuple(methods))


# --------------------------------------------------------------------------
# the deep run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listings", type=int, default=2_000_000, help="listings per dataset and case")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    failures = 0
    print(f"{args.listings:,} listings per dataset; bounds jointly valid at 1 - {FALSE_ALARM:g} per audit")
    for case in cases().values():
        print(f"\n{case.name}: {len(case.plan.labels)} coordinates, weights {case.plan.weights.tolist()}, "
              f"loss shares {np.round(case.shares(), 4).tolist()}")
        for order_name, order in DEEP_ORDERS.items():
            top = max(order)
            variants = [("product", product_noise, None, top, "<="),
                        ("independent noise", independent_noise, None, sum(set(order)), ">")]
            if case.plan.neighbours.public:
                w = halved_histogram(case)
                variants.append(("halved histogram", product_noise, w, top * case.shares(w).sum(), ">"))
            for label, noise, weights, truth, want in variants:
                start = time.perf_counter()
                r = audit(case, order, args.listings, rng, noise=noise, weights=weights)
                ok = r.bound <= top if want == "<=" else r.bound > top
                failures += not ok
                print(f"  {order_name:20s} {label:18s} bound {r.bound:6.3f}  estimate {r.estimate:6.3f}  "
                      f"(claim {top:g}, true {truth:.3f}) {'ok' if ok else 'FAIL'}  "
                      f"[{', '.join(r.methods) or 'fresh'}; {time.perf_counter() - start:.1f} s]\n"
                      f"  {'':20s} {'':18s} event {r.event}")
    print(f"\n{'all as claimed' if not failures else f'{failures} FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
