"""The statistics a listing offers, released together as one vector.

A listing's *spec* is a JSON-able list of statistics over the dataset's
columns::

    [{"kind": "count"},
     {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
     {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
     {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 50, 100]}]

or one vector statistic on its own (a centroid). Each kind of statistic is
one class below (:class:`Count`, :class:`Sum`, :class:`Mean`,
:class:`Histogram`, :class:`Centroid`, and :class:`Point`, which is kept only
to read old releases): it owns its validation, the coordinates it needs, their
computation, sensitivity and labels, and how its released value and accuracy
are read back. Everything else iterates over :data:`KINDS`.

Who is protected is the dataset's *neighbouring relation*
(:class:`Neighbours`, docs/mathematics.md section 12), and every sensitivity
follows from it:

* **private size** (add or remove one record; the number of records n is
  private): a count moves by 1, a sum of values clamped to ``[L, U]`` by
  ``max(|L|, |U|)``, a histogram by 1 in one bin;
* **public size** (replace one record; n is public and declared): a count is
  not for sale (it is public), a sum moves by ``U - L``, a histogram by 1 in
  two bins (2 in all), a mean is the sum divided by the public n, a centroid
  of points pulled into a ball of radius R moves by ``2R / n``.

:func:`build_plan` validates a spec and lays it out as the coordinates of one
answer vector ``u``; :func:`compute` evaluates ``u`` on the data; the release
engine adds noise and snaps (``releases.postprocess``); :func:`present` turns
the released vector back into one reading per requested statistic with its
error bound. Coordinates are shared: a mean reads its sum's coordinate (and,
with a private size, the count's), which is post-processing and costs no
privacy.

This module is plain Python and numpy; it does not import Django.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from collections.abc import Callable
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from releases.postprocess import laplace_error_bound

__all__ = [
    "KINDS",
    "MAX_BINS",
    "MAX_BOUND",
    "MAX_STATISTICS",
    "PRIVATE_SIZE",
    "PUBLIC_SIZE",
    "RELATIONS",
    "VECTOR_KINDS",
    "Neighbours",
    "Plan",
    "SpecError",
    "build_plan",
    "compute",
    "describe",
    "l2_error_radius",
    "mean_estimate",
    "present",
]

#: A spec lists at most this many statistics.
MAX_STATISTICS = 20
#: A histogram has between 1 and this many bins.
MAX_BINS = 50
#: Bounds and bin edges lie within ``[-MAX_BOUND, MAX_BOUND]`` (as cells do in
#: an uploaded file), so that sensitivities and declared ranges stay finite.
MAX_BOUND = 1e15
#: A vector statistic has between 2 and this many columns.
MAX_VECTOR_DIM = 16

#: Add or remove one record: the number of records is private.
PRIVATE_SIZE = "private_size"
#: Replace one record: the number of records is public.
PUBLIC_SIZE = "public_size"
RELATIONS = (PRIVATE_SIZE, PUBLIC_SIZE)


class SpecError(ValueError):
    """A spec is invalid; the message names the statistic, e.g.
    "statistic 2 (sum): lower must be below upper"."""


@dataclass(frozen=True)
class Neighbours:
    """The dataset's neighbouring relation: which two datasets the release
    must not tell apart.

    ``relation``: :data:`PRIVATE_SIZE` (a neighbour has one record more or
    fewer) or :data:`PUBLIC_SIZE` (a neighbour has one record replaced; then
    ``size``, the number of records, is public). ``max_rows``: the most
    records any dataset may hold, which bounds the declared ranges when the
    size is private.
    """

    relation: str = PRIVATE_SIZE
    size: int | None = None
    max_rows: int = 100_000

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ValueError(f"max_rows must be a positive integer, got {self.max_rows!r}")
        if self.relation == PUBLIC_SIZE:
            if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
                raise ValueError(f"a public size is a positive number of records, got {self.size!r}")
        elif self.size is not None:
            raise ValueError("a private size has no public number of records")

    @property
    def public(self) -> bool:
        return self.relation == PUBLIC_SIZE

    @property
    def rows(self) -> int:
        """The most records the dataset can hold: its public size, else ``max_rows``."""
        return self.size if self.public else self.max_rows


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
    ``loss_shares``: for a worst-case neighbour, one entry per coordinate that
    moves: the fraction of eps that coordinate's privacy loss can reach
    (its move divided by its weight), exact. They add up to exactly 1; the privacy-loss
    profile of a release at eps is that of independent Laplace losses with
    parameters ``share * eps``. None for an l2 (vector) plan.
    ``norm``: "l1" (per-coordinate Laplace noise) or "l2" for a vector
    statistic: its noise is the l2 path's, density proportional to
    ``exp(-eps ||v|| / sensitivity)``.
    ``neighbours``: the relation the plan was laid out for.
    """

    statistics: tuple[dict, ...]
    labels: tuple[str, ...]
    sensitivity: float
    lower: np.ndarray
    upper: np.ndarray
    indices: tuple[tuple[int, ...], ...]
    weights: np.ndarray
    loss_shares: tuple[Fraction, ...] | None = None
    norm: str = "l1"
    neighbours: Neighbours = field(default_factory=Neighbours)


