"""The statistics a listing offers, released together as one vector.

A listing's *spec* is a JSON-able list of statistics over the dataset's
typed columns (``market.catalog.columns``)::

    [{"kind": "count"},
     {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
     {"kind": "mean", "column": "age", "lower": 0, "upper": 100,
      "by": "island", "categories": ["Biscoe", "Dream"]},
     {"kind": "count", "where": [{"column": "sex", "op": "=", "value": "female"}]},
     {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 50, 100]},
     {"kind": "histogram", "column": "joined", "bin": "month", "from": "2024-01", "to": "2024-12"},
     {"kind": "table", "rows": "species", "columns": "island",
      "row_categories": ["Adelie"], "column_categories": ["Biscoe", "Dream"]}]

or one vector statistic on its own (a centroid). Each kind of statistic is
one class below (:class:`Count`, :class:`Sum`, :class:`Mean`,
:class:`Histogram`, :class:`TwoWay`, :class:`Centroid`, and :class:`Point`,
which is kept only to read old releases): it owns its fields and validation,
its JSON schema, the coordinates it needs (what each one is on the data, as
``compute.Aggregate``), their sensitivity and labels, its description, and
how its released value and accuracy are read back. Everything else iterates
over :data:`KINDS`.

Filters (``where``: ``=``, ``in``, ``<``, ``<=``, ``>``, ``>=``,
``between``, ``is missing``, with constants typed to the column) apply to
any statistic but a vector; a test of a missing value is false except ``is
missing``. A group-by (``by``) splits a count, sum or mean over the
categories the owner declares public (never taken from the data), plus
"other" (present values outside the list; left out when the list is a
boolean's whole domain) and "missing" (when the column's policy counts
missing values as a category); a date is grouped by month or year over a
declared range (``"bin"``, ``"from"``, ``"to"``: "YYYY-MM" or "YYYY", both
ends included), values outside it in "other". Labels read like
"mean(body_mass_g) | sex = female, island = Biscoe".

Who is protected is the dataset's *neighbouring relation*
(:class:`Neighbours`, docs/mathematics.md section 12), and every sensitivity
follows from it (the table there lists each statistic's worst cases):

* **private size** (add or remove one record; the number of records n is
  private): a count or a cell moves by 1, a sum of values clamped to
  ``[L, U]`` by ``max(|L|, |U|)``, a histogram by 1 in one bin;
* **public size** (replace one record; n is public and declared): the count
  of all records is not for sale (it is public), a sum moves by ``U - L``
  (``max(U, 0) - min(L, 0)`` when a record may count 0), a histogram,
  a grouped count or a table by 1 in two cells, a grouped sum by one of
  those or by ``max(|L|, |U|)`` in two cells, a mean is the sum divided by
  the public n (complete column, no filter or group-by), a centroid of
  points pulled into a ball of radius R moves by ``2R / n``.

:func:`build_plan` validates a spec and lays it out as the coordinates of one
answer vector ``u``; :func:`compute` (``market.catalog.compute``) evaluates
``u`` on a :class:`Table` with DuckDB; the release engine adds noise and snaps
(``releases.engine.postprocess``); :func:`present` turns the released vector back
into one reading per requested statistic with its error bound. Coordinates
are shared: a mean reads its sum's coordinates (and a count's), which is
post-processing and costs no privacy.

This module is plain Python and numpy; it does not import Django.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import numbers
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from fractions import Fraction
from typing import ClassVar

import numpy as np

from releases.engine import lattice
from releases.engine import size as size_engine
from releases.engine.postprocess import laplace_error_bound

from .columns import CATEGORICAL, NUMERIC, TEMPORAL, Column, columns_from
from .compute import Aggregate, Cells, Condition, Row, Table, compute
from .compute import Centroid as VectorCentroid

__all__ = [
    "ENGINES",
    "KINDS",
    "LATTICE",
    "LAPLACE",
    "Lattice",
    "MAX_BINS",
    "MAX_CASES",
    "MAX_CATEGORIES",
    "MAX_COORDINATES",
    "MAX_BOUND",
    "MAX_STATISTICS",
    "PRIVATE_SIZE",
    "PUBLIC_SIZE",
    "RELATIONS",
    "VECTOR_KINDS",
    "VECTOR_UNAVAILABLE",
    "Neighbours",
    "Plan",
    "SpecError",
    "Table",
    "build_plan",
    "plan_layout",
    "plan_restore",
    "statistic_schema",
    "compute",
    "describe",
    "l2_error_radius",
    "mean_error_bound",
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
#: A declared list of categories (or of values for ``in``) has at most this many.
MAX_CATEGORIES = 100
#: A histogram or group-by of dates covers at most this many months or years.
MAX_DATE_BINS = 240
#: A filter has at most this many conditions.
MAX_CONDITIONS = 10
#: A category or text constant has at most this many characters.
MAX_TEXT = 200
#: A plan has at most this many coordinates.
MAX_COORDINATES = 2000
#: A plan has at most this many incomparable worst cases (``Plan.loss_cases``).
MAX_CASES = 64

#: A lattice coordinate holds at most this many grid steps per record: a sum's
#: ``max(|L|, |U|) / grid`` (finer grids are refused with the coarsest that fits).
MAX_GRID_STEPS = 10**8
#: The finest grid a sum may declare.
MIN_GRID = Decimal("1e-12")
#: ... and a lattice coordinate's declared range at most this many in all, so
#: that every released value is an exact integer in int64 and prints exactly
#: from a float (15 significant digits).
MAX_LATTICE_UNITS = 10**15

#: The float Laplace path (docs/mathematics.md sections 1-6), every listing made before the lattice.
LAPLACE = "laplace"
#: The exact lattice path (section 11): integer noise, exactly eps-DP.
LATTICE = "lattice"
ENGINES = (LAPLACE, LATTICE)

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

    @property
    def engine(self) -> str:
        return LATTICE if self.lattice is not None else LAPLACE

    def bound(self, i: int, eps, confidence: float = 0.95) -> float:
        """Coordinate ``i``'s ``confidence`` error bound at level ``eps`` (an l1 plan), by its engine's tails."""
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


_NEEDS = {
    NUMERIC: "an integer or decimal column",
    CATEGORICAL: "a categorical or boolean column",
    TEMPORAL: "a date or datetime column",
    CATEGORICAL + TEMPORAL: "a categorical, boolean, date or datetime column",
}


def _column(item: dict, where: str, columns, key: str = "column", types: tuple[str, ...] | None = NUMERIC) -> str:
    """The column named by ``item[key]``: it exists, is not ignored and has one of ``types``."""
    name = item[key]
    if not isinstance(name, str) or name not in columns:
        raise SpecError(f"{where}: no column named {name!r}")
    column = columns[name]
    if column.type == "ignored":
        raise SpecError(f"{where}: {key} {name!r} is ignored (set its type to use it)")
    if types is not None and column.type not in types:
        raise SpecError(f"{where}: {key} {name!r} is {column.type}; this needs {_NEEDS.get(types, ', '.join(types))}")
    return name


def _bounds(item: dict, where: str) -> tuple[float, float]:
    lower = _number(item["lower"], where, "lower")
    upper = _number(item["upper"], where, "upper")
    if not lower < upper:
        raise SpecError(f"{where}: lower must be below upper")
    return lower, upper


def _decimal(value, where: str, name: str) -> Decimal:
    """``value`` (a JSON number or a decimal string) as the exact decimal the owner wrote."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise SpecError(f"{where}: {name} must be a number, got {value!r}")
    try:
        out = Decimal(repr(float(value)) if isinstance(value, float) else str(value).strip())
    except (InvalidOperation, ValueError, OverflowError):
        raise SpecError(f"{where}: {name} must be a number, got {value!r}") from None
    if not out.is_finite():
        raise SpecError(f"{where}: {name} must be a finite number, got {value!r}")
    return out


def _plain(value: Decimal) -> str:
    """A decimal as people write it: 0.01, 1, 1000 (no exponent, no trailing zeros)."""
    text = format(value.normalize(), "f")
    return text


def default_grid(lower: float, upper: float, integer: bool = False) -> Decimal:
    """The grid a sum uses when the owner declares none: the smallest power of ten with at
    most a million steps in ``max(|L|, |U|)`` (1 at least for an integer column): a
    rounding far below the noise, and integers stay exact."""
    m = max(abs(Decimal(repr(float(lower)))), abs(Decimal(repr(float(upper)))))
    if m == 0:
        return Decimal(1)
    exponent = m.adjusted() - 6 + (0 if m == Decimal(10) ** m.adjusted() else 1)
    if integer:
        exponent = max(exponent, 0)
    return Decimal(10) ** exponent


