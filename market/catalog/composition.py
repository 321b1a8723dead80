"""How a dataset with a delta composes its listings (docs/mathematics.md §18).

A dataset without a delta (``Dataset.delta_budget`` null) keeps the sum rule: its counted listings'
totals add up to at most its budget eps_D (``market.catalog.budget``), and it takes pure eps-DP
listings only. A dataset with a delta ``delta_D`` composes its counted listings by privacy-loss
distributions (``releases.engine.pld``): all of them together, each at its ceiling, must be
``(eps_D, delta_D)``-DP. A pure listing (the lattice path; bit reports) stands in as randomised
response at its total; a Skellam listing brings the exact law of its worst case at its ceiling's
calibrated time, and its size release (pure) beside it. The services check this under the
dataset's lock when a listing is created, reopened or its dataset's budget lowered; the database
keeps the part it can state (each listing within eps_D: ``market.catalog.triggers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from releases.engine import pld
from releases.engine import skellam_privacy as sp
from releases.engine.mechanisms import mechanism as mechanism_named


@dataclass(frozen=True)
class Composed:
    """What a dataset's listings spend together: ``delta`` at the dataset's eps (rounded up),
    ``epsilon`` at its delta (the least eps, rounded up to 0.001), and whether they fit."""

    delta: Decimal
    epsilon: Decimal | None
    fits: bool

    @property
    def delta_text(self) -> str:
        """``delta`` for people: ``"3.1e-7"``, or ``"0"``."""
        return delta_text(self.delta)

    @property
    def epsilon_text(self) -> str | None:
        return None if self.epsilon is None else f"{self.epsilon.normalize():f}"


def delta_text(value: Decimal | None) -> str | None:
    """A delta as text: ``"1e-9"``, ``"2.5e-7"``, ``"0"`` (None stays None)."""
    if value is None:
        return None
    if value == 0:
        return "0"
    return f"{value.normalize():E}".replace("E", "e").replace("e+", "e")


def listing_pld(*, mechanism, plan: dict, total, size_level) -> pld.Pld:
    """The PLD that stands in for one listing at its ceiling: its mechanism's exact law at the top
    (``top_law``) beside its size release (pure at ``size_level``), else pure at ``total`` (ceiling
    plus size release)."""
    law = mechanism_named(mechanism).top_law(plan)
    if law is None:
        return pld.pure(Fraction(Decimal(str(total))))
    if Decimal(str(size_level)) > 0:
        law = pld.compose(law, pld.pure(Fraction(Decimal(str(size_level)))))
    return law


def _rounded_up(value: float, places: int) -> Decimal:
    return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING)


def composed(plds: list[pld.Pld], *, eps, delta) -> Composed:
    """The composition of ``plds`` against the budget ``(eps, delta)``."""
    together = pld.compose(*plds)
    spent = together.delta(float(Decimal(str(eps))))
    found = together.epsilon(float(Decimal(str(delta))))
    return Composed(delta=sp.shown(spent) if spent > 0 else Decimal(0),
                    epsilon=None if found == float("inf") else _rounded_up(found, 3),
                    fits=spent <= float(Decimal(str(delta))))


def dataset_plds(listings) -> list[pld.Pld]:
    """The PLDs of a dataset's counted listings (rows with ``mechanism``, ``plan``, ``ceiling``, ``size_level``)."""
    return [listing_pld(mechanism=row.mechanism, plan=row.plan, total=row.ceiling + row.size_level,
                        size_level=row.size_level) for row in listings]


def fits_how_many(plds: list[pld.Pld], candidate: pld.Pld, *, eps, delta, limit: int = 200) -> int:
    """How many more listings like ``candidate`` fit beside ``plds`` within ``(eps, delta)`` (at most ``limit``)."""
    base = pld.compose(*plds) if plds else pld.Pld(0, pld.np.ones(1), 0.0)
    eps_f, delta_f = float(Decimal(str(eps))), float(Decimal(str(delta)))
    count, current = 0, base
    while count < limit:
        nxt = pld.compose(current, candidate)
        if nxt.delta(eps_f) > delta_f:
            break
        count, current = count + 1, nxt
    return count