# --------------------------------------------------------------------------
# validation helpers


def _number(value, where: str, name: str) -> float:
    """``value`` as a float within ``[-MAX_BOUND, MAX_BOUND]``, or SpecError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecError(f"{where}: {name} must be a number, got {value!r}")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise SpecError(f"{where}: {name} must be a finite number, got {value!r}")
    if abs(x) > MAX_BOUND:
        raise SpecError(f"{where}: {name} must lie between -1e15 and 1e15, got {value!r}")
    return x + 0.0  # no negative zero


def _fields(item: dict, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    for key in item:
        if key != "kind" and key not in required and key not in optional:
            raise SpecError(f"{where}: unknown field {key!r}")
    for key in required:
        if key not in item:
            raise SpecError(f"{where}: missing field {key!r}")


def _column(item: dict, where: str, columns) -> str:
    column = item["column"]
    if not isinstance(column, str) or column not in columns:
        raise SpecError(f"{where}: no column named {column!r}")
    return column


def _bounds(item: dict, where: str) -> tuple[float, float]:
    lower = _number(item["lower"], where, "lower")
    upper = _number(item["upper"], where, "upper")
    if not lower < upper:
        raise SpecError(f"{where}: lower must be below upper")
    return lower, upper


def _text(x: float) -> str:
    """A bound or edge for a label: ``18`` rather than ``18.0``."""
    return str(int(x)) if x.is_integer() else repr(x)


# --------------------------------------------------------------------------
# groups: coordinates that share one part of the budget


@dataclass(frozen=True, eq=False)
class Group:
    """Coordinates of the answer vector that one or more statistics read,
    released with one equal share of the budget.

    ``key``: equal keys are one group (a mean and a sum with the same column
    and bounds read the same coordinate). ``rank``: the layout order (0 the
    count, 1 the sums, 2 the histograms; then first appearance).
    ``labels`` / ``long_labels``: the coordinates' labels, and the longer
    ones used when two groups would otherwise share a label. ``sensitivity``:
    the group's l1-sensitivity under the relation; ``moves``: how far each
    coordinate a worst-case neighbour changes moves (they add up to the
    sensitivity). ``measure(column, n)``: the group's true values from the
    column it reads (None for the count) and the number of records.
    """

    key: tuple
    rank: int
    labels: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    sensitivity: float
    moves: tuple[float, ...]
    measure: Callable[[np.ndarray | None, int], np.ndarray]
    column: str | None = None
    long_labels: tuple[str, ...] | None = None


def _count_group(nb: Neighbours) -> Group:
    return Group(
        key=("count",), rank=0, labels=("count",), lower=(0.0,), upper=(float(nb.rows),),
        sensitivity=1.0, moves=(1.0,), measure=lambda column, n: np.array([float(n)]),
    )


def _sum_group(column: str, lower: float, upper: float, nb: Neighbours) -> Group:
    # replacing a value in [L, U] moves the sum by at most U - L; adding or removing one by max(|L|, |U|)
    sensitivity = upper - lower if nb.public else max(abs(lower), abs(upper))
    return Group(
        key=("sum", column, lower, upper), rank=1,
        labels=(f"sum({column})",), long_labels=(f"sum({column}; {_text(lower)}..{_text(upper)})",),
        lower=(min(0.0, lower) * nb.rows,), upper=(max(0.0, upper) * nb.rows,),
        sensitivity=sensitivity, moves=(sensitivity,), column=column,
        measure=lambda values, n: np.array([math.fsum(np.clip(values, lower, upper).tolist())]),
    )


def _histogram_group(number: int, column: str, edges: list[float], nb: Neighbours) -> Group:
    labels = []
    for i in range(len(edges) - 1):
        close = "]" if i == len(edges) - 2 else ")"
        labels.append(f"{column} in [{_text(edges[i])}, {_text(edges[i + 1])}{close}")
    # adding or removing a record moves one bin by 1; replacing one moves one bin down and another up
    moves = (1.0, 1.0) if nb.public and len(edges) > 2 else (1.0,)
    bins = np.array(edges)
    return Group(
        key=("histogram", number), rank=2, labels=tuple(labels),
        lower=(0.0,) * len(labels), upper=(float(nb.rows),) * len(labels),
        sensitivity=float(len(moves)), moves=moves, column=column,
        measure=lambda values, n: np.histogram(values, bins=bins)[0].astype(np.float64),
    )


# --------------------------------------------------------------------------
# the kinds of statistic


@dataclass(frozen=True)
class Reading:
    """What :func:`present` hands a kind: the released vector, each
    coordinate's noise scale and error bound, and the confidence."""

    vector: np.ndarray
    scales: np.ndarray
    bounds: np.ndarray
    confidence: float
    neighbours: Neighbours