def _steps(bound: float, grid: Decimal) -> int:
    """A bound in grid steps: the nearest whole number (ties to even) of ``bound / grid``, exact."""
    return int((Decimal(repr(float(bound))) / grid).to_integral_value(rounding=ROUND_HALF_EVEN))


def _grid(item: dict, where: str, column: Column, lower: float, upper: float) -> str:
    """The sum's grid as an exact decimal string: declared, or :func:`default_grid`."""
    if "grid" in item:
        grid = _decimal(item["grid"], where, "grid")
        if grid <= 0 or grid > Decimal(MAX_BOUND):
            raise SpecError(f"{where}: grid must be a positive number up to 1e15, got {item['grid']!r}")
        if grid < MIN_GRID:
            raise SpecError(f"{where}: grid must be at least 1e-12, got {item['grid']!r}")
    else:
        grid = default_grid(lower, upper, integer=column.type == "integer")
    m = max(abs(_steps(lower, grid)), abs(_steps(upper, grid)))
    if m == 0:
        raise SpecError(f"{where}: grid {_plain(grid)} is coarser than the bounds: every value would round to 0")
    if m > MAX_GRID_STEPS:
        finest = default_grid(lower, upper) * 100
        raise SpecError(f"{where}: grid {_plain(grid)} is too fine for these bounds (more than "
                        f"{MAX_GRID_STEPS:,} steps); use {_plain(finest)} or coarser")
    return _plain(grid)


def _text(x: float) -> str:
    """A bound or edge for a label: ``18`` rather than ``18.0``."""
    return str(int(x)) if x.is_integer() else repr(x)


def _constant(value, column: Column, where: str, name: str):
    """A public constant typed to ``column``, as stored in the spec (JSON): a float for a
    number, a string for a category, true/false for a boolean, ISO text for a date."""
    if column.numeric:
        return _number(value, where, name)
    if column.type == "categorical":
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise SpecError(f"{where}: {name} must be a text of at most {MAX_TEXT} characters "
                            f"({column.name!r} is categorical), got {value!r}")
        return value
    if column.type == "boolean":
        if not isinstance(value, bool):
            raise SpecError(f"{where}: {name} must be true or false ({column.name!r} is boolean), got {value!r}")
        return value
    if column.type == "date":
        try:
            if not isinstance(value, str) or len(value) != 10:
                raise ValueError
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            raise SpecError(f"{where}: {name} must be a date such as \"2024-01-31\", got {value!r}") from None
    try:  # datetime
        if not isinstance(value, str) or len(value) < 10:
            raise ValueError
        moment = dt.datetime.fromisoformat(value)
        if moment.tzinfo is not None:
            raise ValueError
        return moment.isoformat()
    except ValueError:
        raise SpecError(f"{where}: {name} must be a date and time such as \"2024-01-31T08:00:00\" "
                        f"(no time zone), got {value!r}") from None


def _typed(value, column: Column):
    """A spec constant as the value the data is compared with."""
    if column.type == "date":
        return dt.date.fromisoformat(value)
    if column.type == "datetime":
        return dt.datetime.fromisoformat(value)
    return value


def _shown(value) -> str:
    """A constant in a label."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _text(value)
    return str(value)


#: The operators a filter may use, and the column types each applies to.
OPS = ("=", "in", "<", "<=", ">", ">=", "between", "is missing")
_ORDERED = NUMERIC + TEMPORAL


def _values(raw, column: Column, where: str, name: str, *, at_most: int = MAX_CATEGORIES) -> list:
    """A declared list of constants: not empty, at most ``at_most``, no duplicates, typed to the column."""
    if not isinstance(raw, (list, tuple)):
        raise SpecError(f"{where}: {name} must be a list, got {raw!r}")
    if not raw:
        raise SpecError(f"{where}: {name} is empty")
    if len(raw) > at_most:
        raise SpecError(f"{where}: {name} lists {len(raw)} values; at most {at_most} are allowed")
    out = [_constant(v, column, where, f"{name} item {i}") for i, v in enumerate(raw, start=1)]
    seen = set()
    for v in out:
        marker = (type(v), v)
        if marker in seen:
            raise SpecError(f"{where}: {name} lists {_shown(v)!r} twice")
        seen.add(marker)
    return out


def _filter(item: dict, where: str, columns) -> dict:
    """``{"where": [...]}`` when the statistic has conditions, else ``{}`` (a spec without
    conditions is normalised without the field, as specs were before filters existed)."""
    filters = _where(item, where, columns)
    return {"where": filters} if filters else {}


def _where(item: dict, where: str, columns) -> list[dict]:
    """The normalised filter: a list of ``{"column", "op", "value" | "values"}``."""
    raw = item.get("where", [])
    if not isinstance(raw, (list, tuple)):
        raise SpecError(f"{where}: where must be a list of conditions, got {raw!r}")
    if len(raw) > MAX_CONDITIONS:
        raise SpecError(f"{where}: where has {len(raw)} conditions; at most {MAX_CONDITIONS} are allowed")
    out = []
    for number, cond in enumerate(raw, start=1):
        here = f"{where}, condition {number}"
        if not isinstance(cond, dict):
            raise SpecError(f'{here}: expected an object such as {{"column": "sex", "op": "=", "value": "female"}}')
        op = cond.get("op")
        if op not in OPS:
            raise SpecError(f"{here}: op must be one of {', '.join(OPS)}, got {op!r}")
        needed = {"is missing": (), "in": ("values",), "between": ("values",)}.get(op, ("value",))
        for key in cond:
            if key not in ("column", "op", *needed):
                raise SpecError(f"{here}: unknown field {key!r}" + (f" (op {op!r} takes {needed[0]!r})" if needed else ""))
        for key in ("column", *needed):
            if key not in cond:
                raise SpecError(f"{here}: missing field {key!r}")
        name = _column(cond, here, columns, types=None)
        column = columns[name]
        if op in ("<", "<=", ">", ">=", "between") and column.type not in _ORDERED:
            raise SpecError(f"{here}: op {op!r} needs a number or date column; {name!r} is {column.type}")
        normal = {"column": name, "op": op}
        if op == "in":
            normal["values"] = _values(cond["values"], column, here, "values")
        elif op == "between":
            pair = cond["values"]
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise SpecError(f"{here}: between takes values [low, high], got {pair!r}")
            low, high = (_constant(v, column, here, n) for v, n in zip(pair, ("low", "high")))
            if _typed(low, column) > _typed(high, column):
                raise SpecError(f"{here}: between's low is above its high")
            normal["values"] = [low, high]
        elif op != "is missing":
            normal["value"] = _constant(cond["value"], column, here, "value")
        if normal in out:
            raise SpecError(f"{here}: same as condition {out.index(normal) + 1}")
        out.append(normal)
    return out


def _period(text, unit: str, where: str, name: str) -> dt.date:
    pattern = r"\d{4}-\d{2}" if unit == "month" else r"\d{4}"
    example = "2024-01" if unit == "month" else "2024"
    if not isinstance(text, str) or not re.fullmatch(pattern, text):
        raise SpecError(f"{where}: {name} must be a {unit} such as \"{example}\", got {text!r}")
    try:
        return dt.date(int(text[:4]), int(text[5:7]) if unit == "month" else 1, 1)
    except ValueError:
        raise SpecError(f"{where}: {name} must be a {unit} such as \"{example}\", got {text!r}") from None


def _next(day: dt.date, unit: str) -> dt.date:
    if unit == "year":
        return dt.date(day.year + 1, 1, 1)
    return dt.date(day.year + day.month // 12, day.month % 12 + 1, 1)


def _bins(item: dict, where: str) -> dict:
    """A declared date range in months or years: ``{"bin", "from", "to"}``, both ends included."""
    unit = item["bin"]
    if unit not in ("month", "year"):
        raise SpecError(f"{where}: bin must be \"month\" or \"year\", got {unit!r}")
    start, end = _period(item["from"], unit, where, "from"), _period(item["to"], unit, where, "to")
    if start > end:
        raise SpecError(f"{where}: from must not be after to")
    count = (end.year - start.year) * (12 if unit == "month" else 1) + (end.month - start.month if unit == "month" else 0) + 1
    if count > MAX_DATE_BINS:
        raise SpecError(f"{where}: {count} {unit}s from {item['from']} to {item['to']}; at most {MAX_DATE_BINS} are allowed")
    return {"bin": unit, "from": item["from"], "to": item["to"]}


def _periods(stat: dict) -> list[tuple[str, dt.date, dt.date]]:
    """Each period of a declared range: (label, first day, first day after)."""
    unit = stat["bin"]
    day = _period(stat["from"], unit, "", "")
    end = _period(stat["to"], unit, "", "")
    out = []
    while day <= end:
        after = _next(day, unit)
        out.append((day.strftime("%Y-%m") if unit == "month" else str(day.year), day, after))
        day = after
    return out


def _by(item: dict, where: str, columns) -> dict:
    """A group-by: ``{"by", "categories"}`` for a categorical or boolean column,
    ``{"by", "bin", "from", "to"}`` for a date."""
    if "by" not in item:
        for key in ("categories", "bin", "from", "to"):
            if key in item:
                raise SpecError(f"{where}: {key!r} is for a group-by; name the column in 'by'")
        return {}
    name = _column(item, where, columns, key="by", types=CATEGORICAL + TEMPORAL)
    column = columns[name]
    if column.temporal:
        if "categories" in item:
            raise SpecError(f"{where}: a date is grouped by bin, from and to, not by categories")
        for key in ("bin", "from", "to"):
            if key not in item:
                raise SpecError(f"{where}: missing field {key!r} (a date is grouped by month or year over a declared range)")
        return {"by": name, **_bins(item, where)}
    for key in ("bin", "from", "to"):
        if key in item:
            raise SpecError(f"{where}: {key!r} is for grouping by a date; {name!r} is {column.type}")
    if "categories" not in item:
        if column.type == "boolean":
            return {"by": name, "categories": [True, False]}
        raise SpecError(f"{where}: missing field 'categories' (the categories of {name!r} you declare public)")
    return {"by": name, "categories": _values(item["categories"], column, where, "categories")}


def _cells(stat: dict, columns) -> list[tuple[str, tuple[Condition, ...]]]:
    """A group-by's cells: one per declared category (or period), then "other" (present values
    outside the list, unless the list is every value a boolean has), then "missing" when the
    column's policy counts missing values as a category. Each as (label part, conditions)."""
    name = stat["by"]
    column = columns[name]
    out = []
    if column.temporal:
        periods = _periods({"bin": stat["bin"], "from": stat["from"], "to": stat["to"]})
        for label, start, after in periods:
            a, b = (start, after) if column.type == "date" else (_moment(start), _moment(after))
            out.append((f"{name} = {label}", (Condition(name, ">=", a), Condition(name, "<", b))))
        first, last = periods[0][1], periods[-1][2]
        if column.type == "datetime":
            first, last = _moment(first), _moment(last)
        out.append((f"{name} = other", (Condition(name, "outside", (first, last)),)))
    else:
        values = stat["categories"]
        for v in values:
            out.append((f"{name} = {_shown(v)}", (Condition(name, "=", v),)))
        if not (column.type == "boolean" and set(values) == {True, False}):
            out.append((f"{name} = other", (Condition(name, "not in", tuple(values)),)))
    if column.missing == "category":
        out.append((f"{name} is missing", (Condition(name, "is missing"),)))
    return out


