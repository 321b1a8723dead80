"""The owner's listing builder: from the inputs of one statistic row to the statistic's spec.

A row of the "new listing" page has one input per part of a statistic (its
kind, a numeric column, bounds, bin edges, a group-by column and its
categories, a second one for a two-way table, date bins, filter conditions).
Which parts a kind takes is read from the kind itself (``Kind.schema()`` in
``market.catalog.spec``: its JSON schema's properties), so a new kind
whose fields are among the inputs below appears on the page without a change
here. :func:`statistic_spec` is the one place that turns the posted text into
a spec; it is pure (no Django) and returns the inputs at fault with their
messages, which the form shows next to them.

A sum's or mean's rounding grid (the exact lattice path rounds each value to a
multiple of it) is kept as the decimal text the owner typed, so that 0.01 is
exactly one hundredth; left empty, the statistics module picks it from the
bounds.

Values are typed by the column they are about: a filter on a numeric column
compares numbers, on a boolean column ``true``/``false``, on a date column an
ISO date (2024-01-31), on a categorical column text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from market.catalog.spec.columns import CATEGORICAL, NUMERIC, TEMPORAL, Column
from market.catalog.spec import CONFIRM_PUBLIC, DECLARED_CATEGORIES, KINDS, OFFERED_KINDS

__all__ = [
    "FILTER_SLOTS",
    "OPERATORS",
    "SPEC_INPUTS",
    "BuilderKind",
    "builder_kinds",
    "grid_text",
    "parse_values",
    "statistic_spec",
    "CONFIRM_CATEGORIES",
    "used_filters",
]

#: Filter conditions a row offers (the page shows one more when JavaScript is on and one is used).
FILTER_SLOTS = 3

#: Filter operators: (spec op, words on the page, how many values: 1, "many", 2 or 0).
OPERATORS = (
    ("=", "is", 1),
    ("in", "is one of", "many"),
    ("<", "<", 1),
    ("<=", "≤", 1),
    (">", ">", 1),
    (">=", "≥", 1),
    ("between", "is between", 2),
    ("is missing", "is missing", 0),
)
_ARITY = {op: arity for op, _, arity in OPERATORS}

#: Each spec field a kind may take, and the row input that holds it. A two-way
#: table's rows are the row's group-by column and categories, its columns the second pair.
SPEC_INPUTS = {
    "column": "column",
    "lower": "lower",
    "upper": "upper",
    "grid": "grid",
    "bins": "bins",
    "by": "by",
    "categories": "categories",
    "rows": "by",
    "row_categories": "categories",
    "columns": "by2",
    "column_categories": "categories2",
    "bin": "bin",
    "from": "date_from",
    "to": "date_to",
    "quantiles": "quantiles",
    "where": "where",
    "categories_public": "categories_public",  # the row's confirmation (one for both lists of a table)
    "center": "center",
    "radius": "radius",
}
#: The row inputs besides the kind, the filters and the confirmation, in page order.
INPUTS = ("column", "points", "center", "radius", "synthetic_columns", "lower", "upper", "grid", "bins", "quantiles", "by",
          "categories", "by2", "categories2", "bin", "date_from", "date_to")

@dataclass(frozen=True)
class BuilderKind:
    """A kind as the builder offers it: ``required`` and ``optional`` spec fields."""

    name: str
    title: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    #: the kind's own inputs for fields other kinds read from another (``Kind.builder_inputs``)
    own_inputs: tuple[tuple[str, str], ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        return self.required + self.optional

    def input_of(self, field: str) -> str | None:
        """The row input that holds ``field`` for this kind."""
        return dict(self.own_inputs).get(field) or SPEC_INPUTS.get(field)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The row inputs this kind reads (``where`` for the filters)."""
        seen: list[str] = []
        for name in self.fields:
            if self.input_of(name) not in seen:
                seen.append(self.input_of(name))
        return tuple(seen)


