"""The centroid of points: on the Skellam path, sums of whole grid steps with l2-calibrated noise."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import ClassVar

from releases.engine.skellam_privacy import frontier

from ..columns import NUMERIC
from ..coordinates import Centroid as VectorCentroid
from ..coordinates import GridCentroid
from ..grammar import MAX_CASES, MAX_LATTICE_UNITS, SpecError, _decimal, _number, _plain
from ..schema import _S_GRID, _S_NUMBER
from .registry import register
from .vector import Vector

#: The grids a centroid uses when the owner declares none: its radius divided by the first of these
#: whose worst cases number at most ``MAX_CASES`` (each division of a decimal by them is exact).
DEFAULT_STEPS = (20, 10, 8, 5, 4, 2, 1)
#: More steps in the radius than this are refused at once (far more worst cases than allowed, in any dimension).
MAX_STEPS = 10**4


def bound_sq(steps: Fraction, dim: int) -> int:
    """The largest whole ``N`` with ``N <= (steps + sqrt(dim) / 2)^2``: a point of the ball of radius
    ``steps`` rounded to the nearest integers moves by at most ``sqrt(dim) / 2``, so its squared
    length in steps is at most ``N``. Exact: rational arithmetic and one comparison of squares."""
    base = steps * steps + Fraction(dim, 4)

    def fits(n: int) -> bool:
        extra = n - base  # n <= base + steps sqrt(dim)
        return extra <= 0 or extra * extra <= steps * steps * dim

    n = math.floor(float(base) + float(steps) * math.sqrt(dim)) + 2
    while not fits(n):
        n -= 1
    return n


def worst_cases(stat: dict) -> tuple[int, list[tuple[int, ...]]]:
    """``(N, frontier)``: each record's squared length bound in steps (:func:`bound_sq`) and the
    worst-case shifts of the sums when one record is replaced by another (two points within ``N`` are
    at most ``4 N`` apart in squared length; ``releases.engine.skellam_privacy.frontier``).
    ValueError when there are too many to compare."""
    steps = Fraction(Decimal(repr(float(stat["radius"])))) / Fraction(Decimal(stat["grid"]))
    n = bound_sq(steps, len(stat["columns"]))
    return n, frontier(4 * n, len(stat["columns"]), most=20_000)


def _too_many(stat: dict, where: str, cases: int | None) -> str:
    found = "more than 20,000" if cases is None else f"{cases}"
    return (f"{where}: grid {stat['grid']} makes the radius {float(stat['radius']):g} "
            f"{float(Fraction(Decimal(repr(float(stat['radius'])))) / Fraction(Decimal(stat['grid']))):g} steps, "
            f"and in {len(stat['columns'])} dimensions that has {found} worst cases; at most {MAX_CASES} are allowed: "
            "use a coarser grid (a tenth or a fifth of the radius serves as well: the error hardly depends on it)")


@register
class Centroid(Vector):
    """The mean of the records' points (two or more numeric columns), each first pulled into the ball of
    radius R around the center and rounded to the grid; on the Skellam path, when the number of records
    is public. Replacing one record moves the sum of the points by at most about 2R in length, and the
    noise, calibrated to that length, does not grow with the number of columns as it would on each.

    Listings made before the relation existed have a ``min_records`` field
    (sensitivity ``2R / (min_records - 1)``); they are read, never sold again. Listings made on the
    float path have no ``grid``.
    """

    name = "centroid"
    required = ("columns", "center", "radius")
    extra_schema = {"center": {"type": "array", "items": _S_NUMBER}, "grid": _S_GRID,
                    "min_records": {"type": "integer", "minimum": 2}}
    optional = ("grid", "min_records")
    legacy_fields: ClassVar[tuple[str, ...]] = ("min_records",)
    builder_inputs: ClassVar[dict] = {"columns": "points"}

    @property
    def title(self) -> str:
        return "centroid (mean point)"

    def validate(self, item, where, columns):
        out = super().validate(item, where, columns)
        for name in out["columns"]:
            if columns[name].type not in NUMERIC:
                raise SpecError(f"{where}: column {name!r} is not numeric: a centroid's columns are numbers")
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
        if "grid" in item:
            grid = _decimal(item["grid"], where, "grid")
            if grid <= 0:
                raise SpecError(f"{where}: grid must be a positive number, got {item['grid']!r}")
            if grid > Decimal(repr(out["radius"])):
                raise SpecError(f"{where}: grid {_plain(grid)} is coarser than the radius {out['radius']:g}: "
                                "every point would round to the center")
            out["grid"] = _plain(grid)
            too_fine = Decimal(repr(out["radius"])) / grid > MAX_STEPS  # refused before any arithmetic on it
            try:
                cases = None if too_fine else worst_cases(out)[1]
            except ValueError:
                cases = None
            if cases is None or len(cases) > MAX_CASES:
                raise SpecError(_too_many(out, where, None if cases is None else len(cases)))
            return out
        radius = Decimal(repr(out["radius"]))
        for steps in DEFAULT_STEPS:
            out["grid"] = _plain(radius / steps)
            try:
                if len(worst_cases(out)[1]) <= MAX_CASES:
                    return out
            except ValueError:
                continue
        raise SpecError(f"{where}: a centroid of {len(out['columns'])} columns has too many worst cases even on "
                        "the coarsest grid: list fewer columns")  # pragma: no cover - 16 columns fit at 1 step

    def refusal(self, stat, nb):
        if "min_records" in stat:
            return "min_records belongs to listings made before the relation existed; a new centroid needs none"
        if not nb.public:
            return ("a centroid divides by the number of records, so it is sold only when that number is public "
                    "(a dataset whose relation replaces one record)")
        return None

    def describe(self, stat, nb):
        where = ", ".join(f"{c:g}" for c in stat["center"])
        text = (f"Centroid of ({', '.join(stat['columns'])}): the mean point, each record pulled within "
                f"{stat['radius']:g} of ({where})")
        if "grid" in stat:
            text += f" and rounded to a multiple of {stat['grid']} in each coordinate"
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

    # ---- on an exact integer path: sums of grid steps
    def sum_labels(self, stat) -> list[str]:
        return [f"sum({name} {'+' if c < 0 else '-'} {abs(c):g})" for name, c in zip(stat["columns"], stat["center"])]

    def grid_layout(self, stat, nb) -> dict:
        """How the centroid runs on an exact integer path: one coordinate per column, the sum over the
        records of their rounded points' steps from the center; every record's point within ``N``
        (:func:`bound_sq`) in squared steps, so replacing one moves the sums by an integer vector of
        squared length at most ``4 N``, whose undominated forms are the worst cases."""
        dim = len(stat["columns"])
        n, cases = worst_cases(stat)
        reach = math.isqrt(n) * nb.rows  # the most steps a sum can hold
        if reach > MAX_LATTICE_UNITS:
            raise SpecError(f"the centroid's sums reach {reach:,} steps of {stat['grid']}, too wide for exact "
                            f"integers (at most {MAX_LATTICE_UNITS:.0e}): use a coarser grid")
        return {
            "labels": self.sum_labels(stat),
            "grid": Decimal(stat["grid"]),
            "lower": [-reach] * dim, "upper": [reach] * dim,
            "cases": tuple(tuple((i, move) for i, move in enumerate(case) if move) for case in cases),
            "sensitivity": 2 * math.sqrt(n) * float(Decimal(stat["grid"])),
            "aggregate": GridCentroid(tuple(stat["columns"]), tuple(stat["center"]), float(stat["radius"]),
                                      Decimal(stat["grid"]), n),
        }

    def reading_labels(self, stat, where, labels):
        return [f"centroid({name})" for name in stat["columns"]]

    def curve(self, stat, where, plan, records=None):
        if plan.lattice is None:
            return super().curve(stat, where, plan, records)
        n = plan.neighbours.rows
        return {"name": self.curve_name(stat), "bound": lambda eps: plan.radius(where, eps) / n, "assumes_records": None}

    def read(self, stat, labels, where, r):
        if r.radius_at is None:  # the float path: the vector itself
            return super().read(stat, labels, where, r)
        n = r.neighbours.rows
        radius = float(r.radius_at(where, r.confidence)) / n
        return [
            {"label": f"centroid({name})", "kind": self.name, "value": float(c + r.vector[i] / n),
             "noise_scale": float(r.scales[i]) / n, "error_bound": radius}
            for name, c, i in zip(stat["columns"], stat["center"], where)
        ]
