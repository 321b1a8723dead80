"""The statistics a listing offers, released together as one vector.

A listing's *spec* is a JSON-able list of statistics over the dataset's
columns::

    [{"kind": "count"},
     {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
     {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
     {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 50, 100]}]

:func:`build_plan` validates a spec and lays it out as the coordinates of one
answer vector ``u`` with a known l1-sensitivity under adding or removing one
record; :func:`compute` evaluates ``u`` on the data; the release engine adds
noise and snaps (``releases.postprocess``); :func:`present` turns the released
vector back into one reading per requested statistic with its error bound.

A mean has no coordinate of its own: it is derived from the released sum of
the clamped column and the released count, which is post-processing and
costs no privacy.

This module is plain Python and numpy; it does not import Django.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from releases.postprocess import laplace_error_bound

__all__ = [
    "MAX_STATISTICS",
    "MAX_BINS",
    "MAX_BOUND",
    "SpecError",
    "Plan",
    "build_plan",
    "compute",
    "present",
    "mean_estimate",
]

#: A spec lists at most this many statistics.
MAX_STATISTICS = 20
#: A histogram has between 1 and this many bins.
MAX_BINS = 50
#: Bounds and bin edges lie within ``[-MAX_BOUND, MAX_BOUND]`` (as cells do in
#: an uploaded file), so that sensitivities and declared ranges stay finite.
MAX_BOUND = 1e15

# The fields of each kind of statistic, besides "kind".
_FIELDS = {
    "count": (),
    "sum": ("column", "lower", "upper"),
    "mean": ("column", "lower", "upper"),
    "histogram": ("column", "bins"),
}


class SpecError(ValueError):
    """A spec is invalid; the message names the statistic, e.g.
    "statistic 2 (sum): lower must be below upper"."""


@dataclass(frozen=True, eq=False)
class Plan:
    """A validated spec, laid out as the coordinates of one answer vector.

    ``statistics``: the normalised spec (bounds and edges as floats).
    ``labels``: one unique label per coordinate, e.g. "count", "sum(age)",
    "sum(age; 0..100)" (when one column is summed with several bounds),
    "age in [0, 18)", "age in [50, 100]" (the last bin is closed).
    ``sensitivity``: l1-sensitivity of the whole vector under adding or
    removing one record.
    ``lower``, ``upper``: per coordinate, the declared range of the answer,
    from public information only (read-only arrays).
    ``indices``: per statistic, the coordinates it reads: ``(i,)`` for a count
    or a sum, ``(sum, count)`` for a mean, one per bin for a histogram.
    ``weights``: per coordinate, the noise multiplier: the value released at
    level eps is ``u[i] + weights[i] * V_eps[i]``, Laplace of scale
    ``weights[i] / eps``. The budget eps is split equally over the K groups
    (the count, each sum, each histogram): a group of l1-sensitivity ``s``
    gets weight ``K * s``, so the whole release is eps-DP
    (``sum over groups of s / (K s) * eps = eps``) and no statistic pays for
    another's large range.
    ``norm``: "l1" (per-coordinate Laplace noise) or "l2" for a vector
    statistic (a centroid or one entity's point): its noise is the l2 path's,
    density proportional to ``exp(-eps ||v|| / sensitivity)``.
    """

    statistics: tuple[dict, ...]
    labels: tuple[str, ...]
    sensitivity: float
    lower: np.ndarray
    upper: np.ndarray
    indices: tuple[tuple[int, ...], ...]
    weights: np.ndarray
    norm: str = "l1"


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


def _validate_one(item, number: int, columns: set[str]) -> dict:
    """The normalised form of statistic ``number`` (1-based), or SpecError."""
    if not isinstance(item, dict):
        raise SpecError(f'statistic {number}: expected an object such as {{"kind": "count"}}, got {item!r}')
    kind = item.get("kind")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise SpecError(
            f"statistic {number}: unknown kind {kind!r} (expected count, sum, mean, histogram, or alone centroid or point)"
        )
    where = f"statistic {number} ({kind})"
    fields = _FIELDS[kind]
    for key in item:
        if key != "kind" and key not in fields:
            raise SpecError(f"{where}: unknown field {key!r}")
    for key in fields:
        if key not in item:
            raise SpecError(f"{where}: missing field {key!r}")
    out: dict = {"kind": kind}
    if "column" in fields:
        column = item["column"]
        if not isinstance(column, str) or column not in columns:
            raise SpecError(f"{where}: no column named {column!r}")
        out["column"] = column
    if kind in ("sum", "mean"):
        out["lower"] = _number(item["lower"], where, "lower")
        out["upper"] = _number(item["upper"], where, "upper")
        if not out["lower"] < out["upper"]:
            raise SpecError(f"{where}: lower must be below upper")
    if kind == "histogram":
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
        out["bins"] = edges
    return out


def _validate(spec, columns) -> tuple[dict, ...]:
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
        stat = _validate_one(item, number, known)
        for earlier, other in enumerate(statistics, start=1):
            if other == stat:
                raise SpecError(f"statistic {number} ({stat['kind']}): same as statistic {earlier}")
        statistics.append(stat)
    return tuple(statistics)


def _text(x: float) -> str:
    """A bound or edge for a label: ``18`` rather than ``18.0``."""
    return str(int(x)) if x.is_integer() else repr(x)


VECTOR_KINDS = ("centroid", "point")
MAX_VECTOR_DIM = 16


def _vector_plan(item: dict, columns: list[str]) -> Plan:
    """A vector statistic, released alone with l2 noise (docs/mathematics.md section 6).

    * ``{"kind": "centroid", "columns": [...], "center": [...], "radius": R, "min_records": n}``:
      the mean of the records' points, each first pulled into the ball of
      radius R around ``center``. Adding or removing one record moves the mean
      of n >= ``min_records`` points by at most ``2R / (min_records - 1)``
      (the l2 sensitivity); the dataset must hold at least ``min_records``.
    * ``{"kind": "point", "columns": [...], "row": i, "radius": r}``: the point
      of the record on data line ``i`` (1-based); ``r`` is the protection
      radius: points within r of each other are indistinguishable at eps = 1.
    """
    kind, where = item["kind"], f"statistic 1 ({item['kind']})"
    expected = {"centroid": {"kind", "columns", "center", "radius", "min_records"}, "point": {"kind", "columns", "row", "radius"}}[kind]
    for key in item:
        if key not in expected:
            raise SpecError(f"{where}: unknown field {key!r}")
    for key in expected:
        if key not in item:
            raise SpecError(f"{where}: missing field {key!r}")
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
    out = {"kind": kind, "columns": list(names), "radius": radius}
    dim = len(names)
    if kind == "centroid":
        center = item["center"]
        if not isinstance(center, (list, tuple)) or len(center) != dim:
            raise SpecError(f"{where}: center must list {dim} numbers, one per column")
        out["center"] = [_number(c, where, "center") for c in center]
        least = item["min_records"]
        if isinstance(least, bool) or not isinstance(least, int) or least < 2:
            raise SpecError(f"{where}: min_records must be a whole number of at least 2")
        out["min_records"] = least
        sensitivity = 2.0 * radius / (least - 1)
        lower = [c - radius for c in out["center"]]
        upper = [c + radius for c in out["center"]]
    else:
        row = item["row"]
        if isinstance(row, bool) or not isinstance(row, int) or row < 1:
            raise SpecError(f"{where}: row must be a data line number (1 is the first record)")
        out["row"] = row
        sensitivity = radius
        lower, upper = [-MAX_BOUND] * dim, [MAX_BOUND] * dim
    arrays = [np.array(a, dtype=np.float64) for a in (lower, upper, [sensitivity] * dim)]
    for array in arrays:
        array.setflags(write=False)
    return Plan(
        statistics=(out,),
        labels=tuple(f"{kind}({name})" for name in names),
        sensitivity=sensitivity,
        lower=arrays[0],
        upper=arrays[1],
        indices=(tuple(range(dim)),),
        weights=arrays[2],
        norm="l2",
    )


def _vector_compute(plan: Plan, position: dict, data: np.ndarray) -> np.ndarray:
    stat = plan.statistics[0]
    missing = [name for name in stat["columns"] if name not in position]
    if missing:
        raise ValueError(f"the dataset has no column {missing[0]!r}")
    points = data[:, [position[name] for name in stat["columns"]]]
    if stat["kind"] == "point":
        if stat["row"] > points.shape[0]:
            raise ValueError(f"there is no record {stat['row']}: the dataset has {points.shape[0]}")
        return points[stat["row"] - 1].copy()
    if points.shape[0] < stat["min_records"]:
        raise ValueError(f"the centroid needs at least {stat['min_records']} records; the dataset has {points.shape[0]}")
    center = np.asarray(stat["center"])
    offsets = points - center
    norms = np.linalg.norm(offsets, axis=1)
    pull = np.minimum(1.0, stat["radius"] / np.maximum(norms, 1e-300))
    return center + (offsets * pull[:, None]).mean(axis=0)


def l2_error_radius(dim: int, scale: float, confidence: float = 0.95) -> float:
    """A radius holding the released point's error with probability ``confidence``:
    the l2 noise's norm is Gamma(dim, scale); rounding each coordinate to the grid
    adds at most half a step per coordinate."""
    from scipy.stats import gamma

    from releases.postprocess import grid_step

    return float(gamma.ppf(confidence, dim, scale=scale)) + math.sqrt(dim) * grid_step(scale) / 2.0


def build_plan(spec, columns: list[str], *, max_rows: int = 100_000) -> Plan:
    """Validate ``spec`` against the dataset's ``columns`` and lay it out.

    The coordinates are, in order: the count (once, if a count or a mean is
    requested); one sum of the clamped column per distinct (column, lower,
    upper) that a sum or a mean needs (a sum and a mean with the same column
    and bounds share it); then each histogram's bins, in spec order.

    Adding or removing one record changes the count by 1, a sum of values
    clamped to ``[lower, upper]`` by at most ``max(|lower|, |upper|)``, and a
    histogram by 1 in exactly one bin (or none), hence the l1-sensitivity
    ``1 + sum of max(|lower|, |upper|) + 1 per histogram``. The declared ranges
    hold for any dataset of at most ``max_rows`` records: count and bins in
    ``[0, max_rows]``, a sum in ``[min(0, lower), max(0, upper)] * max_rows``.

    Raises :class:`SpecError` naming the first invalid statistic.
    """
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be a positive integer, got {max_rows!r}")
    if isinstance(spec, (list, tuple)) and any(isinstance(i, dict) and i.get("kind") in VECTOR_KINDS for i in spec):
        if len(spec) != 1:
            raise SpecError("a vector statistic (centroid or point) is listed on its own")
        return _vector_plan(spec[0], columns)
    statistics = _validate(spec, columns)

    labels: list[str] = []
    lower: list[float] = []
    upper: list[float] = []

    def add(label: str, number: int, lo: float, hi: float) -> int:
        if label in labels:  # only with unusual column names
            label = f"{label} (statistic {number})"
        labels.append(label)
        lower.append(lo)
        upper.append(hi)
        return len(labels) - 1

    count_at = None
    if any(stat["kind"] in ("count", "mean") for stat in statistics):
        count_at = add("count", 1, 0.0, float(max_rows))

    # (column, lower, upper) -> the number of the first statistic that needs this sum
    sum_keys: dict[tuple[str, float, float], int] = {}
    for number, stat in enumerate(statistics, start=1):
        if stat["kind"] in ("sum", "mean"):
            sum_keys.setdefault((stat["column"], stat["lower"], stat["upper"]), number)
    summed = [column for column, _, _ in sum_keys]
    sum_at: dict[tuple[str, float, float], int] = {}
    for (column, lo, hi), number in sum_keys.items():
        name = f"{column}; {_text(lo)}..{_text(hi)}" if summed.count(column) > 1 else column
        sum_at[column, lo, hi] = add(
            f"sum({name})", number, min(0.0, lo) * max_rows, max(0.0, hi) * max_rows
        )

    indices: list[tuple[int, ...]] = []
    for number, stat in enumerate(statistics, start=1):
        kind = stat["kind"]
        if kind == "count":
            indices.append((count_at,))
        elif kind == "sum":
            indices.append((sum_at[stat["column"], stat["lower"], stat["upper"]],))
        elif kind == "mean":
            indices.append((sum_at[stat["column"], stat["lower"], stat["upper"]], count_at))
        else:
            edges = stat["bins"]
            bins = []
            for i in range(len(edges) - 1):
                close = "]" if i == len(edges) - 2 else ")"
                label = f"{stat['column']} in [{_text(edges[i])}, {_text(edges[i + 1])}{close}"
                bins.append(add(label, number, 0.0, float(max_rows)))
            indices.append(tuple(bins))

    # groups of coordinates and their l1-sensitivities: (coordinates, sensitivity)
    groups: list[tuple[tuple[int, ...], float]] = []
    if count_at is not None:
        groups.append(((count_at,), 1.0))
    groups += [((sum_at[key],), max(abs(key[1]), abs(key[2]))) for key in sum_keys]
    groups += [(where, 1.0) for stat, where in zip(statistics, indices) if stat["kind"] == "histogram"]
    sensitivity = sum(s for _, s in groups)
    weights = np.zeros(len(labels), dtype=np.float64)
    for where, s in groups:
        weights[list(where)] = len(groups) * s

    lower_array = np.array(lower, dtype=np.float64)
    upper_array = np.array(upper, dtype=np.float64)
    for array in (lower_array, upper_array, weights):
        array.setflags(write=False)
    return Plan(
        statistics=statistics,
        labels=tuple(labels),
        sensitivity=sensitivity,
        lower=lower_array,
        upper=upper_array,
        indices=tuple(indices),
        weights=weights,
    )


def compute(plan: Plan, columns: list[str], values: np.ndarray) -> np.ndarray:
    """The true answer ``u`` (float64, one value per label) on a dataset.

    ``values`` has one row per record and one column per name in
    ``columns``. A count is the number of rows; a sum adds the column's
    values clamped to ``[lower, upper]`` (with ``math.fsum``: correctly
    rounded, whatever the order of the rows); a histogram counts the values
    in ``[e0, e1), [e1, e2), ..., [e_{k-1}, e_k]``, values outside all bins
    are not counted.

    Raises ValueError if ``values`` is not a finite matrix matching
    ``columns``, if a column of the plan is missing, or if an answer falls
    outside its declared range (a dataset of more than ``max_rows`` records).
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(columns):
        raise ValueError(f"values must have shape (n_rows, {len(columns)}), got {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("values must be finite")
    position = {name: i for i, name in enumerate(columns)}
    if plan.norm == "l2":
        return _vector_compute(plan, position, data)
    n = float(data.shape[0])
    u = np.zeros(len(plan.labels), dtype=np.float64)
    for stat, where in zip(plan.statistics, plan.indices):
        kind = stat["kind"]
        if kind == "count":
            u[where[0]] = n
            continue
        if stat["column"] not in position:
            raise ValueError(f"the data has no column named {stat['column']!r}")
        column = data[:, position[stat["column"]]]
        if kind == "histogram":
            u[list(where)] = np.histogram(column, bins=np.array(stat["bins"]))[0]
        else:
            u[where[0]] = math.fsum(np.clip(column, stat["lower"], stat["upper"]).tolist())
            if kind == "mean":
                u[where[1]] = n
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


def present(plan: Plan, released: np.ndarray, scale, confidence: float = 0.95) -> list[dict]:
    """The released vector as the buyer reads it: one dict per requested
    statistic, in spec order, ``{"label", "kind", "value", "noise_scale", "error_bound"}``.

    ``released`` is the noisy, snapped vector (one value per label) and
    ``scale`` the Laplace scale of its coordinates: one number for all, or
    one per coordinate (``plan.weights / eps``). A released coordinate is
    within ``laplace_error_bound(scale, confidence)`` of the truth with
    probability ``confidence``. A histogram expands into one dict per bin
    (kind "histogram"). A mean is derived from its sum and the count by
    :func:`mean_estimate`, labelled like its sum ("mean(age)"); its
    ``noise_scale`` is that of its sum.
    """
    vector = np.asarray(released, dtype=np.float64)
    if vector.shape != (len(plan.labels),):
        raise ValueError(f"released must have {len(plan.labels)} values, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise ValueError("released values must be finite")
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), vector.shape)
    if plan.norm == "l2":
        # one radius bounds the whole point's Euclidean error, hence each coordinate's
        radius = l2_error_radius(len(vector), float(scales[0]), confidence)
        kind = plan.statistics[0]["kind"]
        return [
            {"label": label, "kind": kind, "value": float(v), "noise_scale": float(b), "error_bound": radius}
            for label, v, b in zip(plan.labels, vector, scales)
        ]
    bounds = np.array([laplace_error_bound(b, confidence) for b in scales])
    readings: list[dict] = []
    for stat, where in zip(plan.statistics, plan.indices):
        kind = stat["kind"]
        if kind == "mean":
            total, count = where
            value, mean_bound = mean_estimate(
                vector[total], vector[count], stat["lower"], stat["upper"], scales[total], confidence, scales[count]
            )
            label = "mean" + plan.labels[total].removeprefix("sum")
            readings.append(
                {
                    "label": label,
                    "kind": kind,
                    "value": float(value),
                    "noise_scale": float(scales[total]),
                    "error_bound": float(mean_bound),
                }
            )
        else:
            readings.extend(
                {
                    "label": plan.labels[i],
                    "kind": kind,
                    "value": float(vector[i]),
                    "noise_scale": float(scales[i]),
                    "error_bound": float(bounds[i]),
                }
                for i in where
            )
    return readings
