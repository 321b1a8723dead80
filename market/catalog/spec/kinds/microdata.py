"""Bit-report microdata read back as one "statistic" (never part of a statistics spec)."""

from __future__ import annotations

from ..grammar import SpecError
from ..schema import MICRODATA_COLUMN, _object
from .base import Kind
from .registry import register

#: The one accuracy curve of a microdata listing: every decoded count has the same 95% bound.
MICRODATA_CURVE_NAME = "each decoded count"


@register
class Microdata(Kind):
    """Bit-report microdata (``market.catalog.microdata``): not a statistic of the records but the
    records themselves, each bit randomised. It is never part of a statistics spec (a microdata
    listing is made on its own, from its columns and ladder of levels); its listings read back
    through this kind like any other: one "statistic" whose coordinates are the bits, each read as
    the number of records with that bit set, decoded from the reports, with its 95% interval."""

    name = "microdata"
    offered = False

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
        from ..microdata import restore

        md = restore([stat], records=nb.rows)
        return (f"Microdata: every record ({nb.rows:,}), {md.bits} randomised bits each; "
                + "; ".join(md.describe()))

    def curve(self, stat, where, plan, records=None):
        from ..microdata import restore

        md = restore([stat], records=plan.neighbours.rows)
        return {"name": self.curve_name(stat), "bound": md.bound, "assumes_records": None}

    def read(self, stat, labels, where, r):
        return [
            {"label": labels[i], "kind": self.name, "value": float(r.vector[i]), "noise_scale": float(r.scales[i]),
             "error_bound": float(r.bounds[i])}
            for i in where
        ]