def _fields_of(kind) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(required, optional) spec fields of a kind, from its JSON schema: an object's
    properties, or for a ``oneOf`` of objects (a histogram of numbers or of dates) the
    fields every variant requires, and the others as optional."""
    schema = kind.schema()
    variants = schema.get("oneOf") or [schema]
    skipped = {"kind", *kind.legacy_fields}  # stored listings' fields have no input
    properties: list[str] = []
    required: set[str] | None = None
    for variant in variants:
        properties += [name for name in variant.get("properties", {}) if name not in skipped and name not in properties]
        needs = {name for name in variant.get("required", ()) if name != "kind"}
        required = needs if required is None else required & needs
    required = required or set()
    return (tuple(name for name in properties if name in required),
            tuple(name for name in properties if name not in required))


def builder_kinds() -> dict[str, BuilderKind]:
    """The kinds a row may be, by name, in the order the statistics module lists them:
    every offered kind whose fields all have an input (its own, ``Kind.builder_inputs``, or the
    common ones), titled as the kind titles itself (``Kind.title``)."""
    out = {}
    for name in OFFERED_KINDS:
        kind = KINDS[name]
        if not kind.in_builder:
            continue
        fields = _fields_of(kind)
        own = tuple(sorted(kind.builder_inputs.items()))
        if fields is None or any(field not in SPEC_INPUTS and field not in kind.builder_inputs
                                 for field in fields[0] + fields[1]):
            continue
        out[name] = BuilderKind(name, kind.title, fields[0], fields[1], own)
    return out


# --------------------------------------------------------------------------
# typed values


def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise ValueError(f"{text[:20]!r} is not a number")
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "yes", "1"):
        return True
    if word in ("false", "no", "0"):
        return False
    raise ValueError(f"{text[:20]!r} is not true or false")


def _when(text: str, column: Column) -> str:
    try:
        if column.type == "date":
            return date.fromisoformat(text).isoformat()
        return datetime.fromisoformat(text).isoformat()
    except ValueError:
        raise ValueError(f"{text[:30]!r} is not a date such as 2024-01-31") from None


def period(text: str, unit: str | None) -> str:
    """A month ("2024-01") or a year ("2024") as a date group-by's range states it; a full date
    (2024-01-31, as a date picker gives it) is cut to its month or year."""
    if unit == "year" and len(text) >= 4 and text[:4].isdigit() and (len(text) == 4 or text[4] == "-"):
        return text[:4]
    if unit == "month" and len(text) >= 7 and text[:4].isdigit() and text[4] == "-" and text[5:7].isdigit():
        if 1 <= int(text[5:7]) <= 12 and (len(text) == 7 or text[7] == "-"):
            return text[:7]
    example = "2024" if unit == "year" else "2024-01"
    shown = repr(text[:20]) if text else "an empty period"
    raise ValueError(f"{shown} is not a {unit or 'month or year'} such as {example}")


def typed(text: str, column: Column):
    """One value as the spec holds it for ``column``'s type; ValueError saying why not."""
    text = text.strip()
    if not text:
        raise ValueError("an empty value")
    if column.type in NUMERIC:
        return _number(text)
    if column.type == "boolean":
        return _boolean(text)
    if column.type in TEMPORAL:
        return _when(text, column)
    return text


def parse_values(text: str, column: Column, *, lines: bool = False) -> list:
    """Several values: one per line when ``lines`` (categories, which may hold commas),
    else comma-separated; each typed for ``column``. Repeated values are an error."""
    pieces = [p.strip() for p in (text.splitlines() if lines else text.split(","))]
    pieces = [p for p in pieces if p]
    values = [typed(p, column) for p in pieces]
    for i, value in enumerate(values):
        if value in values[:i]:
            raise ValueError(f"{pieces[i][:30]!r} is listed twice")
    return values


def grid_text(text: str) -> str:
    """A rounding grid as the owner typed it, kept exact: ``"0.01"`` stays ``"0.01"`` (a float
    would not be 0.01), ``"1e-2"`` is written ``"0.01"``; ValueError if it is not a number.
    Whether it suits the bounds is the statistics module's to say; a grid beyond 10^±30 suits
    none, and is refused here before anyone spells it out in digits."""
    try:
        grid = Decimal(text.strip())
    except InvalidOperation:
        grid = Decimal("NaN")
    if not grid.is_finite():
        raise ValueError(f"{text.strip()[:20]!r} is not a number: give a grid such as 0.01 or 1")
    if grid and abs(grid.adjusted()) > 30:
        raise ValueError(f"{text.strip()[:20]!r} is far outside any bounds: give a grid such as 0.01 or 1")
    return format(grid.normalize(), "f")


