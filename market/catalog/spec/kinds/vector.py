"""What a vector statistic (on several columns at once, l2 noise) has in common."""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

from ..grammar import MAX_VECTOR_DIM, SpecError, _fields, _number, named_column
from ..schema import _S_NAME, _S_NUMBER, _object
from ..stability import Neighbours
from .base import Kind


class Vector(Kind):
    """A statistic on several columns at once, released alone with l2 noise
    (docs/mathematics.md section 6)."""

    vector = True
    optional: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()
    extra_schema: ClassVar[dict] = {}

    def validate(self, item, where, columns):
        _fields(item, where, self.required, self.optional)
        names = item["columns"]
        if not isinstance(names, (list, tuple)) or not 2 <= len(names) <= MAX_VECTOR_DIM:
            raise SpecError(f"{where}: columns must list 2 to {MAX_VECTOR_DIM} column names")
        for name in names:
            named_column({"column": name}, where, columns)
        if len(set(names)) != len(names):
            raise SpecError(f"{where}: a column is listed twice")
        radius = _number(item["radius"], where, "radius")
        if radius <= 0:
            raise SpecError(f"{where}: radius must be positive")
        return {"kind": self.name, "columns": list(names), "radius": radius}

    def groups(self, stat, number, nb, columns, lattice=False):
        """None: a vector statistic is laid out whole by :meth:`layout`, with l2 noise."""
        return ()

    @classmethod
    def schema(cls):
        properties = {"columns": {"type": "array", "items": _S_NAME, "minItems": 2, "maxItems": MAX_VECTOR_DIM},
                      "radius": _S_NUMBER, **cls.extra_schema}
        return _object(cls.name, properties, cls.required, cls.__doc__.split("\n\n")[0].replace("\n    ", " "))

    @abstractmethod
    def layout(self, stat: dict, nb: Neighbours) -> tuple[float, list[float], list[float]]:
        """(l2 sensitivity, declared lower, declared upper) of the vector."""

    @abstractmethod
    def aggregate(self, stat: dict):
        """What the vector is on the data (``compute.Centroid`` or ``compute.Row``)."""

    def curve_name(self, stat):
        return f"error radius of the {self.name}"

    def curve(self, stat, where, plan, records=None):
        dim, w = len(where), float(plan.weights[where[0]])
        return {"name": self.curve_name(stat), "bound": lambda eps: l2_error_radius(dim, w / float(eps)),
                "assumes_records": None}

    def read(self, stat, labels, where, r):
        # one radius bounds the whole vector's Euclidean error, hence each coordinate's
        radius = l2_error_radius(len(where), float(r.scales[where[0]]), r.confidence)
        return [
            {"label": labels[i], "kind": self.name, "value": float(r.vector[i]),
             "noise_scale": float(r.scales[i]), "error_bound": radius}
            for i in where
        ]


def l2_error_radius(dim: int, scale: float, confidence: float = 0.95) -> float:
    """A radius holding the released point's error with probability ``confidence``:
    the l2 noise's norm is Gamma(dim, scale); rounding each coordinate to the grid
    adds at most half a step per coordinate."""
    from scipy.stats import gamma

    from releases.engine.postprocess import grid_step

    return float(gamma.ppf(confidence, dim, scale=scale)) + math.sqrt(dim) * grid_step(scale) / 2.0