class Kind(ABC):
    """One kind of statistic. Subclasses set ``name`` and implement
    :meth:`validate`, :meth:`groups` and :meth:`describe`, and may override
    :meth:`read` and :meth:`curve`; :meth:`refusal` says why the kind is not
    sold under a relation (None when it is)."""

    name: ClassVar[str]
    #: a vector statistic is listed on its own and released with l2 noise
    vector: ClassVar[bool] = False

    @abstractmethod
    def validate(self, item: dict, where: str, columns) -> dict:
        """The normalised statistic, or SpecError naming what is wrong."""

    def refusal(self, stat: dict, nb: Neighbours) -> str | None:
        return None

    @abstractmethod
    def groups(self, stat: dict, number: int, nb: Neighbours) -> tuple[Group, ...]:
        """The groups of coordinates the statistic reads, in the order :meth:`read` expects them."""

    def curve_name(self, stat: dict) -> str:
        return f"{self.name} of {stat['column']}"

    @abstractmethod
    def describe(self, stat: dict, nb: Neighbours) -> str:
        """The statistic in words, as listing pages show it."""

    def curve(self, stat: dict, where: tuple[int, ...], weights, nb: Neighbours) -> dict | None:
        """The 95% error bound against eps, ``{"name", "bound": f(eps)}`` (one
        curve per statistic: every coordinate it reads has the same weight),
        or None when it cannot be stated from public information."""
        w = float(weights[where[0]])
        return {"name": self.curve_name(stat), "bound": lambda eps: laplace_error_bound(w / eps)}

    def read(self, stat: dict, labels: list[str], where: tuple[int, ...], r: Reading) -> list[dict]:
        """One reading per coordinate the statistic reads (the default)."""
        return [
            {
                "label": labels[i],
                "kind": self.name,
                "value": float(r.vector[i]),
                "noise_scale": float(r.scales[i]),
                "error_bound": float(r.bounds[i]),
            }
            for i in where
        ]


class Count(Kind):
    """The number of records. Sold only when it is private."""

    name = "count"

    def validate(self, item, where, columns):
        _fields(item, where, ())
        return {"kind": self.name}

    def refusal(self, stat, nb):
        if nb.public:
            return f"the number of records is public ({nb.size}): it is shown with the dataset, not sold"
        return None

    def groups(self, stat, number, nb):
        return (_count_group(nb),)

    def curve_name(self, stat):
        return "count of records"

    def describe(self, stat, nb):
        return "Count of records"