def _moment(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day)


def _condition_text(cond: dict) -> str:
    name, op = cond["column"], cond["op"]
    if op == "is missing":
        return f"{name} is missing"
    if op == "in":
        return f"{name} in ({', '.join(_shown(v) for v in cond['values'])})"
    if op == "between":
        return f"{name} between {_shown(cond['values'][0])} and {_shown(cond['values'][1])}"
    return f"{name} {op} {_shown(cond['value'])}"


def _condition(cond: dict, columns) -> Condition:
    column = columns[cond["column"]]
    if cond["op"] == "is missing":
        return Condition(column.name, "is missing")
    if cond["op"] in ("in", "between"):
        return Condition(column.name, cond["op"], tuple(_typed(v, column) for v in cond["values"]))
    return Condition(column.name, cond["op"], _typed(cond["value"], column))


@dataclass(frozen=True)
class Scope:
    """Which records a statistic reads and how it splits them: ``where``, its filter;
    ``cells``, one (label part, conditions) per group (one unnamed cell without a group-by);
    ``key``: equal keys are the same scope (empty for every record, ungrouped)."""

    key: tuple
    where: tuple[Condition, ...]
    parts: tuple[str, ...]
    cells: tuple[tuple[str | None, tuple[Condition, ...]], ...]
    period: tuple | None = None

    @property
    def grouped(self) -> bool:
        return self.cells[0][0] is not None

    def labels(self, base: str) -> tuple[str, ...]:
        out = []
        for part, _ in self.cells:
            parts = self.parts + ((part,) if part else ())
            out.append(base + (" | " + ", ".join(parts) if parts else ""))
        return tuple(out)

    def conditions(self, extra: tuple[Condition, ...] = ()) -> tuple[tuple[Condition, ...], ...]:
        return tuple(self.where + cell + extra for _, cell in self.cells)


def _scope(stat: dict, columns) -> Scope:
    where = stat.get("where", [])
    by = {key: stat[key] for key in ("by", "categories", "bin", "from", "to") if key in stat}
    key = (json.dumps(where, sort_keys=True), json.dumps(by, sort_keys=True)) if (where or by) else ()
    cells = tuple(_cells(stat, columns)) if by else ((None, ()),)
    return Scope(
        key=key,
        where=tuple(_condition(c, columns) for c in where),
        parts=tuple(_condition_text(c) for c in where),
        cells=cells,
        period=_period_of(by, columns) if "bin" in by else None,
    )


def _period_of(stat: dict, columns) -> tuple:
    """The fast path of a date binning (``compute.Cells.period``)."""
    name = stat.get("by", stat.get("column"))
    periods = _periods(stat)
    return (name, stat["bin"], periods[0][1], len(periods))


# --------------------------------------------------------------------------
# groups: coordinates that share one part of the budget


@dataclass(frozen=True, eq=False)
class Group:
    """Coordinates of the answer vector that one or more statistics read,
    released with one equal share of the budget.

    ``key``: equal keys are one group (a mean and a sum with the same column,
    bounds, filter and group-by read the same coordinates). ``rank``: the
    layout order (0 the count of all records, 1 the sums, 2 the histograms,
    other counts and tables; then first appearance). ``labels`` /
    ``long_labels``: the coordinates' labels, and the longer ones used when
    two groups would otherwise share a label. ``cases``: how far each
    coordinate a worst-case neighbour changes can move, one tuple per
    incomparable worst case; ``sensitivity``: the group's l1-sensitivity
    under the relation, the largest total of a case. ``aggregates``: what each
    coordinate is on the data. ``grid``: on the lattice path, a sum's grid (its
    bounds, cases and range are then in grid steps); None otherwise.
    """

    key: tuple
    rank: int
    labels: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    cases: tuple[tuple[float, ...], ...]
    aggregates: tuple[Aggregate, ...]
    long_labels: tuple[str, ...] | None = None
    grid: Decimal | None = None

    @property
    def sensitivity(self) -> float:
        return max(sum(case) for case in self.cases)


def _prune(cases) -> tuple[tuple[float, ...], ...]:
    """The cases no other case dominates (each loss at least as large, after sorting
    both largest first and padding with zeros: the profile grows with every loss)."""
    cases = sorted({tuple(sorted(c, reverse=True)) for c in cases}, key=lambda c: (-sum(c), c))
    kept: list[tuple[float, ...]] = []
    for case in cases:
        def dominated_by(other):
            width = max(len(other), len(case))
            a, b = other + (0.0,) * (width - len(other)), case + (0.0,) * (width - len(case))
            return all(x >= y for x, y in zip(a, b))
        if not any(dominated_by(other) for other in kept):
            kept.append(case)
    return tuple(kept)


def _count_cases(nb: Neighbours, cells: int) -> tuple[tuple[float, ...], ...]:
    # adding or removing a record moves one cell by 1; replacing one moves one cell down and another up
    return ((1.0, 1.0),) if nb.public and cells > 1 else ((1.0,),)


def _count_group(nb: Neighbours, scope: Scope | None = None, present: str | None = None) -> Group:
    """The number of records in each cell of ``scope`` (all records without one); with
    ``present``, only those where that column is not missing (a mean's divisor)."""
    scope = scope or Scope((), (), (), ((None, ()),))
    legacy = not scope.key and present is None
    extra = (Condition(present, "present"),) if present else ()
    labels = scope.labels("count" if present is None else f"count({present})")
    return Group(
        key=("count",) if legacy else ("count", scope.key, present), rank=0 if legacy else 2,
        labels=labels, lower=(0.0,) * len(labels), upper=(float(nb.rows),) * len(labels),
        cases=_count_cases(nb, len(labels)),
        aggregates=(Cells(scope.where + extra, tuple(cell for _, cell in scope.cells), scope.period),)
        if scope.grouped else (Aggregate("count", scope.where + extra),),
    )


