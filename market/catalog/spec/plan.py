"""A validated spec laid out as one answer vector (:class:`Plan`), stored and restored
(:func:`plan_layout`, :func:`plan_restore`), described and presented (:func:`describe`, :func:`present`)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import numpy as np

from releases.engine import lattice
from releases.engine.mechanisms import Mechanism
from releases.engine.mechanisms import mechanism as mechanism_named
from releases.engine.postprocess import laplace_error_bound

from .columns import columns_from
from .coordinates import Aggregate
from .grammar import (
    CONFIRM_PUBLIC,
    MAX_CASES,
    MAX_COORDINATES,
    MAX_LATTICE_UNITS,
    MAX_STATISTICS,
    SpecError,
    _plain,
    _steps,
    _text,
)
from .kinds import KINDS, OFFERED_KINDS
from .kinds.base import Reading
from .kinds.vector import Vector
from .stability import Group, Neighbours

#: The float Laplace path (docs/mathematics.md sections 1-6), every listing made before the lattice.
LAPLACE = "laplace"
#: The exact lattice path (section 11): integer noise, exactly eps-DP.
LATTICE = "lattice"
#: The exact Skellam path (section 17): Gaussian-like integer noise, (eps, delta)-DP.
SKELLAM = "skellam"


@dataclass(frozen=True, eq=False)
class Lattice:
    """How an l1 plan runs on the exact lattice path (docs/mathematics.md section 11).

    Coordinate ``i`` is an integer number of steps of ``grids[i]`` (1 for a
    count or a bin; a sum's declared grid, its values rounded to it). Its
    noise is discrete Laplace at level ``eps / unit_weights[i]``: the group's
    l1-sensitivity in steps times the number of groups, an integer, so the
    whole vector is exactly eps-DP. ``unit_lower`` / ``unit_upper``: the
    declared range in steps (released values are clamped to it).
    ``unit_cases``: per worst-case neighbour, ``(coordinate, move in steps)``
    for each coordinate it moves.
    """

    grids: tuple[Decimal, ...]
    unit_weights: tuple[int, ...]
    unit_lower: tuple[int, ...]
    unit_upper: tuple[int, ...]
    unit_cases: tuple[tuple[tuple[int, int], ...], ...]

    def levels(self, eps) -> list[Fraction]:
        """The per-coordinate lattice levels ``eps / w_i``, exact."""
        return lattice.levels_for(Decimal(str(eps)), self.unit_weights)

    def value(self, i: int, units: int):
        """Coordinate ``i``'s value from its steps: an int on an integer grid, else the exact
        decimal as a float (exact to print: at most 15 significant digits)."""
        amount = Decimal(int(units)) * self.grids[i]
        return int(amount) if amount == amount.to_integral_value() else float(amount)

    def bound(self, i: int, eps, confidence: float = 0.95) -> float:
        """The ``confidence`` error bound of coordinate ``i`` at listing level ``eps``, from the
        discrete Laplace tails (in the value's units)."""
        level = Fraction(Decimal(str(eps))) / self.unit_weights[i]
        steps = lattice.error_bound(level, Fraction(str(confidence)))
        return float(steps * self.grids[i])


@dataclass(frozen=True, eq=False)
class Plan:
    """A validated spec, laid out as the coordinates of one answer vector.

    ``statistics``: the normalised spec (bounds and edges as floats).
    ``labels``: one unique label per coordinate, e.g. "count", "sum(age)",
    "sum(age; 0..100)" (when one column is summed with several bounds),
    "age in [0, 18)", "age in [50, 100]" (the last bin is closed).
    ``sensitivity``: l1-sensitivity of the whole vector under the dataset's
    relation (l2 for a vector statistic).
    ``lower``, ``upper``: per coordinate, the declared range of the answer,
    from public information only (read-only arrays).
    ``indices``: per statistic, the coordinates it reads: ``(i,)`` for a count
    or a sum, ``(sum, count)`` for a mean with a private size, ``(sum,)``
    with a public size, one per bin for a histogram.
    ``weights``: per coordinate, the noise multiplier: the value released at
    level eps is ``u[i] + weights[i] * V_eps[i]``, Laplace of scale
    ``weights[i] / eps``. The budget eps is split equally over the K groups
    (the count, each sum, each histogram): a group of l1-sensitivity ``s``
    gets weight ``K * s``, so the whole release is eps-DP
    (``sum over groups of s / (K s) * eps = eps``) and no statistic pays for
    another's large range.
    ``loss_cases``: the worst-case neighbours' privacy losses, one tuple per
    case, with one entry per coordinate that moves: the fraction of eps that
    coordinate's privacy loss can reach (its move divided by its weight),
    exact. Each case adds up to at most 1 (the largest to exactly 1); the
    privacy-loss profile of a release at eps is, for each case, that of
    independent Laplace losses with parameters ``share * eps``, and the
    release's profile is the largest over the cases. Most plans have one
    case; a grouped sum under a public size has two incomparable ones (one
    cell by ``U - L``, or two cells by ``max(|L|, |U|)``), and the plan has
    every combination of its groups' cases (at most :data:`MAX_CASES`).
    ``loss_shares``: the one case of a single-case plan. None for an l2 plan.
    ``norm``: "l1" (per-coordinate Laplace noise) or "l2" for a vector
    statistic: its noise is the l2 path's, density proportional to
    ``exp(-eps ||v|| / sensitivity)``.
    ``neighbours``: the relation the plan was laid out for.
    ``lattice``: for a plan on the exact lattice path, its layout in grid steps
    (:class:`Lattice`); None on the float Laplace path. ``weights``, ``lower``
    and ``upper`` are then in the values' units (steps times grid).
    ``aggregates``: what the coordinates are on the data, in order
    (``market.catalog.compute.Aggregate``: one coordinate; ``Cells``: several); ``vector``: an l2 plan's vector
    statistic (``compute.Centroid`` or ``compute.Row``).
    """

    statistics: tuple[dict, ...]
    labels: tuple[str, ...]
    sensitivity: float
    lower: np.ndarray
    upper: np.ndarray
    indices: tuple[tuple[int, ...], ...]
    weights: np.ndarray
    loss_cases: tuple[tuple[Fraction, ...], ...] | None = None
    norm: str = "l1"
    neighbours: Neighbours = field(default_factory=Neighbours)
    aggregates: tuple = ()
    vector: object = None
    lattice: Lattice | None = None
    mechanism: object = None

    @property
    def engine(self) -> str:
        return LATTICE if self.lattice is not None else LAPLACE

    def mean_error(self, i: int, eps) -> float:
        """Coordinate ``i``'s expected absolute error at level ``eps``, in its units, by its mechanism's law
        (``Mechanism.value_mean_error``); ValueError when the mechanism states none."""
        return self._stated("value_mean_error", i, eps, "expected error")

    def variance(self, i: int, eps) -> float:
        """Coordinate ``i``'s noise variance at level ``eps``, in its units squared, by its mechanism's law
        (``Mechanism.value_variance``); ValueError when the mechanism states none."""
        return self._stated("value_variance", i, eps, "noise variance")

    def _stated(self, figure: str, i: int, eps, what: str) -> float:
        found = None if self.mechanism is None or self.lattice is None else \
            getattr(self.mechanism, figure)(self.lattice, i, eps)
        if found is None:
            raise ValueError(f"this plan's mechanism states no {what}")
        return found

    def radius(self, where, eps, confidence: float = 0.95) -> float:
        """The ``confidence`` error radius of the values at ``where`` together (a vector statistic on an
        exact l2 path), in their units, by the mechanism's law (``Mechanism.value_radius``)."""
        if self.mechanism is None or self.lattice is None:
            raise ValueError("only a plan on an exact l2 path states an error radius")
        found = self.mechanism.value_radius(self.lattice, tuple(where), eps, confidence)
        if found is None:
            raise ValueError("this mechanism states no error radius")
        return found

    def bound(self, i: int, eps, confidence: float = 0.95) -> float:
        """Coordinate ``i``'s ``confidence`` error bound at level ``eps`` (an l1 plan), by its engine's tails
        (the mechanism's own, when it states one: ``Mechanism.value_bound``)."""
        if self.mechanism is not None and self.lattice is not None:
            found = self.mechanism.value_bound(self.lattice, i, eps, confidence)
            if found is not None:
                return found
        if self.lattice is not None:
            return self.lattice.bound(i, eps, confidence)
        return laplace_error_bound(float(self.weights[i]) / float(eps), confidence)

    @property
    def loss_shares(self) -> tuple[Fraction, ...] | None:
        """The shares of a single-case plan (see ``loss_cases``); ValueError when it has several."""
        if self.loss_cases is None:
            return None
        if len(self.loss_cases) != 1:
            raise ValueError("this plan has several worst cases: read loss_cases")
        return self.loss_cases[0]


def expected_kinds() -> str:
    """The kinds a new listing may offer, in words: "count, sum, mean, histogram or table"."""
    names = list(OFFERED_KINDS)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _statistics(spec, columns) -> tuple[dict, ...]:
    if not isinstance(spec, (list, tuple)):
        raise SpecError(
            f'the statistics must be a list of objects such as {{"kind": "count"}}, got {type(spec).__name__}'
        )
    if not spec:
        raise SpecError("the list of statistics is empty")
    if len(spec) > MAX_STATISTICS:
        raise SpecError(f"at most {MAX_STATISTICS} statistics are allowed, got {len(spec)}")
    statistics: list[dict] = []
    for number, item in enumerate(spec, start=1):
        if not isinstance(item, dict):
            raise SpecError(f'statistic {number}: expected an object such as {{"kind": "count"}}, got {item!r}')
        kind = item.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            raise SpecError(
                f"statistic {number}: unknown kind {kind!r} (expected {expected_kinds()})"
            )
        if KINDS[kind].vector and len(spec) != 1:
            raise SpecError(f"statistic {number} ({kind}): a vector statistic is listed on its own")
        if KINDS[kind].alone and len(spec) != 1:
            raise SpecError(f"statistic {number} ({kind}): {KINDS[kind].title} is listed on its own")
        item = {key: value for key, value in item.items() if key != CONFIRM_PUBLIC}  # the services read it
        stat = KINDS[kind].validate(item, f"statistic {number} ({kind})", columns)
        for earlier, other in enumerate(statistics, start=1):
            if other == stat:
                raise SpecError(f"statistic {number} ({kind}): same as statistic {earlier}")
        statistics.append(stat)
    return tuple(statistics)


def _frozen(values) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def _vector_plan(stat: dict, kind: Vector, nb: Neighbours) -> Plan:
    sensitivity, lower, upper = kind.layout(stat, nb)
    dim = len(stat["columns"])
    return Plan(
        statistics=(stat,),
        labels=tuple(f"{kind.name}({name})" for name in stat["columns"]),
        sensitivity=sensitivity,
        lower=_frozen(lower),
        upper=_frozen(upper),
        indices=(tuple(range(dim)),),
        weights=_frozen([sensitivity] * dim),
        norm="l2",
        neighbours=nb,
        vector=kind.aggregate(stat),
    )


#: Why a vector statistic is refused on a mechanism other than an exact l2 one.
VECTOR_PATH = ("a centroid is released on the Skellam path (noise calibrated to the length of a record's change, "
               "on whole grid steps): choose that path, which needs a dataset with a δ")


def _vector_grid_plan(stat: dict, kind: Vector, nb: Neighbours, chosen) -> Plan:
    """A vector statistic on an exact l2 path (the Skellam path): one coordinate per column, whole
    grid steps, every worst case of the vector's change (``kind.grid_layout``)."""
    try:
        found = kind.grid_layout(stat, nb)
    except ValueError as exc:  # SpecError is one
        raise SpecError(f"statistic 1 ({kind.name}): {exc}") from None
    dim = len(found["labels"])
    grid = found["grid"]
    layout = Lattice(grids=(grid,) * dim, unit_weights=(1,) * dim, unit_lower=tuple(found["lower"]),
                     unit_upper=tuple(found["upper"]), unit_cases=found["cases"])
    step = float(grid)
    return Plan(
        statistics=(stat,),
        labels=tuple(found["labels"]),
        sensitivity=found["sensitivity"],
        lower=_frozen([v * step for v in found["lower"]]),
        upper=_frozen([v * step for v in found["upper"]]),
        indices=(tuple(range(dim)),),
        weights=_frozen([step] * dim),
        norm="l2",
        neighbours=nb,
        aggregates=(found["aggregate"],),
        lattice=layout,
        mechanism=chosen,
    )


def build_plan(spec, columns, *, neighbours: Neighbours | None = None, offer: bool = True,
               mechanism: Mechanism | str = LAPLACE) -> Plan:
    """Validate ``spec`` against the dataset's ``columns`` and lay it out for
    the dataset's relation ``neighbours`` (default: a private size).

    ``columns``: the dataset's :class:`~market.catalog.columns.Column` s, or
    anything :func:`~market.catalog.columns.columns_from` reads (plain names
    are complete decimal columns, as datasets made before types were).

    ``offer``: refuse, with the reason, a statistic the relation does not
    allow to be sold (a count whose number is public, a centroid over a
    private number of records, a point). Reading back an existing listing's
    releases passes ``offer=False``.

    The coordinates are, in order: the count of all records (once, if a
    statistic needs it); one group per distinct sum (column, bounds, filter
    and group-by) that a sum or a mean needs; then each histogram, table and
    other count (filtered or grouped, and a mean's count of present values),
    in spec order. Each such group has the l1-sensitivity its kind states for
    the relation, and one equal share of the budget. The declared ranges hold
    for any dataset of at most ``neighbours.rows`` records: counts and bins in
    ``[0, rows]``, a sum in ``[min(0, lower), max(0, upper)] * rows``. A spec
    without filters or group-bys over complete columns lays out exactly as it
    always has (its stored releases are read back with the plan).

    ``mechanism``: the release mechanism the plan is laid out for
    (``releases.engine.mechanisms``, or its name). One whose values are whole
    grid steps (``mechanism.on_grid``: the exact lattice path,
    docs/mathematics.md section 11) makes every coordinate an integer number of
    grid steps (a count's grid is 1, a sum's is its ``grid``), each group's
    sensitivity a whole number of steps, and ``plan.lattice`` holds the layout;
    any other lays out without grids (the retired float path). A vector
    statistic always runs on its l2 float path.

    Raises :class:`SpecError` naming the first invalid statistic, or when
    the plan would have more than :data:`MAX_COORDINATES` values or
    :data:`MAX_CASES` worst cases, or (lattice) a range too wide for its grid.
    """
    chosen = mechanism_named(mechanism) if isinstance(mechanism, str) else mechanism
    on_grid = chosen.on_grid
    nb = neighbours or Neighbours()
    cols = {column.name: column for column in columns_from(columns)}
    statistics = _statistics(spec, cols)
    if not on_grid:  # a mechanism off the grid keeps no grid
        statistics = tuple({k: v for k, v in stat.items() if k != "grid"} for stat in statistics)
    if offer:
        for number, stat in enumerate(statistics, start=1):
            reason = KINDS[stat["kind"]].refusal(stat, nb)
            if reason:
                raise SpecError(f"statistic {number} ({stat['kind']}): {reason}")
    first = KINDS[statistics[0]["kind"]]
    if first.vector:
        if chosen.carries_vectors and hasattr(first, "grid_layout"):
            return _vector_grid_plan(statistics[0], first, nb, chosen)
        if offer:
            raise SpecError(f"statistic 1 ({first.name}): {VECTOR_PATH}")
        return _vector_plan(statistics[0], first, nb)

    # every group once (by key), with the statistics' view of it
    groups: dict[tuple, tuple[Group, int]] = {}
    needs: list[tuple[tuple, ...]] = []
    for number, stat in enumerate(statistics, start=1):
        keys = []
        for group in KINDS[stat["kind"]].groups(stat, number, nb, cols, lattice=on_grid):
            if group.sensitivity == 0:
                raise SpecError(_constant_sum(stat, number))
            groups.setdefault(group.key, (group, number))
            keys.append(group.key)
        needs.append(tuple(keys))
    order = sorted(groups, key=lambda key: (groups[key][0].rank, groups[key][1]))

    width = sum(len(groups[key][0].labels) for key in order)
    if width > MAX_COORDINATES:
        raise SpecError(f"the statistics need {width:,} values; at most {MAX_COORDINATES:,} are allowed "
                        "(declare fewer categories or bins)")
    cases_count = math.prod(len(groups[key][0].cases) for key in order)
    if cases_count > MAX_CASES:
        raise SpecError(f"the statistics have {cases_count} worst cases for the privacy profile; at most {MAX_CASES} "
                        "are allowed (under a public size each grouped sum or mean doubles them: list fewer)")

    short = [label for key in order for label in groups[key][0].labels]
    labels: list[str] = []
    lower: list[float] = []
    upper: list[float] = []
    aggregates: list[Aggregate] = []
    at: dict[tuple, tuple[int, ...]] = {}
    for key in order:
        group, number = groups[key]
        clash = group.long_labels and any(short.count(label) > 1 for label in group.labels)
        start = len(labels)
        for label in group.long_labels if clash else group.labels:
            if label in labels:  # only with unusual column names
                label = f"{label} (statistic {number})"
            labels.append(label)
        lower += group.lower
        upper += group.upper
        aggregates += group.aggregates
        at[key] = tuple(range(start, len(labels)))

    k = len(order)
    weights = np.zeros(len(labels), dtype=np.float64)
    per_group: list[tuple[tuple[Fraction, ...], ...]] = []
    for key in order:
        group = groups[key][0]
        weights[list(at[key])] = k * group.sensitivity
        s = Fraction(group.sensitivity)
        per_group.append(tuple(tuple(Fraction(move) / (k * s) for move in case) for case in group.cases))
    cases = tuple(tuple(share for part in combo for share in part) for combo in itertools.product(*per_group))
    layout = (_lattice_layout([groups[key][0] for key in order], [at[key] for key in order], labels,
                              shares=chosen.shares_budget) if on_grid else None)
    if layout is not None:  # weights and ranges in the values' units: steps times grid
        grids = np.array([float(g) for g in layout.grids])
        weights = np.array(layout.unit_weights, dtype=np.float64) * grids
        lower = list(np.array(layout.unit_lower, dtype=np.float64) * grids)
        upper = list(np.array(layout.unit_upper, dtype=np.float64) * grids)
    weights.setflags(write=False)
    return Plan(
        statistics=statistics,
        labels=tuple(labels),
        sensitivity=float(sum(groups[key][0].sensitivity for key in order)),
        lower=_frozen(lower),
        upper=_frozen(upper),
        indices=tuple(tuple(i for key in keys for i in at[key]) for keys in needs),
        weights=weights,
        loss_cases=cases,
        neighbours=nb,
        aggregates=tuple(aggregates),
        lattice=layout,
        mechanism=chosen,  # its error bounds are the mechanism's (an uncalibrated one refuses to state them)
    )


def _constant_sum(stat: dict, number: int) -> str:
    """Why a sum or mean whose two bounds round to the same grid step is refused: with the number of
    records public, every record then adds the same amount, so the statistic is fixed by that number
    (its sensitivity is 0 and it has no noise to price)."""
    where = f"statistic {number} ({stat['kind']})"
    if "grid" not in stat:  # pragma: no cover - only a grid makes two different bounds one step
        return f"{where}: it would be the same on every dataset allowed, so it tells nothing; widen its bounds"
    grid = Decimal(stat["grid"])
    step = _steps(stat["lower"], grid) * grid
    width = Decimal(repr(stat["upper"])) - Decimal(repr(stat["lower"]))
    return (f"{where}: grid {_plain(grid)} rounds both lower {_text(stat['lower'])} and upper {_text(stat['upper'])} "
            f"to {_plain(step)}, so every record would add the same amount and, with the number of records public, "
            f"the statistic would tell nothing; use a grid finer than {_plain(width)} (the distance between the "
            "bounds) or wider bounds")


def _whole(x, what: str) -> int:
    if x != int(x):  # pragma: no cover - lattice groups are laid out in whole steps
        raise ValueError(f"{what} is not a whole number of steps: {x!r}")
    return int(x)


def _lattice_layout(groups: list[Group], at: list[tuple[int, ...]], labels: list[str], *, shares: bool = True) -> Lattice:
    """The plan's :class:`Lattice`: per coordinate its grid, weight ``K s`` (steps; ``s`` alone when
    the mechanism does not share the budget out by groups: its calibration composes them), range in
    steps; per worst case, each moved coordinate with its move (a group's moves fall on its first
    coordinates)."""
    k = len(groups) if shares else 1
    grids, weights, low, high = [Decimal(1)] * len(labels), [0] * len(labels), [0] * len(labels), [0] * len(labels)
    per_group = []
    for group, where in zip(groups, at):
        s = _whole(group.sensitivity, "a sensitivity")
        if s == 0:
            raise SpecError(f"{labels[where[0]]!r}: with this grid every value rounds to the same step, so it "
                            "reveals nothing but its size: use a finer grid")
        for j, i in enumerate(where):
            grids[i] = group.grid if group.grid is not None else Decimal(1)
            weights[i] = k * s
            low[i], high[i] = _whole(group.lower[j], "a bound"), _whole(group.upper[j], "a bound")
            if max(abs(low[i]), abs(high[i])) > MAX_LATTICE_UNITS:
                raise SpecError(f"{labels[i]!r}: its range, {low[i]:,} to {high[i]:,} steps of {_plain(grids[i])}, "
                                f"is too wide for exact integers (at most {MAX_LATTICE_UNITS:.0e} steps): "
                                "use a coarser grid or narrower bounds")
        per_group.append(tuple(tuple((where[min(j, len(where) - 1)], _whole(move, "a move")) for j, move in enumerate(case))
                               for case in group.cases))
    cases = tuple(tuple(pair for part in combo for pair in part) for combo in itertools.product(*per_group))
    return Lattice(tuple(grids), tuple(weights), tuple(low), tuple(high), cases)


def plan_layout(plan: Plan) -> dict:
    """What a listing stores of its plan (``Listing.plan``, JSON) beside what it holds already (its
    statistics, labels, sensitivity, weights, ranges and grids): the relation it was laid out for,
    the norm, the coordinates each statistic reads and the worst cases (shares as "p/q" text), so
    that :func:`plan_restore` reads the plan back without validating or laying it out again."""
    nb = plan.neighbours
    return {
        "norm": plan.norm,
        "neighbours": {"relation": nb.relation, "size": nb.size, "max_rows": nb.max_rows},
        "indices": [list(where) for where in plan.indices],
        "loss_cases": None if plan.loss_cases is None else [[str(share) for share in case] for case in plan.loss_cases],
        "unit_cases": None if plan.lattice is None else [[list(move) for move in case] for case in plan.lattice.unit_cases],
    }


def plan_restore(*, layout: dict, statistics, labels, sensitivity: float, weights, lower, upper, grids=None,
                 mechanism=None) -> Plan:
    """The plan a listing was made with, from what it stores: ``layout`` (:func:`plan_layout`) and its
    fields (on the lattice path ``weights``, ``lower`` and ``upper`` in grid steps and ``grids`` as
    decimal text, else floats). The same plan :func:`build_plan` made, but for ``aggregates`` and
    ``vector``: it reads releases and cannot be computed (``compute`` refuses it)."""
    lattice_plan = None
    if layout["unit_cases"] is not None:
        lattice_plan = Lattice(
            grids=tuple(Decimal(g) for g in grids),
            unit_weights=tuple(int(w) for w in weights),
            unit_lower=tuple(int(v) for v in lower),
            unit_upper=tuple(int(v) for v in upper),
            unit_cases=tuple(tuple((int(i), int(move)) for i, move in case) for case in layout["unit_cases"]),
        )
        steps = np.array([float(g) for g in lattice_plan.grids])  # as build_plan scales them: steps times grid
        weights = np.array(lattice_plan.unit_weights, dtype=np.float64) * steps
        lower = np.array(lattice_plan.unit_lower, dtype=np.float64) * steps
        upper = np.array(lattice_plan.unit_upper, dtype=np.float64) * steps
    cases = layout["loss_cases"]
    return Plan(
        statistics=tuple(statistics),
        labels=tuple(labels),
        sensitivity=float(sensitivity),
        lower=_frozen(lower),
        upper=_frozen(upper),
        indices=tuple(tuple(where) for where in layout["indices"]),
        weights=_frozen(weights),
        loss_cases=None if cases is None else tuple(tuple(Fraction(share) for share in case) for case in cases),
        norm=layout["norm"],
        neighbours=Neighbours(**layout["neighbours"]),
        lattice=lattice_plan,
        mechanism=mechanism,
    )


def describe(plan: Plan) -> list[str]:
    """Each statistic of the plan in words, in spec order (on the lattice path, with a sum's grid)."""
    out = []
    for stat in plan.statistics:
        text = KINDS[stat["kind"]].describe(stat, plan.neighbours)
        if plan.lattice is not None and "grid" in stat:
            text += f"; each value rounded to a multiple of {stat['grid']}"
        out.append(text)
    return out


def present(plan: Plan, released: np.ndarray, scale, confidence: float = 0.95, level=None) -> list[dict]:
    """The released vector as the buyer reads it: one dict per requested
    statistic, in spec order, ``{"label", "kind", "value", "noise_scale", "error_bound"}``.

    ``released`` is the noisy, snapped vector (one value per label) and
    ``scale`` the noise scale of its coordinates: one number for all, or one
    per coordinate (``plan.weights / eps``). A released coordinate is within
    ``laplace_error_bound(scale, confidence)`` of the truth with probability
    ``confidence``. Each kind reads its own coordinates: a histogram expands
    into one dict per bin, a mean is derived from its sum (and the count when
    the size is private, by :func:`mean_estimate`), labelled like its sum
    ("mean(age)"); a vector statistic's bound is one radius for the whole point.

    A lattice plan needs the release's ``level`` (listing eps): its bounds come
    from the discrete Laplace tails at ``level / w_i``, and its whole-number
    coordinates are read back as ints.
    """
    vector = np.asarray(released, dtype=np.float64)
    if vector.shape != (len(plan.labels),):
        raise ValueError(f"released must have {len(plan.labels)} values, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise ValueError("released values must be finite")
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), vector.shape)
    if plan.lattice is not None:
        if level is None:
            raise ValueError("a lattice plan's readings need the release's level")
        each = 1.0 - (1.0 - confidence) / 2.0
        n = len(plan.labels)
        reading = Reading(
            vector, scales, np.array([plan.bound(i, level, confidence) for i in range(n)]), confidence, plan.neighbours,
            half=np.array([plan.bound(i, level, each) for i in range(n)]),
            integral=np.array([g == g.to_integral_value() for g in plan.lattice.grids]),
            bound_at=lambda i, c: plan.bound(i, level, c),
            radius_at=lambda where, c: plan.radius(where, level, c),  # a vector statistic's (the mechanism states it)
        )
    else:
        bounds = np.array([laplace_error_bound(b, confidence) for b in scales])
        reading = Reading(vector, scales, bounds, confidence, plan.neighbours,
                          bound_at=lambda i, c: laplace_error_bound(float(scales[i]), c))
    readings: list[dict] = []
    for stat, where in zip(plan.statistics, plan.indices):
        readings += KINDS[stat["kind"]].read(stat, list(plan.labels), where, reading)
    return readings