class Sum(Kind):
    """The sum of a column's values, each first clamped to ``[lower, upper]``."""

    name = "sum"

    def validate(self, item, where, columns):
        _fields(item, where, ("column", "lower", "upper"))
        column = _column(item, where, columns)
        lower, upper = _bounds(item, where)
        return {"kind": self.name, "column": column, "lower": lower, "upper": upper}

    def groups(self, stat, number, nb):
        return (_sum_group(stat["column"], stat["lower"], stat["upper"], nb),)

    def describe(self, stat, nb):
        return f"Sum of {stat['column']} (each value clamped to {stat['lower']:g} … {stat['upper']:g})"


class Mean(Sum):
    """The mean of a column's clamped values: its sum divided by the count
    (released too, when the size is private) or by the public size."""

    name = "mean"

    def groups(self, stat, number, nb):
        total = _sum_group(stat["column"], stat["lower"], stat["upper"], nb)
        return (total,) if nb.public else (total, _count_group(nb))

    def describe(self, stat, nb):
        by = f"divided by the public number of records, {nb.size:,}" if nb.public else "derived from the released sum and count"
        return f"Mean of {stat['column']} (each value clamped to {stat['lower']:g} … {stat['upper']:g}; {by})"

    def curve(self, stat, where, weights, nb):
        # the mean's bound divides by the number of records: stated only when that number is public
        if not nb.public:
            return None
        w, n, width = float(weights[where[0]]), nb.size, stat["upper"] - stat["lower"]
        return {"name": self.curve_name(stat), "bound": lambda eps: min(width, laplace_error_bound(w / eps) / n)}

    def read(self, stat, labels, where, r):
        lower, upper = stat["lower"], stat["upper"]
        total = where[0]
        label = "mean" + labels[total].removeprefix("sum")
        if r.neighbours.public:
            n = r.neighbours.size
            value = min(max(r.vector[total] / n, lower), upper)
            bound = min(r.bounds[total] / n, upper - lower)
            scale = r.scales[total] / n
        else:
            count = where[1]
            value, bound = mean_estimate(
                r.vector[total], r.vector[count], lower, upper, r.scales[total], r.confidence, r.scales[count]
            )
            scale = r.scales[total]
        return [{"label": label, "kind": self.name, "value": float(value), "noise_scale": float(scale),
                 "error_bound": float(bound)}]


class Histogram(Kind):
    """How many values of a column fall in each bin ``[e0, e1), ..., [e_{k-1}, e_k]``."""

    name = "histogram"

    def validate(self, item, where, columns):
        _fields(item, where, ("column", "bins"))
        column = _column(item, where, columns)
        bins = item["bins"]
        if not isinstance(bins, (list, tuple)):
            raise SpecError(f"{where}: bins must be a list of bin edges, got {bins!r}")
        if not 2 <= len(bins) <= MAX_BINS + 1:
            raise SpecError(
                f"{where}: bins must list between 2 and {MAX_BINS + 1} edges (1 to {MAX_BINS} bins), got {len(bins)}"
            )
        edges = [_number(edge, where, f"bin edge {i}") for i, edge in enumerate(bins, start=1)]
        for i in range(1, len(edges)):
            if not edges[i - 1] < edges[i]:
                raise SpecError(
                    f"{where}: bin edges must be strictly increasing (edge {i + 1} is not above edge {i})"
                )
        return {"kind": self.name, "column": column, "bins": edges}

    def groups(self, stat, number, nb):
        return (_histogram_group(number, stat["column"], stat["bins"], nb),)

    def curve_name(self, stat):
        return f"each bin of the {stat['column']} histogram"

    def describe(self, stat, nb):
        edges = stat["bins"]
        if len(edges) <= 8:
            return f"Histogram of {stat['column']}, bin edges {', '.join(f'{e:g}' for e in edges)}"
        return f"Histogram of {stat['column']} in {len(edges) - 1} bins from {edges[0]:g} to {edges[-1]:g}"