def _sum_group(column: str, lower: float, upper: float, nb: Neighbours, scope: Scope | None = None,
               excludable: bool = False, grid: Decimal | None = None) -> Group:
    """The sum of ``column``'s present values clamped to ``[lower, upper]``, per cell of ``scope``.

    Sensitivity, with ``m = max(|L|, |U|)``: adding or removing a record moves one
    cell by at most ``m``. Replacing one moves its cell by at most ``U - L`` when
    the record always counts (a complete column, no filter), else by
    ``max(U, 0) - min(L, 0)`` (a record may count 0, by a missing value or a filter);
    with a group-by it may instead leave one cell for another: two cells by ``m`` each.

    With ``grid`` (the lattice path), each value is also rounded to the grid and the
    group is counted in grid steps: the same cases with the bounds in steps (whole
    numbers), and the sum an integer number of steps.
    """
    scope = scope or Scope((), (), (), ((None, ()),))
    if grid is not None:
        lower, upper = _steps(lower, grid), _steps(upper, grid)
    m = max(abs(lower), abs(upper))
    if not nb.public:
        cases = ((m,),)
    else:
        span = (max(upper, 0) - min(lower, 0)) if (excludable or scope.where) else upper - lower
        cases = ((span,), (m, m)) if scope.grouped else ((span,),)
    labels = scope.labels(f"sum({column})")
    shown = (lower, upper) if grid is None else (float(lower * grid), float(upper * grid))
    return Group(
        key=("sum", column, *shown) + ((scope.key,) if scope.key else ()) + ((str(grid),) if grid is not None else ()),
        rank=1,
        labels=labels, long_labels=scope.labels(f"sum({column}; {_text(shown[0])}..{_text(shown[1])})"),
        lower=(min(0, lower) * nb.rows,) * len(labels), upper=(max(0, upper) * nb.rows,) * len(labels),
        cases=_prune(cases),
        aggregates=tuple(
            Aggregate("sum", where, column, *shown) if grid is None
            else Aggregate("sum", where, column, *shown, grid=grid, steps=(lower, upper))
            for where in scope.conditions()
        ),
        grid=grid,
    )


def _bins_group(number: int, labels: list[str], cells: list[tuple[Condition, ...]], nb: Neighbours,
                key: str = "histogram", where: tuple[Condition, ...] = (), period: tuple | None = None) -> Group:
    """Counts of the records meeting ``where`` in mutually exclusive cells (bins, table cells)."""
    return Group(
        key=(key, number), rank=2, labels=tuple(labels),
        lower=(0.0,) * len(labels), upper=(float(nb.rows),) * len(labels),
        cases=_count_cases(nb, len(labels)),
        aggregates=(Cells(where, tuple(cells), period),),
    )


def _histogram_group(number: int, column: str, edges: list[float], nb: Neighbours, scope: Scope | None = None) -> Group:
    scope = scope or Scope((), (), (), ((None, ()),))
    labels, conditions = [], []
    suffix = " | " + ", ".join(scope.parts) if scope.parts else ""
    for i in range(len(edges) - 1):
        last = i == len(edges) - 2
        labels.append(f"{column} in [{_text(edges[i])}, {_text(edges[i + 1])}{']' if last else ')'}" + suffix)
        conditions.append((Condition(column, ">=", edges[i]), Condition(column, "<=" if last else "<", edges[i + 1])))
    return _bins_group(number, labels, conditions, nb, where=scope.where)


def _date_histogram_group(number: int, stat: dict, columns, nb: Neighbours, scope: Scope) -> Group:
    column = columns[stat["column"]]
    labels, conditions = [], []
    suffix = " | " + ", ".join(scope.parts) if scope.parts else ""
    for label, start, after in _periods(stat):
        a, b = (start, after) if column.type == "date" else (_moment(start), _moment(after))
        labels.append(f"{column.name} in {label}" + suffix)
        conditions.append((Condition(column.name, ">=", a), Condition(column.name, "<", b)))
    return _bins_group(number, labels, conditions, nb, where=scope.where, period=_period_of(stat, columns))


# --------------------------------------------------------------------------
# the kinds of statistic


@dataclass(frozen=True)
class Reading:
    """What :func:`present` hands a kind: the released vector, each
    coordinate's noise scale and error bound, and the confidence; ``half``: each
    coordinate's bound at confidence ``1 - (1 - confidence) / 2`` (for a
    derived value such as a mean that reads two); ``integral``: per coordinate,
    whether its values are whole numbers (a lattice count, or a sum on an
    integer grid), read back as ints."""

    vector: np.ndarray
    scales: np.ndarray
    bounds: np.ndarray
    confidence: float
    neighbours: Neighbours
    half: np.ndarray | None = None
    integral: np.ndarray | None = None

    def value(self, i: int):
        x = self.vector[i]
        return int(round(x)) if self.integral is not None and self.integral[i] else float(x)


_S_NUMBER = {"type": "number"}
_S_NAME = {"type": "string"}
_S_CONSTANT = {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}
_S_WHERE = {
    "type": "array", "maxItems": 10,
    "description": "conditions all records read must meet; constants are typed to the column "
                   "(numbers, text, true/false, ISO dates); a missing value meets only 'is missing'",
    "items": {
        "title": "Condition",
        "type": "object",
        "properties": {
            "column": _S_NAME,
            "op": {"title": "ConditionOp", "type": "string",
                   "enum": list(("=", "in", "<", "<=", ">", ">=", "between", "is missing"))},
            "value": _S_CONSTANT,
            "values": {"type": "array", "items": _S_CONSTANT, "minItems": 1, "maxItems": 100},
        },
        "required": ["column", "op"],
        "additionalProperties": False,
    },
}
_S_GRID = {"oneOf": [{"type": "number"}, {"type": "string", "pattern": r"^\d+(\.\d+)?$"}],
           "description": "the lattice path's rounding: each value is rounded to a multiple of this "
                          "(e.g. 0.01 or 1); default: the smallest power of ten with at most a million "
                          "steps in the bounds (1 at least for an integer column)"}
_S_CATEGORIES = {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
                 "minItems": 1, "maxItems": 100}
_S_BIN = {"title": "DateBin", "type": "string", "enum": ["month", "year"]}
_S_PERIOD = {"type": "string", "description": "YYYY-MM for months, YYYY for years; both ends included"}
S_CONFIRM = {"type": "boolean", "description": "true to confirm that the categories declared here are public: buyers "
             "see them, and which values occur in your data is itself private. Required (true) whenever categories are "
             "declared; never stored"}
_S_BY = {
    "by": {"type": "string", "description": "group by this categorical, boolean or date column"},
    "categories": {**_S_CATEGORIES, "description": "the categories of 'by' you declare public (others fall in 'other')"},
    "categories_public": S_CONFIRM,
    "bin": _S_BIN, "from": _S_PERIOD, "to": _S_PERIOD,
}


def _object(kind: str, properties: dict, required: tuple[str, ...], description: str, title: str = "") -> dict:
    """An object schema of one kind, with no other properties. Its ``title`` (by default
    ``CountStatistic`` for "count") names it in the API's schema: ``market.api.schema.named_schemas``
    makes each titled schema one component, its plain one-value ``kind`` enum another."""
    title = title or f"{kind.capitalize()}Statistic"
    return {
        "title": title,
        "type": "object",
        "description": description,
        "properties": {"kind": {"title": f"{title}Kind", "type": "string", "enum": [kind]}, **properties},
        "required": ["kind", *required],
        "additionalProperties": False,
    }


def _scope_text(stat: dict) -> str:
    """The filter and group-by of a statistic in words ("" without them)."""
    text = ""
    if stat.get("where"):
        text += ", where " + " and ".join(_condition_text(c) for c in stat["where"])
    if "categories" in stat:
        text += f", by {stat['by']} ({', '.join(_shown(v) for v in stat['categories'])}, and other)"
    elif "by" in stat:
        text += f", by {stat['by']} per {stat['bin']} from {stat['from']} to {stat['to']} (and other)"
    return text


