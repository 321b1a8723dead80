"""Synthetic data: every 1-way and every 2-way table of the declared columns, on one path (the rows a
buyer downloads are computed from them: ``releases.engine.synthetic``)."""

from __future__ import annotations

import itertools

from ..coordinates import Condition
from ..grammar import (
    CATEGORICAL,
    NUMERIC,
    SpecError,
    _fields,
    _shown,
    _text,
    _values,
    bin_edges,
    group_cells,
    named_column,
)
from ..schema import _S_CATEGORIES, _S_NAME, _S_NUMBER, S_CONFIRM, _object
from ..stability import _bins_group
from .base import Kind
from .registry import register

#: A synthetic-data listing has 2 to this many columns (their pairs are its 2-way tables).
MAX_COLUMNS = 15

#: How a release's rows are drawn from its tables, by version: a listing keeps the version it was made
#: with, so that a level's rows never change (1: consistent tables, a tree, rows dealt down it; 2: the
#: same, each 2-way table first shrunk toward independence by the noise's public variance). A new
#: listing gets the latest.
MODELS = (1, 2)


def model_of(stat: dict) -> int:
    """The version of the rows' model a listing's statistic was made with (a listing made before
    versions were recorded has 1)."""
    return int(stat.get("model", 1))


def column_cells(item: dict, columns) -> list[tuple[str, tuple[Condition, ...]]]:
    """A declared column's codes as (label part, conditions): a categorical or boolean column's categories
    then "other" (``group_cells``); a number's bins, the first open below and the last open above, so
    that every present value has one; then "missing" when the column's policy counts missing values."""
    name = item["column"]
    if "categories" in item:
        return group_cells({"by": name, "categories": item["categories"]}, columns)
    edges = item["bins"]
    out = []
    for k in range(len(edges) - 1):
        low, high = edges[k], edges[k + 1]
        last = k == len(edges) - 2
        conditions = ((Condition(name, "<", high),) if k == 0 else
                      (Condition(name, ">=", low),) if last else
                      (Condition(name, ">=", low), Condition(name, "<", high)))
        shown = f"[{_text(low)}, {_text(high)}{']' if last else ')'}"
        out.append((f"{name} in {shown}", conditions))
    if columns[name].missing == "category":
        out.append((f"{name} is missing", (Condition(name, "is missing"),)))
    return out


def _named(entry: dict) -> list:
    """A column's codes before "missing": its bins' lower edges, or its categories then "other" (left out
    when the categories are every value a boolean has), as :func:`column_cells` lays them out."""
    if "bins" in entry:
        return list(entry["bins"][:-1])
    categories = list(entry["categories"])
    whole = all(isinstance(c, bool) for c in categories) and set(categories) == {True, False}
    return categories + ([] if whole else ["other"])


def sizes_of(stat: dict, labels) -> tuple[int, ...]:
    """Each column's number of codes in a laid-out listing: its declared ones (:func:`_named`), and
    "missing" when the listing has a cell for it (its column's policy counted missing values when it
    was made)."""
    shown = set(labels)
    return tuple(len(_named(entry)) + (f"count | {entry['column']} is missing" in shown) for entry in stat["columns"])