class _Vector(Kind):
    """A statistic on several columns at once, released alone with l2 noise
    (docs/mathematics.md section 6)."""

    vector = True
    optional: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()

    def validate(self, item, where, columns):
        _fields(item, where, self.required, self.optional)
        names = item["columns"]
        if not isinstance(names, (list, tuple)) or not 2 <= len(names) <= MAX_VECTOR_DIM:
            raise SpecError(f"{where}: columns must list 2 to {MAX_VECTOR_DIM} column names")
        for name in names:
            if not isinstance(name, str) or name not in columns:
                raise SpecError(f"{where}: no column named {name!r}")
        if len(set(names)) != len(names):
            raise SpecError(f"{where}: a column is listed twice")
        radius = _number(item["radius"], where, "radius")
        if radius <= 0:
            raise SpecError(f"{where}: radius must be positive")
        return {"kind": self.name, "columns": list(names), "radius": radius}

    def groups(self, stat, number, nb):
        """None: a vector statistic is laid out whole by :meth:`layout`, with l2 noise."""
        return ()

    @abstractmethod
    def layout(self, stat: dict, nb: Neighbours) -> tuple[float, list[float], list[float]]:
        """(l2 sensitivity, declared lower, declared upper) of the vector."""

    @abstractmethod
    def measure(self, stat: dict, points: np.ndarray, nb: Neighbours) -> np.ndarray:
        """The vector's true value from the records' points."""

    def curve(self, stat, where, weights, nb):
        dim, w = len(where), float(weights[where[0]])
        return {"name": f"error radius of the {self.name}", "bound": lambda eps: l2_error_radius(dim, w / eps)}

    def read(self, stat, labels, where, r):
        # one radius bounds the whole vector's Euclidean error, hence each coordinate's
        radius = l2_error_radius(len(where), float(r.scales[where[0]]), r.confidence)
        return [
            {"label": labels[i], "kind": self.name, "value": float(r.vector[i]),
             "noise_scale": float(r.scales[i]), "error_bound": radius}
            for i in where
        ]


class Centroid(_Vector):
    """``{"kind": "centroid", "columns": [...], "center": [...], "radius": R}``:
    the mean of the records' points, each first pulled into the ball of radius
    R around ``center``. It divides by the number of records, so it is sold
    only when that number is public: replacing one record moves the mean of n
    points by at most ``2R / n`` (two points of the ball are at most 2R apart).

    Listings made before the relation existed have a ``min_records`` field
    (sensitivity ``2R / (min_records - 1)``); they are read, never sold again.
    """

    name = "centroid"
    required = ("columns", "center", "radius")
    optional = ("min_records",)

    def validate(self, item, where, columns):
        out = super().validate(item, where, columns)
        center = item["center"]
        if not isinstance(center, (list, tuple)) or len(center) != len(out["columns"]):
            raise SpecError(f"{where}: center must list {len(out['columns'])} numbers, one per column")
        out["center"] = [_number(c, where, "center") for c in center]
        if "min_records" in item:
            least = item["min_records"]
            if isinstance(least, bool) or not isinstance(least, int) or least < 2:
                raise SpecError(f"{where}: min_records must be a whole number of at least 2")
            out["min_records"] = least
        return out

    def refusal(self, stat, nb):
        if "min_records" in stat:
            return ("min_records is no longer accepted: a centroid divides by the dataset's public "
                    "number of records, so leave it out")
        if not nb.public:
            return ("a centroid divides by the number of records, which this dataset keeps private; "
                    "list the sums of its columns and a count instead, or declare the size public")
        return None

    def describe(self, stat, nb):
        where = ", ".join(f"{c:g}" for c in stat["center"])
        text = (f"Centroid of ({', '.join(stat['columns'])}): the mean point, each record pulled within "
                f"{stat['radius']:g} of ({where})")
        return text + (f"; at least {stat['min_records']} records" if "min_records" in stat else "")

    def layout(self, stat, nb):
        radius, center = stat["radius"], stat["center"]
        if "min_records" in stat:
            sensitivity = 2.0 * radius / (stat["min_records"] - 1)
        else:
            sensitivity = 2.0 * radius / nb.rows
        return sensitivity, [c - radius for c in center], [c + radius for c in center]

    def measure(self, stat, points, nb):
        if nb.public and points.shape[0] != nb.size:
            raise ValueError(f"the dataset's public size is {nb.size} but it holds {points.shape[0]} records")
        center = np.asarray(stat["center"])
        offsets = points - center
        norms = np.linalg.norm(offsets, axis=1)
        pull = np.minimum(1.0, stat["radius"] / np.maximum(norms, 1e-300))
        return center + (offsets * pull[:, None]).mean(axis=0)