class Kind(ABC):
    """One kind of statistic. Subclasses set ``name`` and implement
    :meth:`validate`, :meth:`groups`, :meth:`describe` and :meth:`schema`, and
    may override :meth:`read` and :meth:`curve`; :meth:`refusal` says why the
    kind is not sold under a relation (None when it is)."""

    name: ClassVar[str]
    #: a vector statistic is listed on its own and released with l2 noise
    vector: ClassVar[bool] = False

    @abstractmethod
    def validate(self, item: dict, where: str, columns) -> dict:
        """The normalised statistic, or SpecError naming what is wrong. ``columns``
        maps each name to its :class:`~market.catalog.columns.Column`."""

    def refusal(self, stat: dict, nb: Neighbours) -> str | None:
        return None

    @abstractmethod
    def groups(self, stat: dict, number: int, nb: Neighbours, columns, lattice: bool = False) -> tuple[Group, ...]:
        """The groups of coordinates the statistic reads, in the order :meth:`read` expects them
        (``lattice``: laid out in grid steps for the exact lattice path)."""

    @classmethod
    @abstractmethod
    def schema(cls) -> dict:
        """The JSON schema of the statistic as sent."""

    def curve_name(self, stat: dict) -> str:
        return f"{self.name} of {stat['column']}"

    @abstractmethod
    def describe(self, stat: dict, nb: Neighbours) -> str:
        """The statistic in words, as listing pages show it."""

    def statistic_name(self, stat: dict, where: tuple[int, ...], labels: tuple[str, ...]) -> str:
        """A short name for the statistic as a buyer targets it: its value's label when it reads
        one coordinate ("count | sex = female"), else its curve's name."""
        return labels[where[0]] if len(where) == 1 else self.curve_name(stat)

    def curve(self, stat: dict, where: tuple[int, ...], plan: "Plan", records: int | None = None) -> dict | None:
        """The 95% error bound against eps, ``{"name", "bound": f(eps), "assumes_records"}`` (one
        curve per statistic: every coordinate it reads has the same weight; eps
        a Decimal or a decimal string), or None when it cannot be stated from
        public information. ``records``: an assumed number of records, for a bound that
        depends on a private count (a mean's); the curve then says so in ``assumes_records``
        (None when it assumes nothing)."""
        i = where[0]
        return {"name": self.curve_name(stat), "bound": lambda eps: plan.bound(i, eps), "assumes_records": None}

    def read(self, stat: dict, labels: list[str], where: tuple[int, ...], r: Reading) -> list[dict]:
        """One reading per coordinate the statistic reads (the default)."""
        return [
            {
                "label": labels[i],
                "kind": self.name,
                "value": r.value(i),
                "noise_scale": float(r.scales[i]),
                "error_bound": float(r.bounds[i]),
            }
            for i in where
        ]


class Count(Kind):
    """The number of records, optionally filtered (``where``) and per category (``by``).

    Sensitivity: adding or removing a record moves one cell by 1; replacing one
    moves one cell by 1 (filtered) or two cells by 1 each (grouped: (1, 1)).
    The number of all records is not sold when it is public."""

    name = "count"

    def validate(self, item, where, columns):
        _fields(item, where, (), ("where", "by", "categories", "bin", "from", "to"))
        out = {"kind": self.name}
        out.update(_filter(item, where, columns))
        out.update(_by(item, where, columns))
        return out

    def refusal(self, stat, nb):
        if nb.public and not stat.get("where") and "by" not in stat:
            return f"the number of records is public ({nb.size}): it is shown with the dataset, not sold"
        return None

    def groups(self, stat, number, nb, columns, lattice=False):
        return (_count_group(nb, _scope(stat, columns)),)

    @classmethod
    def schema(cls):
        return _object("count", {"where": _S_WHERE, **_S_BY}, (),
                       "the number of records, optionally filtered and per declared category")

    def curve_name(self, stat):
        return "count of records" + (" (each group)" if "by" in stat else "")

    def describe(self, stat, nb):
        return "Count of records" + _scope_text(stat)


class Sum(Kind):
    """The sum of a column's present values, each first clamped to ``[lower, upper]``,
    optionally filtered and per category (sensitivity: :func:`_sum_group`)."""

    name = "sum"

    def validate(self, item, where, columns):
        _fields(item, where, ("column", "lower", "upper"), ("grid", "where", "by", "categories", "bin", "from", "to"))
        column = _column(item, where, columns)
        lower, upper = _bounds(item, where)
        out = {"kind": self.name, "column": column, "lower": lower, "upper": upper,
               "grid": _grid(item, where, columns[column], lower, upper)}
        out.update(_filter(item, where, columns))
        out.update(_by(item, where, columns))
        return out

    def _sum(self, stat, nb, columns, scope, lattice=False):
        grid = Decimal(stat["grid"]) if lattice else None
        return _sum_group(stat["column"], stat["lower"], stat["upper"], nb, scope,
                          excludable=not columns[stat["column"]].complete, grid=grid)

    def groups(self, stat, number, nb, columns, lattice=False):
        return (self._sum(stat, nb, columns, _scope(stat, columns), lattice),)

    @classmethod
    def schema(cls):
        return _object(cls.name, {"column": _S_NAME, "lower": _S_NUMBER, "upper": _S_NUMBER, "grid": _S_GRID,
                                  "where": _S_WHERE, **_S_BY},
                       ("column", "lower", "upper"),
                       f"the {cls.name} of a number column, each value clamped to [lower, upper], "
                       "optionally filtered and per declared category")

    def curve_name(self, stat):
        return f"{self.name} of {stat['column']}" + (" (each group)" if "by" in stat else "")

    def describe(self, stat, nb):
        return (f"Sum of {stat['column']} (each value clamped to {stat['lower']:g} … {stat['upper']:g})"
                + _scope_text(stat))


#: what a mean cell too small for any useful estimate says, before purchase and after
TOO_FEW = "too few records to estimate"
#: what the automatic catch-all cell of a group-by says
OTHER_NOTE = "other: values outside the declared categories"
#: what it says when its noisy count is 0
EMPTY_OTHER = "no records outside the declared categories"


def _other_cell(stat: dict) -> int | None:
    """The position of a group-by's automatic "other" cell among its cells (None: it has none)."""
    if "by" not in stat:
        return None
    if "categories" in stat:
        values = stat["categories"]
        if all(isinstance(v, bool) for v in values) and set(values) == {True, False}:
            return None
        return len(values)
    return len(_periods(stat))


