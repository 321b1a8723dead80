"""Price curves (docs/mathematics.md section 8).

A curve gives P(eps), the price of the whole path up to eps, in credits rounded
to the cent. A purchase from level e1 to e2 costs P(e2) - P(e1), so buying in
steps costs exactly what buying at once costs; rounding is monotone, so every
increment is >= 0. Three kinds:

* ``linear``: ``P(eps) = c * eps``;
* ``power``: ``P(eps) = c * eps^p`` with ``0 < p <= 2``. A faster-growing price
  invites arbitrage: two independent answers at ``eps/sqrt(2)`` average to the
  accuracy of one at ``eps`` and would cost ``2 P(eps/sqrt 2) = 2^(1-p/2) P(eps)``,
  less than ``P(eps)`` when ``p > 2``. Such curves are refused;
* ``compensation``: derived from the privacy-at-risk paper's cost model
  (``releases.engine.risk``): ``P(eps) = margin * E_dp(eps)``, with
  ``E_dp(eps) = E_min + E e^(-rate/eps)`` the compensation the owner must
  hold for a breach at level eps. Buyers can read every figure off the price,
  so none may reveal the number of records when the dataset keeps it private:
  there E and E_min are totals for everyone in the data. When the dataset's
  size is public, E and E_min are per person and the price multiplies them by
  that public number (``people``), never by a figure the owner types.

Curves are stored on the listing as JSON with decimal strings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from market.core.errors import InvalidInput
from market.core.fields import MONEY_QUANTUM

KINDS = ("linear", "power", "compensation")
MAX_POWER = Decimal(2)


def _number(params: dict, name: str, *, low=None, high=None, low_open=False, label=None) -> Decimal:
    label = label or name
    raw = params.get(name)
    try:
        value = Decimal(str(raw).strip())
    except (InvalidOperation, ValueError, TypeError):
        raise InvalidInput(f"{label}: {raw!r} is not a number", fields={name: ["Enter a number."]}) from None
    if not value.is_finite():
        raise InvalidInput(f"{label} must be finite", fields={name: ["Enter a finite number."]})
    if low is not None and (value < low or (low_open and value == low)):
        relation = "greater than" if low_open else "at least"
        raise InvalidInput(f"{label} must be {relation} {low}", fields={name: [f"Must be {relation} {low}."]})
    if high is not None and value > high:
        raise InvalidInput(f"{label} must be at most {high}", fields={name: [f"At most {high}."]})
    return value


@dataclass(frozen=True)
class CompensationModel:
    """The cost model of the privacy-at-risk paper (section 5):
    ``E_dp(eps) = E_min + E e^(-rate/eps)``, per person for ``people`` people
    when the dataset's size is public (then ``people`` is that size), else for
    everyone in the data together (``people`` is None)."""

    E: Decimal
    rate: Decimal = Decimal(1)
    E_min: Decimal = Decimal(0)
    people: int | None = None

    @classmethod
    def parse(cls, params: dict, *, stored: bool = False) -> "CompensationModel":
        """An owner's model (``people`` is refused: it follows from the dataset), or,
        with ``stored``, one read back from a listing (where the public size was put)."""
        if not isinstance(params, dict):
            raise InvalidInput("the compensation model must be an object", fields={"compensation": ["Give E, rate and E_min."]})
        if "people" in params and not stored:
            raise InvalidInput(
                "compensation: people is not entered: with a public size the price counts the dataset's public "
                "number of records; with a private size state E and E_min for everyone in the data together",
                fields={"people": ["Leave it out: it follows from the dataset."]},
            )
        E = _number(params, "E", low=Decimal(0), low_open=True, high=Decimal(10) ** 9, label="compensation E")
        rate = _number({"rate": params.get("rate", 1)}, "rate", low=Decimal(0), low_open=True, high=Decimal(1000), label="rate c")
        E_min = _number({"E_min": params.get("E_min", 0)}, "E_min", low=Decimal(0), high=Decimal(10) ** 9, label="E_min")
        people = None
        if "people" in params:  # stored: the dataset's public size
            people = _number(params, "people", low=Decimal(1), high=Decimal(10) ** 9, label="people")
            if people != people.to_integral_value():
                raise InvalidInput("people must be a whole number", fields={"people": ["A whole number."]})
        return cls(E=E, rate=rate, E_min=E_min, people=None if people is None else int(people))

    def per_person(self, eps) -> float:
        """``E_dp(eps)``: per person with a public size, else for everyone together."""
        eps = float(eps)
        if eps <= 0:
            return float(self.E_min)
        return float(self.E_min) + float(self.E) * math.exp(-float(self.rate) / eps)

    @property
    def headcount(self) -> int:
        """What ``E_dp`` is multiplied by: the public number of people, else 1 (E is a total)."""
        return self.people or 1

    def as_dict(self) -> dict:
        out = {"E": str(self.E), "rate": str(self.rate), "E_min": str(self.E_min)}
        if self.people is not None:
            out["people"] = self.people
        return out


@dataclass(frozen=True)
class PriceCurve:
    kind: str
    c: Decimal = Decimal(0)
    p: Decimal = Decimal(1)
    margin: Decimal = Decimal(1)
    compensation: CompensationModel | None = field(default=None)

    @classmethod
    def parse(cls, curve: dict, compensation: dict | None = None) -> "PriceCurve":
        """Validate a curve given as JSON (from a form, the API or the database)."""
        if not isinstance(curve, dict) or curve.get("kind") not in KINDS:
            raise InvalidInput(
                f"the price curve's kind must be one of {', '.join(KINDS)}", fields={"price_curve": ["Choose a kind of price curve."]}
            )
        kind = curve["kind"]
        if kind == "linear":
            return cls(kind, c=_money(_number(curve, "c", low=Decimal(0), label="price per ε")))
        if kind == "power":
            c = _money(_number(curve, "c", low=Decimal(0), label="price scale c"))
            p = _number(curve, "p", low=Decimal(0), low_open=True, label="power p")
            if p > MAX_POWER:
                raise InvalidInput(
                    f"power p = {p} is refused: a price growing faster than ε² invites arbitrage. Two independent "
                    f"answers at ε/√2 average to the accuracy of one at ε, and would cost 2^(1-p/2) = "
                    f"{2 ** (1 - float(p) / 2):.2f} times its price. Use p <= 2.",
                    fields={"p": ["At most 2: with a higher power, averaging several cheaper answers would beat buying one."]},
                )
            return cls(kind, c=c, p=p)
        margin = _number(curve, "margin", low=Decimal(0), low_open=True, high=Decimal(1000), label="margin")
        if compensation is None:
            raise InvalidInput(
                "a compensation-derived price needs the compensation model (E, rate, E_min)",
                fields={"compensation": ["State the compensation E (and rate, E_min)."]},
            )
        return cls(kind, margin=margin, compensation=CompensationModel.parse(compensation, stored=True))

    def price(self, eps) -> Decimal:
        """P(eps) in credits, rounded half-up to the cent; P(0) = 0."""
        eps = Decimal(eps)
        if eps <= 0:
            return Decimal("0.00")
        if self.kind == "linear":
            exact = self.c * eps
        elif self.kind == "power":
            exact = self.c * Decimal(repr(float(eps) ** float(self.p)))
        else:
            model = self.compensation
            exact = self.margin * model.headcount * Decimal(repr(model.per_person(eps)))
        return exact.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)

    def as_dict(self) -> dict:
        """The curve as stored and as the API shows it."""
        if self.kind == "linear":
            return {"kind": "linear", "c": str(self.c)}
        if self.kind == "power":
            return {"kind": "power", "c": str(self.c), "p": str(self.p)}
        return {"kind": "compensation", "margin": str(self.margin)}

    def formula(self) -> str:
        """The curve in words, as every page and the API show it: :func:`price_formula`."""
        return price_formula(self)


def number_text(value) -> str:
    """A figure of a formula written plainly: no exponent, no trailing zeros, thousands grouped
    (``4E+3`` -> ``4,000``, ``0.10`` -> ``0.1``, ``2.50`` -> ``2.5``)."""
    number = Decimal(value).normalize()
    return f"{number:,f}" if number else "0"


def money_text(value) -> str:
    """An amount of credits: always two places, thousands grouped (``10`` -> ``10.00``)."""
    return f"{Decimal(value).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP):,f}"


def price_formula(curve: PriceCurve) -> str:
    """``P(ε)`` in words, the one place it is written: ``P(ε) = 10.00 × ε credits``,
    ``P(ε) = 2.50 × ε^1.5 credits``, ``P(ε) = 0.1 × 4,000 × e^(−1/ε) credits`` (an ``E_min`` of 0
    is left out), ``P(ε) = 0.1 × 344 people × (5 + 40 × e^(−2/ε)) credits``."""
    if curve.kind == "linear":
        return f"P(ε) = {money_text(curve.c)} × ε credits"
    if curve.kind == "power":
        return f"P(ε) = {money_text(curve.c)} × ε^{number_text(curve.p)} credits"
    m = curve.compensation
    people = f" × {m.people:,} {'person' if m.people == 1 else 'people'}" if m.people is not None else ""
    term = f"{number_text(m.E)} × e^(−{number_text(m.rate)}/ε)"
    cost = f"({number_text(m.E_min)} + {term})" if m.E_min else term
    return f"P(ε) = {number_text(curve.margin)}{people} × {cost} credits"


def _money(value: Decimal) -> Decimal:
    if value != value.quantize(MONEY_QUANTUM):
        raise InvalidInput("prices have at most two decimal places", fields={"c": ["At most 2 decimal places."]})
    return value


def curve_of(listing) -> PriceCurve:
    return PriceCurve.parse(listing.price_curve, listing.compensation)


def price_at(listing, eps) -> Decimal:
    return curve_of(listing).price(eps)


def price_increment(listing, level_from, level_to) -> Decimal:
    curve = curve_of(listing)
    return curve.price(level_to) - curve.price(level_from)