class Point(_Vector):
    """One record's point with noise of "radius r". Not sold: it protects a
    location up to distance r (geo-indistinguishability: two locations d apart
    have privacy loss eps * d / r, without bound), not any one record, so it
    cannot be counted in an eps budget. Kept to read the releases of listings
    made before it was withdrawn."""

    name = "point"
    required = ("columns", "row", "radius")

    def validate(self, item, where, columns):
        out = super().validate(item, where, columns)
        row = item["row"]
        if isinstance(row, bool) or not isinstance(row, int) or row < 1:
            raise SpecError(f"{where}: row must be a data line number (1 is the first record)")
        out["row"] = row
        return out

    def refusal(self, stat, nb):
        return ("one record's point is not offered: noise of a radius protects locations up to that "
                "distance, not any one record, and cannot be counted in an ε budget")

    def describe(self, stat, nb):
        return (f"One entity's point ({', '.join(stat['columns'])}) with noise of radius {stat['radius']:g} "
                "(withdrawn: not differentially private for a record)")

    def layout(self, stat, nb):
        dim = len(stat["columns"])
        return stat["radius"], [-MAX_BOUND] * dim, [MAX_BOUND] * dim

    def measure(self, stat, points, nb):
        if stat["row"] > points.shape[0]:
            raise ValueError(f"there is no record {stat['row']}: the dataset has {points.shape[0]}")
        return points[stat["row"] - 1].copy()


#: Every kind, by name.
KINDS: dict[str, Kind] = {kind.name: kind for kind in (Count(), Sum(), Mean(), Histogram(), Centroid(), Point())}
VECTOR_KINDS = tuple(name for name, kind in KINDS.items() if kind.vector)
#: The kinds a new listing may offer (the point is withdrawn).
OFFERED_KINDS = tuple(name for name in KINDS if name != "point")


# --------------------------------------------------------------------------
# building, computing, presenting


def _statistics(spec, columns) -> tuple[dict, ...]:
    if not isinstance(spec, (list, tuple)):
        raise SpecError(
            f'the statistics must be a list of objects such as {{"kind": "count"}}, got {type(spec).__name__}'
        )
    if not spec:
        raise SpecError("the list of statistics is empty")
    if len(spec) > MAX_STATISTICS:
        raise SpecError(f"at most {MAX_STATISTICS} statistics are allowed, got {len(spec)}")
    known = set(columns)
    statistics: list[dict] = []
    for number, item in enumerate(spec, start=1):
        if not isinstance(item, dict):
            raise SpecError(f'statistic {number}: expected an object such as {{"kind": "count"}}, got {item!r}')
        kind = item.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            raise SpecError(
                f"statistic {number}: unknown kind {kind!r} (expected count, sum, mean, histogram, or alone centroid)"
            )
        if KINDS[kind].vector and len(spec) != 1:
            raise SpecError(f"statistic {number} ({kind}): a vector statistic is listed on its own")
        stat = KINDS[kind].validate(item, f"statistic {number} ({kind})", known)
        for earlier, other in enumerate(statistics, start=1):
            if other == stat:
                raise SpecError(f"statistic {number} ({kind}): same as statistic {earlier}")
        statistics.append(stat)
    return tuple(statistics)


def _frozen(values) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def _vector_plan(stat: dict, kind: _Vector, nb: Neighbours) -> Plan:
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
    )


