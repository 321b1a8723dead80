"""Two-way counts of records per (row category, column category)."""

from __future__ import annotations

from ..grammar import (
    CATEGORICAL,
    SpecError,
    _fields,
    _filter,
    _scope,
    _shown,
    _values,
    group_cells,
    named_column,
)
from ..schema import _S_CATEGORIES, _S_NAME, _S_WHERE, S_CONFIRM, _object
from ..stability import _bins_group
from .base import Kind, _scope_text
from .registry import register


@register
class TwoWay(Kind):
    """``{"kind": "table", "rows": col, "columns": col, "row_categories": [...],
    "column_categories": [...]}``: counts of records per (row category, column
    category), each side with its "other" (and "missing", by the column's policy);
    optionally filtered. Sensitivity as a grouped count: one cell by 1
    (add/remove), two cells by 1 each (replace)."""

    name = "table"
    title = "two-way table (counts)"

    def validate(self, item, where, columns):
        _fields(item, where, ("rows", "columns"), ("row_categories", "column_categories", "where"))
        out = {"kind": self.name}
        for side in ("rows", "columns"):
            prefix = "row" if side == "rows" else "column"
            name = named_column(item, where, columns, key=side, types=CATEGORICAL)
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
        rows = group_cells({"by": stat["rows"], "categories": stat["row_categories"]}, columns)
        cols = group_cells({"by": stat["columns"], "categories": stat["column_categories"]}, columns)
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
