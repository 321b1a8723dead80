"""A black-box privacy audit of the product's release pipeline on the Skellam path.

    python -m bench.skellam_audit                  # the deep run: 10^6 listings per dataset
    python -m bench.skellam_audit --listings 400000 --seed 7

Modelled on :mod:`bench.product_audit` (the lattice path's audit): a marketplace sells one spec of
statistics on a dataset ``D`` and, separately, on a worst-case neighbour ``D'`` (one record added
under a private size, one replaced under a public size); each *listing* has its own noise path and
releases its whole answer at a few levels of its ladder, in a given order. Every step is the
product's own code:

* :func:`market.catalog.spec.build_plan` (``mechanism="skellam"``) and ``compute`` lay the spec out in
  grid steps and give the true answers and each value's weight (its group's sensitivity in steps);
* the listing's calibration (``releases.engine.mechanisms.skellam.calibration``, ceiling 4, delta
  1e-9) and the mechanism bound to it (``mechanism("skellam").bound``), as a listing is made;
* the noise at each level from the bound mechanism's ``step``, asked exactly as
  ``releases.services._point_at`` asks it: a level already released is reused, otherwise the
  counts are drawn from the nearest released levels below and above (initial, relax, tighten or
  bridge);
* the released values from its ``values`` (the answer plus ``N_A - N_B``, clamped, on the grid).

Many listings are simulated at once: given the levels, ``step`` moves every coordinate on its own
(each weight's coordinates at their own time, with the same thinning and bridge probabilities for
all; the counts of one coordinate never enter another's draw), so one path of ``listings x dim``
coordinates is, in law, ``listings`` independent paths (``tests/engine/test_skellam_audit.py``
checks it against listings drawn one by one).

What is measured: for events ``E`` on the joint output (all the levels of one listing) fixed in
advance, Clopper-Pearson bounds, jointly valid at ``1 - FALSE_ALARM`` (Bonferroni), on
``P_D(E)`` from below and ``P_D'(E)`` from above (and the reverse), giving lower confidence bounds
on ``ln((P_D(E) - delta) / P_D'(E))``. Two claims are checked:

* the listing's: released at several levels it is ``(eps_max, delta)``-DP, ``eps_max`` its highest
  level and ``delta`` its own (1e-9): no bound at that ``delta`` above ``eps_max``;
* the path's, which is stronger: all the levels together are post-processing of the highest
  (docs/mathematics.md §17), so the joint output has at every ``delta`` at most the ``eps`` of one
  release at the highest level, ``eps_top(delta)`` from its exact privacy-loss law
  (``skellam_privacy.profile``, an upper bound). Checked at :data:`DELTAS`.

Why the second: with Gaussian-like noise, the loss ``eps_max`` at ``delta = 1e-9`` lives in tails of
mass about ``1e-9``, far beyond what any sample of listings sees (an honest release shows at most
a loss near 2 at ``eps_max = 4``); a mutant with fresh noise at every level loses a little more at
every ``delta`` (the releases' l2 sizes add in squares) but stays far below ``eps_max`` at ``1e-9``.
So at ``delta = 1e-9`` only a gross error can be seen (:func:`tenth_time`: a tenth of the calibrated
time, three times less noise), and the profile at larger ``delta``, where the audit's events have
mass, is what shows fresh noise (:func:`independent_noise`).

The events: the auditor knows the move ``t = u(D') - u(D)`` and reduces each level's release to
``z``, the Neyman-Pearson statistic of a Gaussian of the same variance, ``sum_i t_i (y_i - m_i) /
s_i^2`` over its standard deviation (``m`` the midpoint of the two answers, ``s_i^2 = 2 mu w_i^2``
the value's noise variance in steps), and, over the levels, ``total``: the same added over the
levels (the statistic if the levels were released independently). Events: every combination over
the levels of "at most t", "above t" or "anything" for a grid of thresholds ``t`` (``loss``), and the
tails of ``total``.

Plain numpy and scipy: no Django.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property

import numpy as np
from scipy import stats

from bench.product_audit import _describe, tail_counts
from market.catalog.compute import Table, compute
from market.catalog.spec import PRIVATE_SIZE, PUBLIC_SIZE, Neighbours, Plan, build_plan
from releases.engine import skellam_privacy as sp
from releases.engine.mechanisms import mechanism
from releases.engine.mechanisms.skellam import Skellam, calibration, shift_cases

__all__ = ["DEEP_ORDERS", "DELTAS", "FALSE_ALARM", "ORDERS", "Case", "Result", "audit", "cases", "claims",
           "independent_noise", "product_noise", "release", "tenth_time"]

#: The probability that any bound of one audit is wrong (exceeds the true loss).
FALSE_ALARM = 1e-6
#: The listings' ceiling (the top of their ladder) and delta.
CEILING = Decimal(4)
DELTA = Decimal("1e-9")
#: The deltas at which the path's claim (the highest level's profile) is checked.
DELTAS = (1e-9, 1e-6, 1e-4, 1e-3, 0.01, 0.03, 0.1, 0.2, 0.3)

#: Orders of release for the CI test: the ladder levels one listing is sold at, in order.
ORDERS: dict[str, tuple[str, ...]] = {
    "ascending": ("2", "4"),  # initial, relax
    "descending": ("4", "2"),  # initial, tighten
    "bridged": ("1", "4", "2"),  # initial, relax, bridge
}
#: More orders for the deep run.
DEEP_ORDERS: dict[str, tuple[str, ...]] = {
    **ORDERS,
    "tighten then bridge": ("4", "1", "2"),  # initial, tighten, bridge
    "tighten then relax": ("2", "1", "4"),  # initial, tighten, relax
    "relax twice": ("1", "2", "4"),  # initial, relax, relax
    "reuse": ("2", "4", "2", "4"),  # initial, relax, reuse, reuse
    "four levels": ("2", "4", "1", "3"),  # initial, relax, tighten, bridge
}

#: Thresholds of each level's statistic and of the total, in standard deviations.
THRESHOLDS = np.arange(-6.0, 6.01, 0.5)


# --------------------------------------------------------------------------
# the datasets and their worst-case neighbours

COLUMNS = ("age", "score")


@dataclass(frozen=True, eq=False)
class Case:
    """One relation's plan, listing (``found``: the Skellam mechanism bound to its calibration), and
    true answers in grid steps on D (``u``) and on its worst-case neighbour (``u_neighbour``)."""

    name: str
    plan: Plan
    found: Skellam
    u: np.ndarray
    u_neighbour: np.ndarray

    @property
    def moving(self) -> np.ndarray:
        return np.flatnonzero(self.u != self.u_neighbour)

    @property
    def weights(self) -> np.ndarray:
        return np.asarray(self.plan.lattice.unit_weights, dtype=np.int64)

    @cached_property
    def claims(self) -> dict[float, float]:
        """:func:`claims` at :data:`DELTAS`, computed once."""
        return claims(self)

    def moves(self) -> tuple:
        """The neighbour's move as a :func:`skellam_privacy.case_of` case."""
        return sp.case_of([(int(i), int(self.u_neighbour[i] - self.u[i])) for i in self.moving], self.weights)