def size_layout(plan: "Plan") -> tuple[tuple[int, ...], int, frozenset[int]]:
    """What a size release publishes for ``plan`` (docs/mathematics.md "The size release and a
    mean's quote"): the coordinates of the counts its means divide by (each once, in layout order),
    the release's weight (the l1-sensitivity of those counts together under the relation: each
    distinct count group moves by its own sensitivity; a whole number) and which of them are a
    group-by's automatic "other" cell. Empty with weight 0 when no mean divides by a released count
    (a public size with no filter, group-by or missing value; no mean; the float path)."""
    if plan.lattice is None:
        return (), 0, frozenset()
    coords: list[int] = []
    weight = 0
    others: set[int] = set()
    seen: set[tuple[int, ...]] = set()
    for stat, where in zip(plan.statistics, plan.indices):
        if stat["kind"] != "mean" or len(where) < 2:
            continue
        counts = tuple(where[len(where) // 2:])
        other = _other_cell(stat)
        if other is not None and other < len(counts):
            others.add(counts[other])
        if counts in seen:
            continue
        seen.add(counts)
        coords += [i for i in counts if i not in coords]
        weight += int(max(sum(case) for case in _count_cases(plan.neighbours, len(counts))))
    return tuple(coords), weight, frozenset(others)


@dataclass(frozen=True)
class SizeRelease:
    """A listing's published noisy counts (``Listing.size_release``): ``level`` (eps_p), ``weight``,
    ``counts`` (coordinate -> noisy count), ``others`` (the "other" cells' coordinates) and ``top``,
    the highest level buyers may buy (the listing's ceiling less eps_p)."""

    level: Decimal
    weight: int
    counts: dict
    others: frozenset
    top: Decimal

    def note(self, count: int) -> tuple[str, bool]:
        """What the cell of count coordinate ``count`` says before any purchase, and whether it is
        too small for any useful mean (its lower confidence end is 0 or less), by post-processing
        of its noisy count alone."""
        return cell_note(self.counts[count], size_engine.lower_end(self.counts[count], self.level, self.weight),
                         other=count in self.others, source="noisy count")


def cell_note(noisy, low, *, other: bool, source: str) -> tuple[str, bool]:
    """A mean cell's words from a noisy count of it (``noisy``) and that count's lower confidence end
    (``low``): ``(note, too_few)``."""
    too_few = low <= 0
    if other and noisy <= 0:
        return f"{EMPTY_OTHER} (its {source} is 0)", True
    if other:
        return (f"{OTHER_NOTE}; {TOO_FEW}" if too_few else OTHER_NOTE), too_few
    return (TOO_FEW if too_few else ""), too_few


class Mean(Sum):
    """The mean of a column's present values (clamped), per cell: its sum divided by
    the public number of records when that is public, the column is declared
    complete and there is no filter or group-by; otherwise divided by a released
    count of the present values in the same cell (:func:`mean_estimate`)."""

    name = "mean"

    def groups(self, stat, number, nb, columns, lattice=False):
        scope = _scope(stat, columns)
        column = columns[stat["column"]]
        total = self._sum(stat, nb, columns, scope, lattice)
        if nb.public and column.complete and not scope.key:
            return (total,)
        return (total, _count_group(nb, scope, present=None if column.complete else column.name))

    def describe(self, stat, nb):
        simple = nb.public and "where" not in stat and "by" not in stat
        by = f"divided by the public number of records, {nb.size:,}" if simple else "derived from the released sum and count"
        return (f"Mean of {stat['column']} (each value clamped to {stat['lower']:g} … {stat['upper']:g}; {by})"
                + _scope_text(stat))

    def statistic_name(self, stat, where, labels):
        # one cell: its sum's label, read as a mean ("mean(age) | sex = female"), as its reading is labelled
        return "mean" + labels[where[0]].removeprefix("sum") if len(where) <= 2 else self.curve_name(stat)

    def cell_curves(self, stat, where, plan, size: "SizeRelease") -> list[dict]:
        """With the listing's size release: one curve per cell, its bound from the cell's noisy count
        (``releases.engine.size.mean_quote``, docs/mathematics.md "The size release and a mean's
        quote"); a cell whose count is too small for any useful mean says so (``too_few``, its
        ``note``) and has the whole range as its bound."""
        cells = len(where) // 2
        width = stat["upper"] - stat["lower"]
        each = 1.0 - float(size_engine.EACH_MISS)
        out = []
        for total, count in zip(where[:cells], where[cells:]):
            noisy = size.counts[count]
            divisor = size_engine.lower_end(noisy, size.level, size.weight)
            note, too_few = size.note(count)
            estimable = not too_few

            def bound(eps, total=total, divisor=divisor):
                found = size_engine.mean_quote(plan.bound(total, eps, each), plan.bound(count, eps, each),
                                               stat["lower"], stat["upper"], divisor)
                return width if found is None else found

            if estimable and size_engine.mean_quote(plan.bound(total, size.top, each), plan.bound(count, size.top, each),
                                                    stat["lower"], stat["upper"], divisor) is None:
                note, estimable = (f"{OTHER_NOTE}; {TOO_FEW}" if note else TOO_FEW), False
            out.append({"name": "mean" + plan.labels[total].removeprefix("sum"), "bound": bound,
                        "assumes_records": None, "too_few": not estimable, "note": note})
        return out

    def curve(self, stat, where, plan, records=None):
        # The mean's bound divides by the number of records in its cell. Divided by the public size: exact.
        # Otherwise the divisor is a private count c, and the bound is stated only as a function of an
        # assumed c (``records``), on the union event of the sum and count bounds at 97.5% each
        # (:func:`mean_error_bound`, docs/mathematics.md "A mean's bound before purchase").
        width = stat["upper"] - stat["lower"]
        if len(where) == 1:
            i, n = where[0], plan.neighbours.size
            return {"name": self.curve_name(stat), "bound": lambda eps: min(width, plan.bound(i, eps) / n),
                    "assumes_records": None}
        if records is None:
            return None
        total, count = where[0], where[len(where) // 2]  # every cell's sum (and count) has the same weight
        each = 1.0 - (1.0 - 0.95) / 2.0

        def bound(eps):
            return mean_error_bound(plan.bound(total, eps, each), plan.bound(count, eps, each),
                                    stat["lower"], stat["upper"], records)

        return {"name": self.curve_name(stat), "bound": bound, "assumes_records": records}

    def read(self, stat, labels, where, r):
        lower, upper = stat["lower"], stat["upper"]
        out = []
        if len(where) == 1:  # divided by the public size
            total = where[0]
            n = r.neighbours.size
            value = min(max(r.vector[total] / n, lower), upper)
            bound = min(r.bounds[total] / n, upper - lower)
            out.append((total, value, bound, r.scales[total] / n))
            notes = [""]
        else:
            cells = len(where) // 2
            other = _other_cell(stat)
            notes = []
            for position, (total, count) in enumerate(zip(where[:cells], where[cells:])):
                value, bound = mean_estimate(
                    r.vector[total], r.vector[count], lower, upper, r.scales[total], r.confidence, r.scales[count],
                    bounds=None if r.half is None else (r.half[total], r.half[count]),
                )
                out.append((total, value, bound, r.scales[total]))
                # post-processing of the released count: its lower end, and whether the bound is the whole range
                half = r.half[count] if r.half is not None else laplace_error_bound(r.scales[count], 0.975)
                note, too_few = cell_note(r.vector[count], r.vector[count] - half, other=position == other,
                                          source="released count")
                if not too_few and bound >= upper - lower:
                    note = f"{note}; {TOO_FEW}" if note else TOO_FEW
                notes.append(note)
        return [{"label": "mean" + labels[total].removeprefix("sum"), "kind": self.name, "value": float(value),
                 "noise_scale": float(scale), "error_bound": float(bound)} | ({"note": note} if note else {})
                for (total, value, bound, scale), note in zip(out, notes)]


class Histogram(Kind):
    """How many values of a number column fall in each bin ``[e0, e1), ..., [e_{k-1}, e_k]``
    (``bins``), or how many dates fall in each month or year of a declared range
    (``bin``, ``from``, ``to``); optionally filtered. Values outside every bin are not
    counted. Sensitivity: one bin by 1 (add/remove); two bins by 1 each (replace)."""

    name = "histogram"

    def validate(self, item, where, columns):
        if "bins" in item or "column" not in item or not isinstance(item["column"], str) \
                or item["column"] not in columns or not columns[item["column"]].temporal:
            return self._numeric(item, where, columns)
        _fields(item, where, ("column", "bin", "from", "to"), ("where",))
        column = _column(item, where, columns, types=TEMPORAL)
        out = {"kind": self.name, "column": column, **_bins(item, where)}
        out.update(_filter(item, where, columns))
        return out

    def _numeric(self, item, where, columns):
        _fields(item, where, ("column", "bins"), ("where",))
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
        out = {"kind": self.name, "column": column, "bins": edges}
        out.update(_filter(item, where, columns))
        return out

    def groups(self, stat, number, nb, columns, lattice=False):
        scope = _scope({"where": stat.get("where", [])}, columns)
        if "bins" in stat:
            return (_histogram_group(number, stat["column"], stat["bins"], nb, scope),)
        return (_date_histogram_group(number, stat, columns, nb, scope),)

    @classmethod
    def schema(cls):
        return {"oneOf": [
            _object("histogram", {"column": _S_NAME, "bins": {"type": "array", "items": _S_NUMBER, "minItems": 2, "maxItems": 51},
                                  "where": _S_WHERE},
                    ("column", "bins"), "counts per bin of a number column; bins lists 2 to 51 increasing edges"),
            _object("histogram", {"column": _S_NAME, "bin": _S_BIN, "from": _S_PERIOD, "to": _S_PERIOD, "where": _S_WHERE},
                    ("column", "bin", "from", "to"), "counts per month or year of a date column over a declared range",
                    title="DateHistogramStatistic"),
        ]}

    def curve_name(self, stat):
        return f"each bin of the {stat['column']} histogram"

    def describe(self, stat, nb):
        if "bins" not in stat:
            return (f"Histogram of {stat['column']} per {stat['bin']} from {stat['from']} to {stat['to']}"
                    + _scope_text({"where": stat.get("where")}))
        edges = stat["bins"]
        if len(edges) <= 8:
            text = f"Histogram of {stat['column']}, bin edges {', '.join(f'{e:g}' for e in edges)}"
        else:
            text = f"Histogram of {stat['column']} in {len(edges) - 1} bins from {edges[0]:g} to {edges[-1]:g}"
        return text + _scope_text({"where": stat.get("where")})


class TwoWay(Kind):
    """``{"kind": "table", "rows": col, "columns": col, "row_categories": [...],
    "column_categories": [...]}``: counts of records per (row category, column
    category), each side with its "other" (and "missing", by the column's policy);
    optionally filtered. Sensitivity as a grouped count: one cell by 1
    (add/remove), two cells by 1 each (replace)."""

    name = "table"

    def validate(self, item, where, columns):
        _fields(item, where, ("rows", "columns"), ("row_categories", "column_categories", "where"))
        out = {"kind": self.name}
        for side in ("rows", "columns"):
            prefix = "row" if side == "rows" else "column"
            name = _column(item, where, columns, key=side, types=CATEGORICAL)
            key = f"{prefix}_categories"
            if key in item:
                categories = _values(item[key], columns[name], where, key)
            elif columns[name].type == "boolean":
                categories = [True, False]
            else:
                raise SpecError(f"{where}: missing field {key!r} (the categories of {name!r} you declare public)")
            out[side] = name
            out[key] = categories
        if out["rows"] == out["columns"]:
            raise SpecError(f"{where}: rows and columns must be two different columns")
        out.update(_filter(item, where, columns))
        return out

    def groups(self, stat, number, nb, columns, lattice=False):
        scope = _scope({"where": stat.get("where", [])}, columns)
        rows = _cells({"by": stat["rows"], "categories": stat["row_categories"]}, columns)
        cols = _cells({"by": stat["columns"], "categories": stat["column_categories"]}, columns)
        labels, conditions = [], []
        for row_label, row_where in rows:
            for col_label, col_where in cols:
                labels.append("count | " + ", ".join(scope.parts + (row_label, col_label)))
                conditions.append(row_where + col_where)
        return (_bins_group(number, labels, conditions, nb, key="table", where=scope.where),)

    @classmethod
    def schema(cls):
        return _object("table", {"rows": _S_NAME, "columns": _S_NAME, "row_categories": _S_CATEGORIES,
                                 "column_categories": _S_CATEGORIES, "categories_public": S_CONFIRM,
                                 "where": _S_WHERE},
                       ("rows", "columns"),
                       "two-way counts: records per (row category, column category) of two categorical columns")

    def curve_name(self, stat):
        return f"each cell of the {stat['rows']} × {stat['columns']} table"

    def describe(self, stat, nb):
        rows = ", ".join(_shown(v) for v in stat["row_categories"])
        cols = ", ".join(_shown(v) for v in stat["column_categories"])
        return (f"Counts of records by {stat['rows']} ({rows}, and other) and {stat['columns']} ({cols}, and other)"
                + _scope_text({"where": stat.get("where")}))
class _Vector(Kind):
    """A statistic on several columns at once, released alone with l2 noise
    (docs/mathematics.md section 6)."""

    vector = True
    optional: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()
    extra_schema: ClassVar[dict] = {}

    def validate(self, item, where, columns):
        _fields(item, where, self.required, self.optional)
        names = item["columns"]
        if not isinstance(names, (list, tuple)) or not 2 <= len(names) <= MAX_VECTOR_DIM:
            raise SpecError(f"{where}: columns must list 2 to {MAX_VECTOR_DIM} column names")
        for name in names:
            _column({"column": name}, where, columns)
        if len(set(names)) != len(names):
            raise SpecError(f"{where}: a column is listed twice")
        radius = _number(item["radius"], where, "radius")
        if radius <= 0:
            raise SpecError(f"{where}: radius must be positive")
        return {"kind": self.name, "columns": list(names), "radius": radius}

    def groups(self, stat, number, nb, columns, lattice=False):
        """None: a vector statistic is laid out whole by :meth:`layout`, with l2 noise."""
        return ()

    @classmethod
    def schema(cls):
        properties = {"columns": {"type": "array", "items": _S_NAME, "minItems": 2, "maxItems": MAX_VECTOR_DIM},
                      "radius": _S_NUMBER, **cls.extra_schema}
        return _object(cls.name, properties, cls.required, cls.__doc__.split("\n\n")[0].replace("\n    ", " "))

    @abstractmethod
    def layout(self, stat: dict, nb: Neighbours) -> tuple[float, list[float], list[float]]:
        """(l2 sensitivity, declared lower, declared upper) of the vector."""

    @abstractmethod
    def aggregate(self, stat: dict):
        """What the vector is on the data (``compute.Centroid`` or ``compute.Row``)."""

    def curve_name(self, stat):
        return f"error radius of the {self.name}"

    def curve(self, stat, where, plan, records=None):
        dim, w = len(where), float(plan.weights[where[0]])
        return {"name": self.curve_name(stat), "bound": lambda eps: l2_error_radius(dim, w / float(eps)),
                "assumes_records": None}

    def read(self, stat, labels, where, r):
        # one radius bounds the whole vector's Euclidean error, hence each coordinate's
        radius = l2_error_radius(len(where), float(r.scales[where[0]]), r.confidence)
        return [
            {"label": labels[i], "kind": self.name, "value": float(r.vector[i]),
             "noise_scale": float(r.scales[i]), "error_bound": radius}
            for i in where
        ]


#: Why no new listing offers a vector statistic (a centroid): its only mechanism is the float
#: l2 path, which is retired (docs/mathematics.md, "Floating point").
VECTOR_UNAVAILABLE = ("a vector statistic (a centroid) is unavailable for new listings: its noise path had no "
                      "established δ; it returns with the integer Gaussian-like path")


class Centroid(_Vector):
    """``{"kind": "centroid", "columns": [...], "center": [...], "radius": R}``:
    unavailable for new listings (its noise path had no established δ; it returns with the
    integer Gaussian-like path): kept to read existing listings. The mean of the records'
    points, each first pulled into the ball of radius R around ``center``. It divides by the number of records, so it is sold
    only when that number is public: replacing one record moves the mean of n
    points by at most ``2R / n`` (two points of the ball are at most 2R apart).

    Listings made before the relation existed have a ``min_records`` field
    (sensitivity ``2R / (min_records - 1)``); they are read, never sold again.
    """

    name = "centroid"
    required = ("columns", "center", "radius")
    extra_schema = {"center": {"type": "array", "items": _S_NUMBER}, "min_records": {"type": "integer", "minimum": 2}}
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
        return VECTOR_UNAVAILABLE

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

    def aggregate(self, stat):
        return VectorCentroid(tuple(stat["columns"]), tuple(stat["center"]), stat["radius"])


class Point(_Vector):
    """One record's point with noise of "radius r". Not sold: it protects a
    location up to distance r (geo-indistinguishability: two locations d apart
    have privacy loss eps * d / r, without bound), not any one record, so it
    cannot be counted in an eps budget. Kept to read the releases of listings
    made before it was withdrawn."""

    name = "point"
    required = ("columns", "row", "radius")
    extra_schema = {"row": {"type": "integer", "minimum": 1}}

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

    def aggregate(self, stat):
        return Row(tuple(stat["columns"]), stat["row"])


#: One column of a microdata listing as it is stored and shown (``market.catalog.microdata.Field.stored``).
MICRODATA_COLUMN = {
    "title": "MicrodataColumn",
    "type": "object",
    "properties": {
        "column": _S_NAME,
        "encoding": {"type": "string", "enum": ["onehot", "bloom"]},
        "categories": _S_CATEGORIES,
        "labels": {"type": "array", "items": _S_NAME, "description": "one per bit"},
        "weight": {"type": "integer", "description": "the most of its bits one record change flips"},
        "other": {"type": "boolean"},
        "missing": {"type": "boolean"},
        "bloom": {"title": "BloomFilter", "type": "object", "required": ["bits", "hashes"],
                  "properties": {"bits": {"type": "integer"}, "hashes": {"type": "integer"}}},
    },
    "required": ["column", "encoding", "labels", "weight", "other", "missing"],
}


#: The one accuracy curve of a microdata listing: every decoded count has the same 95% bound.
MICRODATA_CURVE_NAME = "each decoded count"


class Microdata(Kind):
    """Bit-report microdata (``market.catalog.microdata``): not a statistic of the records but the
    records themselves, each bit randomised. It is never part of a statistics spec (a microdata
    listing is made on its own, from its columns and ladder of levels); its listings read back
    through this kind like any other: one "statistic" whose coordinates are the bits, each read as
    the number of records with that bit set, decoded from the reports, with its 95% interval."""

    name = "microdata"

    def validate(self, item, where, columns):
        raise SpecError(f"{where}: microdata is listed on its own, as a microdata listing (its columns and levels), "
                        "not as a statistic")

    def groups(self, stat, number, nb, columns, lattice=False):  # pragma: no cover - never laid out
        raise SpecError("microdata is not laid out as statistics")

    @classmethod
    def schema(cls):
        return _object("microdata", {
            "columns": {"type": "array", "items": MICRODATA_COLUMN, "description": "each column's bits"},
            "levels": {"type": "array", "items": {"type": "string"}, "description": "the ladder of levels sold"},
            "salt": {"type": "string", "description": "the Bloom filters' public hash key (hex)"},
        }, ("columns", "levels", "salt"), "bit-report microdata: every record, each bit randomised (read only)")

    def curve_name(self, stat):
        return MICRODATA_CURVE_NAME

    def statistic_name(self, stat, where, labels):
        return self.curve_name(stat)

    def describe(self, stat, nb):
        from .microdata import restore

        md = restore([stat], records=nb.rows)
        return (f"Microdata: every record ({nb.rows:,}), {md.bits} randomised bits each; "
                + "; ".join(md.describe()))

    def curve(self, stat, where, plan, records=None):
        from .microdata import restore

        md = restore([stat], records=plan.neighbours.rows)
        return {"name": self.curve_name(stat), "bound": md.bound, "assumes_records": None}

    def read(self, stat, labels, where, r):
        return [
            {"label": labels[i], "kind": self.name, "value": float(r.vector[i]), "noise_scale": float(r.scales[i]),
             "error_bound": float(r.bounds[i])}
            for i in where
        ]


#: Every kind, by name.
KINDS: dict[str, Kind] = {kind.name: kind for kind in (Count(), Sum(), Mean(), Histogram(), TwoWay(), Centroid(), Point(),
                                                        Microdata())}
VECTOR_KINDS = tuple(name for name, kind in KINDS.items() if kind.vector)
#: The kinds a new listing's statistics may offer (the point is withdrawn; a vector statistic is unavailable,
#: :data:`VECTOR_UNAVAILABLE`; microdata is a listing of its own).
OFFERED_KINDS = tuple(name for name in KINDS if name not in ("point", "microdata") and not KINDS[name].vector)


# --------------------------------------------------------------------------
# building, computing, presenting


def statistic_schema() -> dict:
    """The JSON schema of one statistic as sent and stored: the union of the kinds' schemas
    (the point is withdrawn, but stored listings still hold it)."""
    variants = []
    for name in KINDS:
        schema = KINDS[name].schema()
        variants += schema["oneOf"] if "oneOf" in schema else [schema]
    return {"oneOf": variants}


#: The key with which a statistic (or a microdata column) that declares categories confirms them
#: public. Buyers see declared categories, and which values occur in the data is itself private, so
#: the owner must say each list is public knowingly; the product never fills one in from the data.
CONFIRM_PUBLIC = "categories_public"
#: The fields in which a statistic or a microdata column declares categories.
DECLARED_CATEGORIES = ("categories", "row_categories", "column_categories")


def without_confirmation(items, label: str = "statistic") -> tuple[object, list[str]]:
    """``items`` (a new listing's statistics, or its microdata columns) with each one's
    ``categories_public`` taken out (it is never stored), and the reason for each one that declares
    categories without ``categories_public: true``, numbered from 1 like the spec's own checks
    ("statistic 2 (count): ..."). Anything but a list is returned as it is, for those checks to name."""
    if not isinstance(items, (list, tuple)):
        return items, []
    out, reasons = [], []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            out.append(item)
            continue
        item = {key: value for key, value in item.items() if key != CONFIRM_PUBLIC}
        if any(key in item for key in DECLARED_CATEGORIES) and items[number - 1].get(CONFIRM_PUBLIC) is not True:
            named = item.get("kind") if label == "statistic" else item.get("column")
            where = f"{label} {number}" + (f" ({named})" if isinstance(named, str) else "")
            reasons.append(f"{where}: its categories are shown to buyers, and which values occur in your data is "
                           f"itself private: list only values anyone may know, and confirm it with "
                           f"{CONFIRM_PUBLIC}: true")
        out.append(item)
    return out, reasons


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
                f"statistic {number}: unknown kind {kind!r} "
                "(expected count, sum, mean, histogram or table)"
            )
        if KINDS[kind].vector and len(spec) != 1:
            raise SpecError(f"statistic {number} ({kind}): a vector statistic is listed on its own")
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
        vector=kind.aggregate(stat),
    )


def build_plan(spec, columns, *, neighbours: Neighbours | None = None, offer: bool = True,
               engine: str = LAPLACE) -> Plan:
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

    ``engine``: :data:`LAPLACE` (the float path) or :data:`LATTICE` (the exact
    lattice path, docs/mathematics.md section 11): every coordinate is then an
    integer number of grid steps (a count's grid is 1, a sum's is its
    ``grid``), each group's sensitivity a whole number of steps, and
    ``plan.lattice`` holds the layout. A vector statistic always runs on its
    l2 float path.

    Raises :class:`SpecError` naming the first invalid statistic, or when
    the plan would have more than :data:`MAX_COORDINATES` values or
    :data:`MAX_CASES` worst cases, or (lattice) a range too wide for its grid.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    nb = neighbours or Neighbours()
    cols = {column.name: column for column in columns_from(columns)}
    statistics = _statistics(spec, cols)
    if engine != LATTICE:  # the float path has no grid
        statistics = tuple({k: v for k, v in stat.items() if k != "grid"} for stat in statistics)
    if offer:
        for number, stat in enumerate(statistics, start=1):
            reason = KINDS[stat["kind"]].refusal(stat, nb)
            if reason:
                raise SpecError(f"statistic {number} ({stat['kind']}): {reason}")
    first = KINDS[statistics[0]["kind"]]
    if first.vector:
        return _vector_plan(statistics[0], first, nb)
    on_lattice = engine == LATTICE

    # every group once (by key), with the statistics' view of it
    groups: dict[tuple, tuple[Group, int]] = {}
    needs: list[tuple[tuple, ...]] = []
    for number, stat in enumerate(statistics, start=1):
        keys = []
        for group in KINDS[stat["kind"]].groups(stat, number, nb, cols, lattice=on_lattice):
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
    layout = _lattice_layout([groups[key][0] for key in order], [at[key] for key in order], labels) if on_lattice else None
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


def _lattice_layout(groups: list[Group], at: list[tuple[int, ...]], labels: list[str]) -> Lattice:
    """The plan's :class:`Lattice`: per coordinate its grid, weight ``K s`` (steps), range in steps;
    per worst case, each moved coordinate with its move (a group's moves fall on its first coordinates)."""
    k = len(groups)
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


def plan_restore(*, layout: dict, statistics, labels, sensitivity: float, weights, lower, upper, grids=None) -> Plan:
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
    )