def bin_edges(text: str, example: str = "edges such as 0, 18, 65, 100") -> list[float]:
    """``"0, 18, 65, 100"`` -> ``[0.0, 18.0, 65.0, 100.0]``; ValueError naming a piece that is not a number."""
    edges = []
    for piece in text.split(","):
        piece = piece.strip()
        try:
            edge = float(piece)
        except ValueError:
            edge = math.nan
        if not math.isfinite(edge):
            shown = repr(piece[:20]) if piece else "an empty edge"
            raise ValueError(f"{shown} is not a number: give {example}.")
        edges.append(edge)
    return edges


# --------------------------------------------------------------------------
# one row -> one statistic


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def used_filters(values: dict) -> list[int]:
    return [
        i for i in range(FILTER_SLOTS)
        if not all(_blank(values.get(f"where_{i}_{part}")) for part in ("column", "op", "value"))
    ]


def _filters(values: dict, columns: dict[str, Column], errors: dict) -> list[dict]:
    where = []
    for i in used_filters(values):
        name, op, text = (values.get(f"where_{i}_{part}") or "" for part in ("column", "op", "value"))
        if name not in columns:
            errors.setdefault(f"where_{i}_column", []).append("Choose the column of this condition.")
            continue
        if op not in _ARITY:
            errors.setdefault(f"where_{i}_op", []).append("Choose how to compare.")
            continue
        column, arity = columns[name], _ARITY[op]
        condition = {"column": name, "op": op}
        try:
            if arity == 0:
                if not _blank(text):
                    raise ValueError("“is missing” takes no value: clear it")
            elif arity == 1:
                condition["value"] = typed(text, column)
            else:
                condition["values"] = parse_values(text, column)
                if arity == 2 and len(condition["values"]) != 2:
                    raise ValueError("give two values, comma-separated: the lowest and the highest")
                if not condition["values"]:
                    raise ValueError("give one value or more, comma-separated")
        except ValueError as exc:
            message = str(exc)
            errors.setdefault(f"where_{i}_value", []).append(message[:1].upper() + message[1:] + ".")
            continue
        where.append(condition)
    return where


#: What an owner who declares categories without confirming them public is told.
CONFIRM_CATEGORIES = ("Confirm that these categories are public: which values occur in your data is itself private, "
                      "so list only values anyone may know.")


def synthetic_columns(text: str, by_name: dict) -> tuple[list[dict], bool]:
    """Synthetic data's columns, one per line: ``name: a, b, c`` (a categorical column's categories, or a
    number's bin edges) or ``name`` alone (a true/false column). Returns the columns and whether any
    declares categories (to be confirmed public); ValueError naming the line at fault."""
    out, declares = [], False
    for number, line in enumerate((l for l in text.splitlines() if l.strip()), start=1):
        name, _, rest = line.partition(":")
        column = by_name.get(name.strip())
        if column is None or column.type not in NUMERIC + CATEGORICAL:
            raise ValueError(f"line {number}: {name.strip()[:40]!r} is not a categorical, true/false or numeric column")
        if column.type in NUMERIC:
            if not rest.strip():
                raise ValueError(f"line {number}: give {column.name}'s bin edges, e.g. {column.name}: 0, 18, 65, 100")
            out.append({"column": column.name, "bins": bin_edges(rest, f"bin edges of {column.name}")})
        elif rest.strip():
            out.append({"column": column.name, "categories": parse_values(rest, column)})
            declares = True
        elif column.type == "boolean":
            out.append({"column": column.name})
        else:
            raise ValueError(f"line {number}: list {column.name}'s categories, e.g. {column.name}: a, b, c")
    return out, declares


def numbers_input(values: dict, spec: dict, fault, name: str, required: str, example: str) -> None:
    """A required comma-separated list of numbers: input ``name`` into ``spec[name]``."""
    if _blank(values.get(name)):
        fault(name, required)
        return
    try:
        spec[name] = bin_edges(values[name], example)
    except ValueError as exc:
        fault(name, str(exc))