@register
class Synthetic(Kind):
    """Synthetic rows: every 1-way and every 2-way table of 2 to 15 columns (each categorical with
    public categories, or a number on public bins, the first and last open-ended), measured on one
    path; a release's rows are drawn from a model fitted to its tables alone. Sensitivity: one cell of
    each table by 1 (add/remove), two cells by 1 each (replace)."""

    name = "synthetic"
    title = "synthetic data"
    alone = True
    sells_rows = True
    builder_inputs = {"columns": "synthetic_columns"}
    legacy_fields = ("model",)  # the builder makes listings with the latest model

    def validate(self, item, where, columns):
        _fields(item, where, ("columns",), ("model",))
        model = item.get("model", MODELS[-1])
        if isinstance(model, bool) or model not in MODELS:
            raise SpecError(f"{where}: model must be one of {', '.join(map(str, MODELS))} (the latest, "
                            f"{MODELS[-1]}, when left out)")
        raw = item["columns"]
        if not isinstance(raw, (list, tuple)) or not 2 <= len(raw) <= MAX_COLUMNS:
            raise SpecError(f"{where}: columns must list 2 to {MAX_COLUMNS} columns")
        out, seen = [], set()
        for number, entry in enumerate(raw, start=1):
            at = f"{where}, column {number}"
            if not isinstance(entry, dict) or "column" not in entry:
                raise SpecError(f'{at}: expected an object such as {{"column": "sex", "categories": [...]}}')
            name = named_column(entry, at, columns, types=CATEGORICAL + NUMERIC)
            if name in seen:
                raise SpecError(f"{at}: {name!r} is listed twice")
            seen.add(name)
            column = columns[name]
            if column.missing == "exclude":
                raise SpecError(f"{at}: {name!r} leaves records with a missing value out; synthetic rows count every "
                                "record in every table: count its missing values as a category")
            if column.type in NUMERIC:
                _fields(entry, at, ("column", "bins"), ())
                out.append({"column": name, "bins": bin_edges(entry["bins"], at)})
            elif "categories" in entry:
                _fields(entry, at, ("column", "categories"), ())
                out.append({"column": name, "categories": _values(entry["categories"], column, at, "categories")})
            elif column.type == "boolean":
                _fields(entry, at, ("column",), ())
                out.append({"column": name, "categories": [True, False]})
            else:
                raise SpecError(f"{at}: missing field 'categories' (the categories of {name!r} you declare public)")
        return {"kind": self.name, "columns": out, "model": int(model)}

    def sizes(self, stat, columns) -> tuple[int, ...]:
        """Each column's number of codes."""
        return tuple(len(column_cells(entry, columns)) for entry in stat["columns"])

    def tables(self, stat, where, labels) -> list[tuple[str, tuple[int, ...]]]:
        """Each table's name and coordinates, in the listing's order (every column, then every pair)."""
        names = [entry["column"] for entry in stat["columns"]]
        sizes = sizes_of(stat, labels)
        out, start = [], 0
        for table in [(i,) for i in range(len(names))] + list(itertools.combinations(range(len(names)), 2)):
            width = sizes[table[0]] * (sizes[table[1]] if len(table) == 2 else 1)
            out.append((" × ".join(names[i] for i in table), tuple(where[start: start + width])))
            start += width
        return out

    def curves(self, stat, where, plan, records=None):
        """One figure per table: the expected total-variation distance of its noisy counts from the true
        ones (the sum of the cells' expected absolute errors over twice the number of records: the public
        number, else ``records`` assumed), before the release is made consistent (which only lowers it)."""
        public = plan.neighbours.public
        count = plan.neighbours.size if public else records
        out = []
        for name, at in self.tables(stat, where, plan.labels):
            out.append({"name": f"expected TVD of the {name} table",
                        "bound": lambda eps, at=at: sum(plan.mean_error(i, eps) for i in at) / (2.0 * count),
                        "assumes_records": None if public else count, "assumes_what": "the data holds",
                        "labels": tuple(plan.labels[i] for i in at), "range": (0, 1)})
        return out

    def groups(self, stat, number, nb, columns, lattice=False):
        cells = [column_cells(entry, columns) for entry in stat["columns"]]
        out = []
        for i, own in enumerate(cells):
            out.append(_bins_group(number, [f"count | {label}" for label, _ in own], [c for _, c in own], nb,
                                   key=f"synthetic {i}"))
        for i, j in itertools.combinations(range(len(cells)), 2):
            labels, conditions = [], []
            for (a_label, a_where), (b_label, b_where) in itertools.product(cells[i], cells[j]):
                labels.append(f"count | {a_label}, {b_label}")
                conditions.append(a_where + b_where)
            out.append(_bins_group(number, labels, conditions, nb, key=f"synthetic {i} {j}"))
        return tuple(out)

    @classmethod
    def schema(cls):
        entry = {"title": "SyntheticColumn", "type": "object", "properties": {"column": _S_NAME, "categories": _S_CATEGORIES,
                                                  "bins": {"type": "array", "items": _S_NUMBER}},
                 "required": ["column"], "additionalProperties": False}
        return _object(cls.name, {"columns": {"type": "array", "items": entry, "minItems": 2, "maxItems": MAX_COLUMNS},
                                  "model": {"type": "integer", "enum": list(MODELS),
                                            "description": "how rows are drawn from the tables (default: the latest)"},
                                  "categories_public": S_CONFIRM},
                       ("columns",), cls.__doc__.split("\n\n")[0].replace("\n    ", " "))

    def curve_name(self, stat):
        return "each cell of each table"

    def describe(self, stat, nb):
        parts = []
        for entry in stat["columns"]:
            if "bins" in entry:
                parts.append(f"{entry['column']} (bins at {', '.join(_text(e) for e in entry['bins'])})")
            else:
                parts.append(f"{entry['column']} ({', '.join(_shown(v) for v in entry['categories'])})")
        return "Synthetic rows of " + "; ".join(parts) + ", from every table of one or two of these columns"
