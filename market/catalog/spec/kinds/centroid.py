"""The centroid of points (read only: unavailable for new listings)."""

from __future__ import annotations

from ..coordinates import Centroid as VectorCentroid
from ..grammar import SpecError, _number
from ..schema import _S_NUMBER
from .registry import register
from .vector import VECTOR_UNAVAILABLE, Vector


@register
class Centroid(Vector):
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


