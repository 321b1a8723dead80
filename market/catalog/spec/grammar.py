"""Reading a statistic as sent: the limits, the checks of each field and of filters and
group-bys, and the scope (filter and cells) a statistic reads. Every error is a :class:`SpecError` naming
the statistic, e.g. "statistic 2 (sum): lower must be below upper"."""

from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from .columns import CATEGORICAL, NUMERIC, TEMPORAL, Column
from .coordinates import Condition

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


class SpecError(ValueError):
    """A spec is invalid; the message names the statistic, e.g.
    "statistic 2 (sum): lower must be below upper"."""


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


def named_column(item: dict, where: str, columns, key: str = "column", types: tuple[str, ...] | None = NUMERIC) -> str:
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
        name = named_column(cond, here, columns, types=None)
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


def bin_edges(bins, where: str) -> list[float]:
    """Declared bin edges: a list of 2 to ``MAX_BINS + 1`` numbers, strictly increasing."""
    if not isinstance(bins, (list, tuple)):
        raise SpecError(f"{where}: bins must be a list of bin edges, got {bins!r}")
    if not 2 <= len(bins) <= MAX_BINS + 1:
        raise SpecError(f"{where}: bins must list between 2 and {MAX_BINS + 1} edges (1 to {MAX_BINS} bins), got {len(bins)}")
    edges = [_number(edge, where, f"bin edge {i}") for i, edge in enumerate(bins, start=1)]
    for i in range(1, len(edges)):
        if not edges[i - 1] < edges[i]:
            raise SpecError(f"{where}: bin edges must be strictly increasing (edge {i + 1} is not above edge {i})")
    return edges


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


def group_by(item: dict, where: str, columns) -> dict:
    """A group-by: ``{"by", "categories"}`` for a categorical or boolean column,
    ``{"by", "bin", "from", "to"}`` for a date."""
    if "by" not in item:
        for key in ("categories", "bin", "from", "to"):
            if key in item:
                raise SpecError(f"{where}: {key!r} is for a group-by; name the column in 'by'")
        return {}
    name = named_column(item, where, columns, key="by", types=CATEGORICAL + TEMPORAL)
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


def group_cells(stat: dict, columns) -> list[tuple[str, tuple[Condition, ...]]]:
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
    cells = tuple(group_cells(stat, columns)) if by else ((None, ()),)
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
        nested = [c for c in item.get("columns", ()) if isinstance(c, dict)] if isinstance(item.get("columns"), list) else []
        declares = any(key in item for key in DECLARED_CATEGORIES) or any("categories" in c for c in nested)
        if declares and items[number - 1].get(CONFIRM_PUBLIC) is not True:
            named = item.get("kind") if label == "statistic" else item.get("column")
            where = f"{label} {number}" + (f" ({named})" if isinstance(named, str) else "")
            reasons.append(f"{where}: its categories are shown to buyers, and which values occur in your data is "
                           f"itself private: list only values anyone may know, and confirm it with "
                           f"{CONFIRM_PUBLIC}: true")
        out.append(item)
    return out, reasons