def build_plan(spec, columns, *, neighbours: Neighbours | None = None, offer: bool = True) -> Plan:
    """Validate ``spec`` against the dataset's ``columns`` and lay it out for
    the dataset's relation ``neighbours`` (default: a private size).

    ``offer``: refuse, with the reason, a statistic the relation does not
    allow to be sold (a count whose number is public, a centroid over a
    private number of records, a point). Reading back an existing listing's
    releases passes ``offer=False``.

    The coordinates are, in order: the count (once, if a statistic needs it);
    one sum of the clamped column per distinct (column, lower, upper) that a
    sum or a mean needs; then each histogram's bins, in spec order. Each such
    group has the l1-sensitivity its kind states for the relation, and one
    equal share of the budget. The declared ranges hold for any dataset of at
    most ``neighbours.rows`` records: count and bins in ``[0, rows]``, a sum in
    ``[min(0, lower), max(0, upper)] * rows``.

    Raises :class:`SpecError` naming the first invalid statistic.
    """
    nb = neighbours or Neighbours()
    statistics = _statistics(spec, columns)
    if offer:
        for number, stat in enumerate(statistics, start=1):
            reason = KINDS[stat["kind"]].refusal(stat, nb)
            if reason:
                raise SpecError(f"statistic {number} ({stat['kind']}): {reason}")
    first = KINDS[statistics[0]["kind"]]
    if first.vector:
        return _vector_plan(statistics[0], first, nb)

    # every group once (by key), with the statistics' view of it
    groups: dict[tuple, tuple[Group, int]] = {}
    needs: list[tuple[tuple, ...]] = []
    for number, stat in enumerate(statistics, start=1):
        keys = []
        for group in KINDS[stat["kind"]].groups(stat, number, nb):
            groups.setdefault(group.key, (group, number))
            keys.append(group.key)
        needs.append(tuple(keys))
    order = sorted(groups, key=lambda key: (groups[key][0].rank, groups[key][1]))

    short = [label for key in order for label in groups[key][0].labels]
    labels: list[str] = []
    lower: list[float] = []
    upper: list[float] = []
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
        at[key] = tuple(range(start, len(labels)))

    k = len(order)
    weights = np.zeros(len(labels), dtype=np.float64)
    shares: list[float] = []
    for key in order:
        group = groups[key][0]
        weights[list(at[key])] = k * group.sensitivity
        shares += [Fraction(move) / (k * Fraction(group.sensitivity)) for move in group.moves]
    weights.setflags(write=False)
    return Plan(
        statistics=statistics,
        labels=tuple(labels),
        sensitivity=float(sum(groups[key][0].sensitivity for key in order)),
        lower=_frozen(lower),
        upper=_frozen(upper),
        indices=tuple(tuple(i for key in keys for i in at[key]) for keys in needs),
        weights=weights,
        loss_shares=tuple(shares),
        neighbours=nb,
    )


