"""The sum of a number column's clamped values, optionally filtered and per declared category."""

from __future__ import annotations

from decimal import Decimal

from ..grammar import _bounds, _fields, _filter, _grid, _scope, group_by, named_column
from ..schema import _S_BY, _S_GRID, _S_NAME, _S_NUMBER, _S_WHERE, _object
from ..stability import _sum_group
from .base import Kind, _scope_text
from .registry import register


@register
class Sum(Kind):
    """The sum of a column's present values, each first clamped to ``[lower, upper]``,
    optionally filtered and per category (sensitivity: :func:`_sum_group`)."""

    name = "sum"

    def validate(self, item, where, columns):
        _fields(item, where, ("column", "lower", "upper"), ("grid", "where", "by", "categories", "bin", "from", "to"))
        column = named_column(item, where, columns)
        lower, upper = _bounds(item, where)
        out = {"kind": self.name, "column": column, "lower": lower, "upper": upper,
               "grid": _grid(item, where, columns[column], lower, upper)}
        out.update(_filter(item, where, columns))
        out.update(group_by(item, where, columns))
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