def point_inputs(values: dict, spec: dict, by_name: dict, fault, what: str) -> None:
    """A vector statistic's inputs: ``points`` (numeric columns, comma-separated), ``center`` (one number
    per column, comma-separated) and ``radius``."""
    names = [piece.strip() for piece in (values.get("points") or "").split(",") if piece.strip()]
    if not names:
        fault("points", f"Required for {what}: numeric columns, comma-separated (e.g. x, y).")
    for name in names:
        column = by_name.get(name)
        if column is None or column.type not in NUMERIC:
            fault("points", f"{name[:40]!r} is not a numeric column of this dataset.")
    spec["columns"] = names
    numbers_input(values, spec, fault, "center", f"Required for {what}: one number per column, comma-separated.",
                  "one number per column, such as 0, 0")
    if _blank(values.get("radius")):
        fault("radius", f"Required for {what}.")
    else:
        try:
            spec["radius"] = float(_number(str(values["radius"]).strip()))
        except ValueError as exc:
            fault("radius", f"{exc}.")


def statistic_spec(values: dict, columns, kinds: dict[str, BuilderKind] | None = None) -> tuple[dict | None, dict]:
    """The statistic one row describes, and the inputs at fault.

    ``values``: the row's inputs as posted (text; ``categories_public`` a bool).
    ``columns``: the dataset's :class:`Column` objects. Returns ``(spec, errors)``:
    ``spec`` is None for an unused row (no kind and nothing typed) or when
    ``errors`` (input name -> messages) is not empty. The service checks the
    rest (that bounds are ordered, that the column may be summed, ...).
    """
    kinds = builder_kinds() if kinds is None else kinds
    by_name = {column.name: column for column in columns if column.type != "ignored"}
    errors: dict[str, list[str]] = {}

    def fault(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    name = values.get("kind") or ""
    typed_inputs = [i for i in INPUTS if not _blank(values.get(i))]
    if not name:
        if typed_inputs or used_filters(values):
            fault("kind", "Choose a kind for this row, or clear it.")
        return None, errors
    if name not in kinds:
        fault("kind", "Choose one of the kinds offered.")
        return None, errors
    kind = kinds[name]
    article = "an" if kind.title[0] in "aeiou" else "a"
    for input_name in typed_inputs:
        if input_name not in kind.inputs:
            fault(input_name, f"{article.capitalize()} {kind.title} does not use this: clear it.")
    if used_filters(values) and "where" not in kind.inputs:
        fault("kind", f"{article.capitalize()} {kind.title} takes no filter conditions: clear them.")

    spec: dict = {"kind": name}
    grouped = any(f in kind.fields for f in ("rows", "columns")) or not _blank(values.get("by"))

    def column_input(input_name: str, allowed: tuple[str, ...], what: str) -> Column | None:
        chosen = values.get(input_name) or ""
        if not chosen:
            fault(input_name, f"Required for {article} {kind.title}.")
            return None
        column = by_name.get(chosen)
        if column is None or column.type not in allowed:
            fault(input_name, f"Choose {what}.")
            return None
        return column

    def dates() -> None:
        unit = values.get("bin")
        if unit not in ("month", "year"):
            fault("bin", "Choose month or year.")
        else:
            spec["bin"] = unit
        for input_name, field in (("date_from", "from"), ("date_to", "to")):
            try:
                spec[field] = period((values.get(input_name) or "").strip(), unit)
            except ValueError as exc:
                fault(input_name, f"{exc}.")

    dated_column = False  # a histogram of dates: the column binned by month or year
    if "column" in kind.fields and ("column" in kind.required or not _blank(values.get("column"))):
        own_dates = "bin" in kind.fields and "by" not in kind.fields
        allowed = NUMERIC + (TEMPORAL if own_dates else ())
        column = column_input("column", allowed, "a numeric or date column" if own_dates else "a numeric column")
        if column:
            spec["column"] = column.name
            dated_column = column.type in TEMPORAL
    if kind.input_of("columns") == "points":  # a point's columns, its center and radius
        point_inputs(values, spec, by_name, fault, f"{article} {kind.title}")
    declared_within = False
    if kind.input_of("columns") == "synthetic_columns":
        if _blank(values.get("synthetic_columns")):
            fault("synthetic_columns", f"Required for {kind.title}: one column per line.")
        else:
            try:
                spec["columns"], declared_within = synthetic_columns(values["synthetic_columns"], by_name)
            except ValueError as exc:
                fault("synthetic_columns", f"{exc}.")
    for bound in ("lower", "upper"):
        if bound in kind.fields and (bound in kind.required or not _blank(values.get(bound))):
            text = values.get(bound)
            if _blank(text):
                fault(bound, f"Required for {article} {kind.title}.")
                continue
            try:
                spec[bound] = float(_number(str(text).strip()))
            except ValueError as exc:
                fault(bound, f"{exc}.")
    if "grid" in kind.fields and not _blank(values.get("grid")):
        try:
            spec["grid"] = grid_text(str(values["grid"]))
        except ValueError as exc:
            fault("grid", f"{exc}.")
    if dated_column:
        if not _blank(values.get("bins")):
            fault("bins", f"{spec['column']} is a date: it is binned by month or year, not by edges.")
        dates()
    elif "bins" in kind.fields and ("bins" in kind.required or "bin" in kind.fields or not _blank(values.get("bins"))):
        if _blank(values.get("bins")):
            fault("bins", f"Required for {article} {kind.title}.")
        else:
            try:
                spec["bins"] = bin_edges(values["bins"])
            except ValueError as exc:
                fault("bins", str(exc))

    if "quantiles" in kind.fields:
        numbers_input(values, spec, fault, "quantiles", f"Required for {article} {kind.title}: e.g. 0.5 for the median.",
                      "quantiles such as 0.25, 0.5, 0.75")

    def categories(input_name: str, column: Column, field: str) -> bool:
        """Read one list of categories; True if the owner must confirm it public."""
        text = values.get(input_name) or ""
        if _blank(text) and column.type == "boolean":
            return False  # true and false: nothing to confirm
        if _blank(text):
            fault(input_name, f"List the categories of {column.name}, one per line: the values that may be shown.")
            return True
        try:
            spec[field] = parse_values(text, column, lines=True)
        except ValueError as exc:
            fault(input_name, f"{exc}.")
        return True

    confirm_needed = False
    if "rows" in kind.fields:  # a two-way table: by and its categories are the rows, by2 the columns
        rows = column_input("by", CATEGORICAL, "a categorical or true/false column")
        cols = column_input("by2", CATEGORICAL, "a categorical or true/false column")
        if rows:
            spec["rows"] = rows.name
            confirm_needed |= categories("categories", rows, "row_categories")
        if cols:
            spec["columns"] = cols.name
            confirm_needed |= categories("categories2", cols, "column_categories")
        if rows and cols and rows.name == cols.name:
            fault("by2", "Choose another column than the rows'.")
    elif "by" in kind.fields and grouped:
        dated = "bin" in kind.fields
        allowed = CATEGORICAL + (TEMPORAL if dated else ())
        what = "a categorical, true/false or date column" if dated else "a categorical or true/false column"
        by = column_input("by", allowed, what)
        if by:
            spec["by"] = by.name
            if by.type in TEMPORAL:
                dates()
                if not _blank(values.get("categories")):
                    fault("categories", "Dates are grouped by month or year: clear the categories.")
            else:
                confirm_needed = categories("categories", by, "categories")
                for input_name in ("bin", "date_from", "date_to"):
                    if not _blank(values.get(input_name)):
                        fault(input_name, f"{by.name} is not a date: clear this.")
    elif "by" in kind.fields and not _blank(values.get("categories")):
        fault("by", "Choose the column these categories are of, or clear them.")
    confirm_needed |= declared_within
    if confirm_needed and not values.get("categories_public"):
        fault("categories_public", CONFIRM_CATEGORIES)
    elif confirm_needed and (declared_within or any(field in spec for field in DECLARED_CATEGORIES)):
        spec[CONFIRM_PUBLIC] = True  # the owner's confirmation, as the service requires it (never stored)

    if "where" in kind.fields:
        where = _filters(values, by_name, errors)
        if where:
            spec["where"] = where
    return (None if errors else spec), errors