def mean_estimate(
    released_sum,
    released_count,
    lower: float,
    upper: float,
    scale: float,
    confidence: float = 0.95,
    count_scale: float | None = None,
    bounds: tuple[float, float] | None = None,
):
    """A mean read off a released sum and count, with its error bound.

    The true mean is ``m = s / c`` for the true sum ``s`` of the values
    clamped to ``[lower, upper]`` and the true count ``c``, so ``m`` lies in
    ``[lower, upper]``. The released ``S = s + a`` and ``C = c + b`` carry
    Laplace noise of scale ``scale`` and ``count_scale`` (default: the same),
    rounded to the grid and clamped to a range holding the true value. Let

        t_s = laplace_error_bound(scale, 1 - (1 - confidence) / 2)
        t_c = laplace_error_bound(count_scale, 1 - (1 - confidence) / 2)

    (each includes half a grid step; on the lattice path ``bounds`` gives
    ``(t_s, t_c)`` from the discrete Laplace tails): ``|a| > t_s`` and ``|b| > t_c`` each
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
    if bounds is not None:
        t_s, t_c = (float(b) for b in bounds)
    else:
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


def mean_error_bound(t_s: float, t_c: float, lower: float, upper: float, records: int) -> float:
    """The error bound of a mean read off a released sum and count (:func:`mean_estimate`), stated
    before release for a cell of ``records`` present values (the true count ``c``, private).

    ``t_s``, ``t_c``: the sum's and the count's error bounds at ``1 - (1 - confidence) / 2`` each,
    so that both hold together with probability at least ``confidence`` (the union bound). On that
    event, with ``K = max(|lower|, |upper|)`` and the true mean ``m`` in ``[lower, upper]`` (so
    ``|m| <= K``), the raw estimate ``M = S / C`` has ``M - m = (a - M b) / c``, hence

        |M - m| <= (t_s + |M| t_c) / c <= (t_s + K t_c) / c + (t_c / c) |M - m|,

    and for ``c > t_c``: ``|M - m| <= (t_s + K t_c) / (c - t_c)``. The estimate is ``M`` clamped to
    ``[lower, upper]`` (closer to ``m``; the midpoint when ``C <= 0.5``, which on that event needs
    ``c - t_c <= 0.5``, so ``t_c >= 0.5`` as ``c >= 1``, and a bound of at least ``K``, more than the
    midpoint's error), and never errs by more than the width: the bound is the smaller of the two,
    the width when ``c <= t_c``. Before clamping the bound is reached (``m = upper = K``, ``a = t_s``,
    ``b = -t_c``); after clamping it is cautious. docs/mathematics.md, "A mean's bound before
    purchase".
    """
    width = upper - lower
    if records <= t_c:
        return float(width)
    k = max(abs(lower), abs(upper))
    return float(min(width, (t_s + k * t_c) / (records - t_c)))


def l2_error_radius(dim: int, scale: float, confidence: float = 0.95) -> float:
    """A radius holding the released point's error with probability ``confidence``:
    the l2 noise's norm is Gamma(dim, scale); rounding each coordinate to the grid
    adds at most half a step per coordinate."""
    from scipy.stats import gamma

    from releases.engine.postprocess import grid_step

    return float(gamma.ppf(confidence, dim, scale=scale)) + math.sqrt(dim) * grid_step(scale) / 2.0


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
        )
    else:
        bounds = np.array([laplace_error_bound(b, confidence) for b in scales])
        reading = Reading(vector, scales, bounds, confidence, plan.neighbours)
    readings: list[dict] = []
    for stat, where in zip(plan.statistics, plan.indices):
        readings += KINDS[stat["kind"]].read(stat, list(plan.labels), where, reading)
    return readings
