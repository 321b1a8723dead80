"""Counts per bin of a number column, or per month or year of a date column."""

from __future__ import annotations

from ..grammar import (
    TEMPORAL,
    _bins,
    _fields,
    _filter,
    _scope,
    bin_edges,
    named_column,
)
from ..schema import _S_BIN, _S_NAME, _S_NUMBER, _S_PERIOD, _S_WHERE, _object
from ..stability import _date_histogram_group, _histogram_group
from .base import Kind, _scope_text
from .registry import register


@register
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
        column = named_column(item, where, columns, types=TEMPORAL)
        out = {"kind": self.name, "column": column, **_bins(item, where)}
        out.update(_filter(item, where, columns))
        return out

    def _numeric(self, item, where, columns):
        _fields(item, where, ("column", "bins"), ("where",))
        column = named_column(item, where, columns)
        out = {"kind": self.name, "column": column, "bins": bin_edges(item["bins"], where)}
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


