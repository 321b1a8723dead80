"""What every kind of statistic has: :class:`Kind`, and the :class:`Reading` it reads back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from ..grammar import _condition_text, _shown
from ..stability import Group, Neighbours



class PlanView(Protocol):
    """What a kind reads of a laid-out plan (``market.catalog.spec.plan.Plan`` is one): the
    statistics, where each one's values are, their labels, the relation, the lattice layout (None
    off the lattice) and each value's error bound at a level. A protocol, so that the kinds need
    not import the plan module, which imports them."""

    statistics: tuple
    indices: tuple
    labels: tuple
    neighbours: Neighbours
    lattice: object

    def bound(self, i: int, eps, confidence: float = 0.95) -> float: ...

    def radius(self, where, eps, confidence: float = 0.95) -> float: ...

    def mean_error(self, i: int, eps) -> float: ...

@dataclass(frozen=True)
class Reading:
    """What :func:`present` hands a kind: the released vector, each
    coordinate's noise scale and error bound, and the confidence; ``half``: each
    coordinate's bound at confidence ``1 - (1 - confidence) / 2`` (for a
    derived value such as a mean that reads two); ``integral``: per coordinate,
    whether its values are whole numbers (a lattice count, or a sum on an
    integer grid), read back as ints."""

    vector: np.ndarray
    scales: np.ndarray
    bounds: np.ndarray
    confidence: float
    neighbours: Neighbours
    half: np.ndarray | None = None
    integral: np.ndarray | None = None
    #: ``bound_at(i, confidence)``: coordinate ``i``'s error bound at any confidence (by its engine's tails)
    bound_at: object = None
    #: ``radius_at(where, confidence)``: the error radius of the values at ``where`` together (a vector
    #: statistic on an exact l2 path); None elsewhere
    radius_at: object = None

    def value(self, i: int):
        x = self.vector[i]
        return int(round(x)) if self.integral is not None and self.integral[i] else float(x)


def _scope_text(stat: dict) -> str:
    """The filter and group-by of a statistic in words ("" without them)."""
    text = ""
    if stat.get("where"):
        text += ", where " + " and ".join(_condition_text(c) for c in stat["where"])
    if "categories" in stat:
        text += f", by {stat['by']} ({', '.join(_shown(v) for v in stat['categories'])}, and other)"
    elif "by" in stat:
        text += f", by {stat['by']} per {stat['bin']} from {stat['from']} to {stat['to']} (and other)"
    return text


class Kind(ABC):
    """One kind of statistic. Subclasses set ``name`` and implement
    :meth:`validate`, :meth:`groups`, :meth:`describe` and :meth:`schema`, and
    may override :meth:`read` and :meth:`curve`; :meth:`refusal` says why the
    kind is not sold under a relation (None when it is)."""

    name: ClassVar[str]
    #: a vector statistic is listed on its own and released with l2 noise
    vector: ClassVar[bool] = False
    #: whether a new listing may offer it (the point is withdrawn; microdata is a listing of its own)
    offered: ClassVar[bool] = True
    #: listed on its own (a vector statistic, synthetic data)
    alone: ClassVar[bool] = False
    #: offered by the statistics builder (synthetic data has its own columns, in the API and the CLI)
    in_builder: ClassVar[bool] = True
    #: a release is read as synthetic rows (``market.catalog.synthetic``)
    sells_rows: ClassVar[bool] = False
    #: fields only stored listings have: the builder offers no input for them
    legacy_fields: ClassVar[tuple[str, ...]] = ()
    #: the builder's row input for each field whose name another kind reads from another input
    builder_inputs: ClassVar[dict] = {}
    #: whether its releases are eps-DP for one record, so that a listing offering it counts in its
    #: dataset's eps budget (``Listing.counted_in_budget``); the withdrawn point kind is not
    eps_dp: ClassVar[bool] = True

    @property
    def title(self) -> str:
        """The kind as pages name it (the builder's choice of kind); by default its name."""
        return self.name

    @abstractmethod
    def validate(self, item: dict, where: str, columns) -> dict:
        """The normalised statistic, or SpecError naming what is wrong. ``columns``
        maps each name to its :class:`~market.catalog.columns.Column`."""

    def refusal(self, stat: dict, nb: Neighbours) -> str | None:
        return None

    @abstractmethod
    def groups(self, stat: dict, number: int, nb: Neighbours, columns, lattice: bool = False) -> tuple[Group, ...]:
        """The groups of coordinates the statistic reads, in the order :meth:`read` expects them
        (``lattice``: laid out in grid steps for the exact lattice path)."""

    @classmethod
    @abstractmethod
    def schema(cls) -> dict:
        """The JSON schema of the statistic as sent."""

    def curve_name(self, stat: dict) -> str:
        return f"{self.name} of {stat['column']}"

    @abstractmethod
    def describe(self, stat: dict, nb: Neighbours) -> str:
        """The statistic in words, as listing pages show it."""

    def statistic_name(self, stat: dict, where: tuple[int, ...], labels: tuple[str, ...]) -> str:
        """A short name for the statistic as a buyer targets it: its value's label when it reads
        one coordinate ("count | sex = female"), else its curve's name."""
        return labels[where[0]] if len(where) == 1 else self.curve_name(stat)

    def reading_labels(self, stat: dict, where: tuple[int, ...], labels: tuple[str, ...]) -> list[str]:
        """The labels of the readings :meth:`read` gives (what a buyer sees in a release), in order;
        by default one per coordinate the statistic reads."""
        return [labels[i] for i in where]

    def curve(self, stat: dict, where: tuple[int, ...], plan: PlanView, records: int | None = None) -> dict | None:
        """The 95% error bound against eps, ``{"name", "bound": f(eps), "assumes_records"}`` (one
        curve per statistic: every coordinate it reads has the same weight; eps
        a Decimal or a decimal string), or None when it cannot be stated from
        public information. ``records``: an assumed number of records, for a bound that
        depends on a private count (a mean's); the curve then says so in ``assumes_records``
        (None when it assumes nothing)."""
        i = where[0]
        return {"name": self.curve_name(stat), "bound": lambda eps: plan.bound(i, eps), "assumes_records": None}

    def curves(self, stat: dict, where: tuple[int, ...], plan: PlanView, records: int | None = None) -> list[dict]:
        """Every figure a buyer is quoted for the statistic: its :meth:`curve` (none when it has none); a
        kind with several (synthetic data: one per table) gives each its own ``labels``."""
        found = self.curve(stat, where, plan, records)
        return [] if found is None else [found]

    def read(self, stat: dict, labels: list[str], where: tuple[int, ...], r: Reading) -> list[dict]:
        """One reading per coordinate the statistic reads (the default)."""
        return [
            {
                "label": labels[i],
                "kind": self.name,
                "value": r.value(i),
                "noise_scale": float(r.scales[i]),
                "error_bound": float(r.bounds[i]),
            }
            for i in where
        ]