def compute(plan: Plan, columns, values: np.ndarray) -> np.ndarray:
    """The true answer ``u`` (float64, one value per label) on a dataset.

    ``values`` has one row per record and one column per name in
    ``columns``. A count is the number of rows; a sum adds the column's
    values clamped to ``[lower, upper]`` (with ``math.fsum``: correctly
    rounded, whatever the order of the rows); a histogram counts the values
    in ``[e0, e1), [e1, e2), ..., [e_{k-1}, e_k]``, values outside all bins
    are not counted.

    Raises ValueError if ``values`` is not a finite matrix matching
    ``columns``, if a column of the plan is missing, or if an answer falls
    outside its declared range (a dataset of more records than the plan allows).
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(columns):
        raise ValueError(f"values must have shape (n_rows, {len(columns)}), got {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("values must be finite")
    position = {name: i for i, name in enumerate(columns)}
    nb = plan.neighbours
    if nb.public and data.shape[0] != nb.size:
        raise ValueError(f"the dataset's public size is {nb.size} but it holds {data.shape[0]} records")
    if plan.norm == "l2":
        stat = plan.statistics[0]
        missing = [name for name in stat["columns"] if name not in position]
        if missing:
            raise ValueError(f"the dataset has no column {missing[0]!r}")
        points = data[:, [position[name] for name in stat["columns"]]]
        return KINDS[stat["kind"]].measure(stat, points, nb)
    u = np.zeros(len(plan.labels), dtype=np.float64)
    n = data.shape[0]
    done: set[tuple] = set()
    for number, (stat, where) in enumerate(zip(plan.statistics, plan.indices), start=1):
        at = 0
        for group in KINDS[stat["kind"]].groups(stat, number, nb):
            width = len(group.labels)
            if group.key not in done:
                done.add(group.key)
                if group.column is not None and group.column not in position:
                    raise ValueError(f"the data has no column named {group.column!r}")
                column = None if group.column is None else data[:, position[group.column]]
                u[list(where[at:at + width])] = group.measure(column, n)
            at += width
    outside = np.flatnonzero((u < plan.lower) | (u > plan.upper))
    if outside.size:
        i = outside[0]
        raise ValueError(
            f"the answer for {plan.labels[i]!r} is {u[i]:g}, outside its declared range "
            f"[{plan.lower[i]:g}, {plan.upper[i]:g}]: the dataset has more records than the plan allows"
        )
    return u


def mean_estimate(
    released_sum,
    released_count,
    lower: float,
    upper: float,
    scale: float,
    confidence: float = 0.95,
    count_scale: float | None = None,
):
    """A mean read off a released sum and count, with its error bound.

    The true mean is ``m = s / c`` for the true sum ``s`` of the values
    clamped to ``[lower, upper]`` and the true count ``c``, so ``m`` lies in
    ``[lower, upper]``. The released ``S = s + a`` and ``C = c + b`` carry
    Laplace noise of scale ``scale`` and ``count_scale`` (default: the same),
    rounded to the grid and clamped to a range holding the true value. Let

        t_s = laplace_error_bound(scale, 1 - (1 - confidence) / 2)
        t_c = laplace_error_bound(count_scale, 1 - (1 - confidence) / 2)

    (each includes half a grid step): ``|a| > t_s`` and ``|b| > t_c`` each
    have probability at most ``(1 - confidence) / 2``, so by the union bound
    both are within bounds with probability at least ``confidence``. On that
    event, with the raw estimate ``M = S / C``,

        M - m = (a - M b) / c,  so  |M - m| <= (t_s + |M| t_c) / c <= (t_s + |M| t_c) / (C - t_c)

    when ``C > t_c`` (then ``c >= C - t_c > 0``). The value returned is ``M``
    clamped to ``[lower, upper]``, which only brings it closer to ``m``; and
    no error exceeds the width ``upper - lower``, so the bound is capped
    there. When ``C <= t_c`` nothing better than the width is known. When
    ``C <= 0.5`` dividing by ``C`` is meaningless and the value is the
    midpoint of ``[lower, upper]``, with the width as its bound.

    Works elementwise on arrays; returns ``(value, bound)``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    each = 1.0 - (1.0 - confidence) / 2.0
    t_s = laplace_error_bound(scale, each)
    t_c = t_s if count_scale is None else laplace_error_bound(count_scale, each)
    s = np.asarray(released_sum, dtype=np.float64)
    c = np.asarray(released_count, dtype=np.float64)
    width = upper - lower
    meaningful = c > 0.5
    raw = s / np.where(meaningful, c, 1.0)
    value = np.where(meaningful, np.clip(raw, lower, upper), (lower + upper) / 2.0)
    informative = meaningful & (c > t_c)
    bound = np.where(informative, (t_s + np.abs(raw) * t_c) / np.where(informative, c - t_c, 1.0), width)
    bound = np.minimum(bound, width)
    return value[()], bound[()]


def l2_error_radius(dim: int, scale: float, confidence: float = 0.95) -> float:
    """A radius holding the released point's error with probability ``confidence``:
    the l2 noise's norm is Gamma(dim, scale); rounding each coordinate to the grid
    adds at most half a step per coordinate."""
    from scipy.stats import gamma

    from releases.postprocess import grid_step

    return float(gamma.ppf(confidence, dim, scale=scale)) + math.sqrt(dim) * grid_step(scale) / 2.0


def describe(plan: Plan) -> list[str]:
    """Each statistic of the plan in words, in spec order."""
    return [KINDS[stat["kind"]].describe(stat, plan.neighbours) for stat in plan.statistics]


def present(plan: Plan, released: np.ndarray, scale, confidence: float = 0.95) -> list[dict]:
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
    """
    vector = np.asarray(released, dtype=np.float64)
    if vector.shape != (len(plan.labels),):
        raise ValueError(f"released must have {len(plan.labels)} values, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise ValueError("released values must be finite")
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), vector.shape)
    bounds = np.array([laplace_error_bound(b, confidence) for b in scales])
    reading = Reading(vector, scales, bounds, confidence, plan.neighbours)
    readings: list[dict] = []
    for stat, where in zip(plan.statistics, plan.indices):
        readings += KINDS[stat["kind"]].read(stat, list(plan.labels), where, reading)
    return readings
