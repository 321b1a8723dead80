"""One record's point (withdrawn: kept to read old releases)."""

from __future__ import annotations

from ..coordinates import Row
from ..grammar import MAX_BOUND, SpecError
from .registry import register
from .vector import Vector


@register
class Point(Vector):
    """One record's point with noise of "radius r". Not sold: it protects a
    location up to distance r (geo-indistinguishability: two locations d apart
    have privacy loss eps * d / r, without bound), not any one record, so it
    cannot be counted in an eps budget. Kept to read the releases of listings
    made before it was withdrawn."""

    name = "point"
    offered = False
    eps_dp = False  # geo-indistinguishability: not counted in an eps budget
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


