"""The count of records, optionally filtered and per declared category."""

from __future__ import annotations

from ..grammar import _fields, _filter, _scope, group_by
from ..schema import _S_BY, _S_WHERE, _object
from ..stability import _count_group
from .base import Kind, _scope_text
from .registry import register


@register
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
        out.update(group_by(item, where, columns))
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

    def curve(self, stat, where, plan, records=None):
        curve = super().curve(stat, where, plan, records)
        if plan.neighbours.public:  # a count of a public number of records n lies in [0, n]
            curve["range"] = (0, plan.neighbours.size)
        return curve

    def curve_name(self, stat):
        return "count of records" + (" (each group)" if "by" in stat else "")

    def describe(self, stat, nb):
        return "Count of records" + _scope_text(stat)