def _dataset(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Records well inside the bounds, so that clamping rarely hides a tail."""
    return np.column_stack([rng.integers(20, 80, rows).astype(float), rng.uniform(0.0, 30.0, rows)])


def _bound(plan: Plan, ceiling=CEILING, delta=DELTA) -> Skellam:
    """The Skellam mechanism bound to a listing of ``plan``, calibrated as the product calibrates it."""
    layout = plan.lattice
    calibrated = calibration(ceiling=ceiling, delta=delta, cases=shift_cases(layout.unit_cases, layout.unit_weights))
    plan_dict = {"calibration": calibrated, "weights": list(layout.unit_weights),
                 "layout": {"unit_cases": [list(map(list, case)) for case in layout.unit_cases]}}
    return mechanism("skellam").bound(plan_dict)


def cases(rows: int = 1000, seed: int = 20261128) -> dict[str, Case]:
    """The two cases, one per relation, with values of two weights.

    Private size: a count, a sum of ``age`` in [0, 100] on a grid of 50 (2 steps: weight 2), the
    count of ``age >= 50`` and a histogram of ``score`` in 3 bins. The neighbour adds the record
    (age 100, score 25): the count, the filtered count and the last bin move by 1, the sum by 2
    steps: each group by its full sensitivity, the plan's one worst case.

    Public size: the same without the count. The neighbour replaces (age 0, score 5) by (age 100,
    score 25): the sum moves by 2 steps, the filtered count by 1, the first bin by -1 and the last by
    +1 (the histogram's sensitivity is 2: weight 2).
    """
    rng = np.random.default_rng(seed)
    data = _dataset(rng, rows)
    common = [
        {"kind": "sum", "column": "age", "lower": 0, "upper": 100, "grid": 50},
        {"kind": "count", "where": [{"column": "age", "op": ">=", "value": 50}]},
        {"kind": "histogram", "column": "score", "bins": [0, 10, 20, 30]},
    ]
    extreme = np.array([[100.0, 25.0]])

    def answer(plan, values):
        return compute(plan, Table.from_matrix(COLUMNS, values))

    private = build_plan([{"kind": "count"}, *common], COLUMNS, neighbours=Neighbours(PRIVATE_SIZE), mechanism="skellam")
    added = np.concatenate([data, extreme])
    public = build_plan(common, COLUMNS, neighbours=Neighbours(PUBLIC_SIZE, size=rows), mechanism="skellam")
    before = data.copy()
    before[0] = [0.0, 5.0]
    replaced = before.copy()
    replaced[0] = extreme[0]
    return {
        "private size": Case("private size", private, _bound(private), answer(private, data), answer(private, added)),
        "public size": Case("public size", public, _bound(public), answer(public, before), answer(public, replaced)),
    }


def centroid_case(rows: int = 1000, seed: int = 20261128) -> Case:
    """A centroid of (age, score) under a public size: center (50, 15), radius 30, the default grid
    (1.5: 20 steps, 13 worst cases). The neighbour replaces a record on the ball's edge at 45 degrees
    below the center by the opposite one: the sums move by (28, 28) steps, within the bound of every
    record's rounded point (each moves by (14, 14))."""
    rng = np.random.default_rng(seed)
    data = _dataset(rng, rows)
    spec = [{"kind": "centroid", "columns": list(COLUMNS), "center": [50, 15], "radius": 30}]
    plan = build_plan(spec, COLUMNS, neighbours=Neighbours(PUBLIC_SIZE, size=rows), mechanism="skellam")
    edge = 30 / np.sqrt(2)
    before = data.copy()
    before[0] = [50 - edge, 15 - edge]
    replaced = before.copy()
    replaced[0] = [50 + edge, 15 + edge]

    def answer(values):
        return compute(plan, Table.from_matrix(COLUMNS, values))

    return Case("centroid", plan, _bound(plan), answer(before), answer(replaced))


def synthetic_case(rows: int = 1000, seed: int = 20261128) -> Case:
    """Synthetic data of (age, score) under a public size: age in bins at 40 and 60, score at 10 and 20
    (three tables: each column, and the pair). The neighbour replaces (age 0, score 5) by (age 100,
    score 25): one cell of each table down by one and another up, six values in all."""
    rng = np.random.default_rng(seed)
    data = _dataset(rng, rows)
    spec = [{"kind": "synthetic", "columns": [{"column": "age", "bins": [0, 40, 60, 100]},
                                              {"column": "score", "bins": [0, 10, 20, 30]}]}]
    plan = build_plan(spec, COLUMNS, neighbours=Neighbours(PUBLIC_SIZE, size=rows), mechanism="skellam")
    before = data.copy()
    before[0] = [0.0, 5.0]
    replaced = before.copy()
    replaced[0] = [100.0, 25.0]

    def answer(values):
        return compute(plan, Table.from_matrix(COLUMNS, values))

    return Case("synthetic data", plan, _bound(plan), answer(before), answer(replaced))


# --------------------------------------------------------------------------
# noise for many listings at once


def _levels(order) -> list[Decimal]:
    return [Decimal(str(level)) for level in order]


def product_noise(found: Skellam, weights, listings: int, order, rng: random.Random, methods=None) -> dict:
    """The counts of ``listings`` independent listings released at ``order``'s levels in that order,
    as the product makes them: ``{level: (listings, dim, 2) array}``.

    Mirrors ``releases.services._point_at``: a released level is read back; a new one is one
    ``step`` of the bound mechanism from the nearest released levels below and above. Appends each
    step's method to ``methods`` if given."""
    w = np.tile(np.asarray(weights, dtype=np.int64), listings)
    dim = len(weights)
    known: dict[Decimal, np.ndarray] = {}
    for level in _levels(order):
        if level in known:
            if methods is not None:
                methods.append("reuse")
            continue
        below = max((e for e in known if e < level), default=None)
        above = min((e for e in known if e > level), default=None)
        sides = {name: (at, known[at].reshape(-1, 2)) for name, at in (("below", below), ("above", above))
                 if at is not None}
        counts, method = found.step(level, dim=w.size, weights=w, rng=rng, **sides)
        if methods is not None:
            methods.append(method)
        known[level] = counts.reshape(listings, dim, 2)
    return known


def independent_noise(found: Skellam, weights, listings: int, order, rng: random.Random, methods=None) -> dict:
    """Broken on purpose: a fresh first draw at every new level (``step`` with no neighbours), no
    path. Each level alone is as noisy as the product's; together they tell more than the highest."""
    w = np.tile(np.asarray(weights, dtype=np.int64), listings)
    known = {}
    for level in _levels(order):
        if level not in known:
            counts, method = found.step(level, dim=w.size, weights=w, rng=rng)
            known[level] = counts.reshape(listings, len(weights), 2)
            if methods is not None:
                methods.append(method)
    return known


def tenth_time(found: Skellam) -> Skellam:
    """Broken on purpose: the listing's calibration with every time a tenth of its own (about
    three times less noise than its delta needs)."""
    cal = found.calibrated
    return Skellam({**cal, "times": [str(Fraction(t) / 10) for t in cal["times"]]})


def release(case: Case, u: np.ndarray, counts: np.ndarray, level) -> np.ndarray:
    """The released values of every listing, in grid steps, by the mechanism's own ``values``
    (``(listings, dim)``)."""
    listings, dim, _ = counts.shape
    layout = case.plan.lattice
    grids = np.array([Fraction(g) for g in layout.grids], dtype=object)
    values = case.found.values(np.tile(u, listings), counts.reshape(-1, 2), level=level,
                               weights=np.tile(layout.unit_weights, listings), lower=np.tile(layout.unit_lower, listings),
                               upper=np.tile(layout.unit_upper, listings), grids=[str(g) for g in layout.grids] * listings)
    steps = np.array([float(1 / g) for g in grids])
    return np.rint(np.asarray(values, dtype=np.float64).reshape(listings, dim) * steps)


# --------------------------------------------------------------------------
# the audit


@dataclass(frozen=True)
class Result:
    """An audit's outcome. ``bound``: the largest lower confidence bound on ``ln((P_D(E) - delta) /
    P_D'(E))`` (either direction) at the listing's delta; ``claim``: ``eps_max``. ``excess``: the
    largest, over :data:`DELTAS`, of the bound at that delta less ``eps_top(delta)`` (the path's
    claim: above 0 is a loss above it); ``at``: that delta; ``profile``: ``{delta: (bound, eps_top)}``.
    ``event``: the event of ``bound``; ``events``: how many (each in both directions); ``methods``:
    the steps the noise path took."""

    bound: float
    claim: float
    excess: float
    at: float
    profile: dict
    event: str
    events: int
    methods: tuple[str, ...]


def claims(case: Case, deltas=DELTAS) -> dict[float, float]:
    """``eps_top(delta)``: the least ``eps`` on a grid of 0.001 (so rounded up) at which one release at
    the listing's highest level is ``(eps, delta)``-DP, from its exact privacy-loss law (bisection:
    the profile falls as ``eps`` grows)."""
    found = case.found
    top = found.ladder()[-1]
    mu, worst = found.time(top), [case.moves()]

    def meets(k: int, delta: float) -> bool:
        return sp.profile(mu, worst, [k / 1000])[0] <= delta

    out = {}
    for delta in deltas:
        lo, hi = -1, 2000 * int(top)  # meets(hi); not meets(lo), or lo = -1
        if not meets(hi, delta):
            out[delta] = np.inf
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if meets(mid, delta) else (mid, hi)
        out[delta] = hi / 1000
    return out


def _statistics(case: Case, released: dict, levels, found: Skellam) -> dict[str, np.ndarray]:
    """Per listing: each level's ``z`` (``loss``) and their ``total`` (the module docstring)."""
    i = case.moving
    u, v, w = case.u[i].astype(np.float64), case.u_neighbour[i].astype(np.float64), case.weights[i].astype(np.float64)
    t, mid = v - u, (u + v) / 2.0
    z = np.empty((next(iter(released.values())).shape[0], len(levels)))
    s = np.empty_like(z)
    norms = []
    for j, level in enumerate(levels):
        var = 2.0 * float(found.time(level)) * w * w
        norm = np.sqrt(np.sum(t * t / var))
        s[:, j] = ((released[level][:, i] - mid) * t / var).sum(axis=1)
        z[:, j] = s[:, j] / norm
        norms.append(norm)
    total = s.sum(axis=1, keepdims=True) / np.sqrt(np.sum(np.square(norms)))
    return {"loss": z, "total": total}


def audit(case: Case, order, listings: int, rng: random.Random, noise=product_noise, found: Skellam | None = None,
          deltas=DELTAS, families=("loss", "total")) -> Result:
    """Audit one case released at the levels ``order`` (in that order): ``listings`` listings on D and
    as many, independently, on D'. ``noise`` makes their counts (:func:`product_noise`, or
    :func:`independent_noise`); ``found`` the mechanism drawing them (the listing's own, or
    :func:`tenth_time` of it); ``families`` the statistics the events are built on. The claims are always
    the listing's own (:func:`claims`)."""
    drawing = found or case.found
    levels = sorted(set(_levels(order)))
    counts = {}
    methods: list[str] = []
    for u in (case.u, case.u_neighbour):
        steps: list[str] = []
        drawn = noise(drawing, case.weights, listings, order, rng, steps)
        released = {level: release(case, u, drawn[level], level) for level in levels}
        methods = methods or steps
        for name, values in _statistics(case, released, levels, case.found).items():
            if name not in families:
                continue
            bins = np.searchsorted(THRESHOLDS, values, side="left")  # bin <= i  <=>  value <= t_i
            counts.setdefault(name, []).append(tail_counts(bins, THRESHOLDS.size + 1).ravel())
    events = sum(c[0].size for c in counts.values())
    alpha = FALSE_ALARM / (2 * events) / 2  # two directions; one lower and one upper bound each
    eps_top = case.claims if deltas == DELTAS else claims(case, deltas)
    listing_delta = float(case.found.delta)
    wanted = sorted({listing_delta, *deltas})
    best = {delta: (-np.inf, "") for delta in wanted}
    for name, (c_d, c_n) in counts.items():
        axes = ["total"] if name == "total" else [f"z@{level}" for level in levels]
        for num, den, direction in ((c_d, c_n, "D/D'"), (c_n, c_d, "D'/D")):
            with np.errstate(divide="ignore", invalid="ignore"):
                lower = stats.beta.ppf(alpha, num, listings - num + 1)  # CP lower bound on P(E) under num's dataset
                upper = stats.beta.ppf(1 - alpha, den + 1, listings - den)  # CP upper bound under den's
                lower = np.nan_to_num(lower, nan=0.0)
                for delta in wanted:
                    bound = np.log((lower - delta) / upper)
                    bound[~np.isfinite(bound)] = -np.inf
                    top = int(np.argmax(bound))
                    if bound[top] > best[delta][0]:
                        index = np.unravel_index(top, (2 * THRESHOLDS.size + 1,) * len(axes))
                        best[delta] = (float(bound[top]), f"{direction}: {_describe(index, THRESHOLDS, axes)}")
    profile = {delta: (best[delta][0], eps_top[delta]) for delta in deltas}
    excess, at = max((b - e, delta) for delta, (b, e) in profile.items())
    bound, event = best[listing_delta]
    return Result(bound, float(max(levels)), excess, at, profile, event, events, tuple(methods))


# --------------------------------------------------------------------------
# the deep run


def as_expected(label: str, result: Result) -> bool:
    """The deep run's verdict on one audit: the product within both claims; fresh noise above the
    profile; a tenth of the time above ``eps_max`` at the listing's delta."""
    if label == "product":
        return result.bound <= result.claim and result.excess <= 0
    if label == "independent noise":
        return result.excess > 0
    return result.bound > result.claim


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listings", type=int, default=1_000_000, help="listings per dataset and case")
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    failures = 0
    print(f"{args.listings:,} listings per dataset; ceiling {CEILING}, delta {DELTA}; bounds jointly valid at "
          f"1 - {FALSE_ALARM:g} per audit")
    for case in [*cases().values(), centroid_case(), synthetic_case()]:
        print(f"\n{case.name}: {len(case.plan.labels)} values, weights {case.weights.tolist()}, worst case "
              f"{case.moves()}; times {dict(zip(case.found.calibrated['levels'], case.found.calibrated['times']))}")
        print(f"  eps_top(delta) of the highest level: {claims(case)}")
        for order_name, order in DEEP_ORDERS.items():
            variants = [("product", product_noise, None), ("independent noise", independent_noise, None)]
            if order_name in ORDERS:
                variants.append(("a tenth of the time", product_noise, tenth_time(case.found)))
            for label, noise, found in variants:
                start = time.perf_counter()
                r = audit(case, order, args.listings, rng, noise=noise, found=found)
                ok = as_expected(label, r)
                failures += not ok
                print(f"  {order_name:20s} {label:20s} at delta {float(DELTA):g}: {r.bound:6.3f} (claim {r.claim:g}); "
                      f"over the profile: {r.excess:+.3f} at delta {r.at:g}; {'ok' if ok else 'FAIL'} "
                      f"[{', '.join(r.methods)}; {time.perf_counter() - start:.1f} s]; event {r.event}")
    print(f"\n{'all as claimed' if not failures else f'{failures} FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
