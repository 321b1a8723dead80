"""The protocol every release mechanism follows, and what the mechanisms share.

A mechanism is one object that carries together everything the marketplace needs to
know about one way of releasing a listing's values, as OpenDP's measurements carry
their function, stability and privacy map together: its name and the words shown for
it, which levels it can sell, how it samples a level from the levels already released,
what a release looks like, its error bound at a level (accuracy before purchase), its
privacy-loss profile, and how its true answer and noise are stored (the codecs). It is
a thin object over the mathematics of ``releases.engine``: every figure is computed by
the module it names (``lattice``, ``path``, ``mechanism``, ``bitreport``, ``profile``,
``guarantee``, ``postprocess``). Pure: no Django, no database.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, ClassVar, Protocol, Sequence, runtime_checkable

import numpy as np

#: A lazy read the caller provides (only the mechanisms that need it call it).
Lazy = Callable[[], object]


def level_text(level) -> str:
    """A level for people: exact, without trailing zeros or an exponent (as ``market.core.levels.level_text``)."""
    number = Decimal(str(level))
    return f"{number.normalize():f}" if number else "0"


@dataclass(frozen=True)
class Refusal:
    """Why a level cannot be sold: ``message`` (a sentence, lower case, for the error), ``hint``
    (what the level's form field says) and ``impossible`` (why a release paid for it cannot be made)."""

    message: str
    hint: str
    impossible: str


@dataclass(frozen=True)
class Codec:
    """How a mechanism's vectors are stored before encryption: ``encode`` turns values into the
    bytes that are sealed; ``decode`` turns opened bytes back (ValueError when they do not fit)."""

    name: str
    dtype: str | None = None

    def encode(self, values) -> bytes:
        return np.ascontiguousarray(values, dtype=self.dtype).tobytes()

    def decode(self, raw: bytes, shape=None) -> np.ndarray:
        if len(raw) % 8:
            raise ValueError(f"stored value is not {self.name}")
        return np.frombuffer(raw, dtype=self.dtype).copy()


class Packed(Codec):
    """Bits packed along each row (``releases.engine.bitreport``): ``decode`` needs the shape."""

    def __init__(self, name: str, pack, unpack):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", None)
        object.__setattr__(self, "_pack", pack)
        object.__setattr__(self, "_unpack", unpack)

    def encode(self, values) -> bytes:
        return self._pack(values)

    def decode(self, raw: bytes, shape=None) -> np.ndarray:
        return self._unpack(raw, shape)


#: float64, little-endian: the float paths' answers and noise.
FLOATS = Codec("a float64 vector", "<f8")
#: int64, little-endian: the lattice path's answers (grid steps) and noise.
INTS = Codec("an int64 vector", "<i8")


@runtime_checkable
class Mechanism(Protocol):
    """One release mechanism (see the module's docstring).

    Attributes: ``name`` (what ``Listing.mechanism`` and ``NoisePath.mechanism`` store),
    ``label`` (its words in forms and the admin), ``engine`` and ``norm`` (the older two columns it
    replaces, still shown in the owner's dashboard as ``engine``), ``store`` (how its path is kept:
    ``"steps"``: one point per level, each a step from its released neighbours; ``"jumps"``: a jump
    list from the ceiling down; ``"ladder"``: the levels of a ladder, sampled from its top down),
    ``source`` (its randomness: ``"bits"``, whole random bits; ``"floats"``, floating-point
    uniforms), ``answer`` and ``noise`` (the codecs of what it stores), ``sells_records`` (it
    releases every record rather than statistics: microdata), ``no_risk_reason`` (why the paper's
    privacy at risk does not describe it; None when it does), ``gamma_applies`` and ``on_grid``
    (its values are whole numbers of grid steps: a plan laid out for it keeps each statistic's grid
    and an integer layout, ``market.catalog.spec.plan.build_plan``), ``shares_budget`` (each group of
    values gets an equal share of eps, its weight the number of groups times its sensitivity; else
    the weight is the sensitivity alone and the calibration composes the groups), ``states_delta``
    (its listings are ``(eps, delta)``-DP with a delta of their own, on datasets with a delta only).
    """

    name: str
    label: str
    engine: str
    norm: str
    store: str
    source: str
    answer: Codec | None
    noise: Codec | None
    sells_records: bool
    no_risk_reason: str | None
    gamma_applies: bool
    on_grid: bool
    shares_budget: bool
    states_delta: bool

    def bound(self, plan: dict | None) -> Mechanism:
        """This mechanism as it runs one listing, from its stored ``plan`` (a mechanism calibrated per
        listing, the Skellam path, carries its calibration; the others are the same for every listing)."""

    def calibration_for(self, *, ceiling, delta, unit_cases, unit_weights) -> dict | None:
        """What a new listing stores of its calibration (``plan["calibration"]``), computed from public
        inputs only: its ``delta`` and worst cases; None for a mechanism that needs none."""

    def value_bound(self, layout, i: int, level, confidence: float) -> float | None:
        """Value ``i``'s ``confidence`` error bound at ``level`` in its units, from the plan's integer
        layout (``layout``: ``Lattice``), when its noise is not the lattice's (None: the lattice's tails)."""

    #: whether it carries a vector statistic (a centroid) on whole grid steps, calibrated to the l2
    #: size of a record's change, with an error radius (:meth:`value_radius`)
    carries_vectors: bool

    def value_mean_error(self, layout, i: int, level) -> float | None:
        """Value ``i``'s expected absolute error ``E|noise|`` at ``level`` in its units (None: the
        mechanism states none)."""

    def value_variance(self, layout, i: int, level) -> float | None:
        """Value ``i``'s noise variance at ``level`` in its units squared (None: the mechanism states none)."""

    def value_radius(self, layout, where: tuple, level, confidence: float) -> float | None:
        """The ``confidence`` error radius (Euclidean) of the values at ``where`` together at ``level``, in
        their units, for a vector statistic on an exact l2 path (None: the mechanism states none)."""

    def ladder(self) -> list | None:
        """The levels a listing calibrated per level sells (None: any level up to its ceiling, or, for
        microdata, its spec's ladder)."""

    def top_law(self, plan: dict):
        """The exact privacy-loss distribution (``releases.engine.pld.Pld``) of a listing's release at
        its ceiling, for composing a dataset's listings; None: it is pure eps-DP at its ceiling."""

    def words(self) -> str:
        """The noise its releases carry, in plain words for the listing's pages."""

    def guarantee(self, values: int) -> str:
        """One line on what a release guarantees, for a listing of ``values`` numbers."""

    def refusal(self, level: Decimal, *, released: Lazy, ladder: Lazy) -> Refusal | None:
        """None if ``level`` can be sold, else why. ``released()``: the levels released on the
        listing's path and their maximum; ``ladder()``: the listing's ladder (microdata)."""

    def level_sold(self, level: Decimal, *, ladder: Lazy, ceiling: Decimal) -> Decimal:
        """The level actually sold for a level found by accuracy (rounded up to what it sells)."""

    def next_level(self, held: Decimal, cap: Decimal, *, ladder: Lazy) -> Decimal | None:
        """The next level up a buyer holding ``held`` is offered (at most ``cap``)."""

    def gain(self, held: Decimal, target: Decimal, now: float, then: float) -> float:
        """How much more accurate ``target`` is than ``held`` (``now`` / ``then``: their bounds)."""

    def scales(self, level, weights, grids) -> np.ndarray:
        """The noise scale of each released value at ``level``, in the value's units."""

    def accuracy(self, level, *, labels: Sequence[str], scales, plan: Lazy, records: Lazy) -> list[dict]:
        """Per released value at ``level``: ``{"label", "noise_scale", "error_bound"}`` (95%)."""

    def profile(self, level, at: tuple, *, plan: Lazy, records: Lazy, cached, point_method: Lazy) -> tuple:
        """``(deltas, method, guarantee)``: ``delta(eps')`` at each of ``at`` (None when not
        computed), how, and the release's guarantee line. ``cached(parts, compute)`` keeps a
        figure that depends on public inputs only."""

    def intact(self, answer: np.ndarray, *, dim: int, weights, grids) -> bool:
        """Whether a stored answer fits the listing's stored layout."""

    def step(self, level, *, dim: int, weights, rng, below=None, above=None) -> tuple[np.ndarray, str]:
        """The noise at a new ``level`` from its nearest released neighbours ``below`` and
        ``above`` (``(level, noise)`` or None): ``(noise, method)``."""

    def values(self, answer: np.ndarray, noise: np.ndarray, *, level, weights, lower, upper, grids) -> list:
        """The released values: the true answer plus the noise, post-processed."""

    def layout(self, *, labels, upper) -> dict | None:
        """The plan layout of a listing whose plan is implied by its records (None: read the stored one)."""


class Base:
    """Defaults the mechanisms share: every level of the ceiling is sold, doubling is the next
    step up, a bound falls like 1/eps, and nothing about records."""

    name: ClassVar[str]
    label: ClassVar[str]
    engine: ClassVar[str]
    norm: ClassVar[str] = "l1"
    store: ClassVar[str] = "steps"
    source: ClassVar[str] = "bits"
    answer: ClassVar[Codec | None] = None
    noise: ClassVar[Codec | None] = None
    sells_records: ClassVar[bool] = False
    no_risk_reason: ClassVar[str | None] = None
    gamma_applies: ClassVar[bool] = True
    on_grid: ClassVar[bool] = False
    shares_budget: ClassVar[bool] = True
    states_delta: ClassVar[bool] = False
    carries_vectors: ClassVar[bool] = False

    def bound(self, plan: dict | None) -> Base:
        return self

    def calibration_for(self, *, ceiling, delta, unit_cases, unit_weights) -> dict | None:
        return None

    def ladder(self) -> list | None:
        return None

    def value_bound(self, layout, i: int, level, confidence: float) -> float | None:
        return None

    def value_radius(self, layout, where: tuple, level, confidence: float) -> float | None:
        return None

    def value_mean_error(self, layout, i: int, level) -> float | None:
        return None

    def value_variance(self, layout, i: int, level) -> float | None:
        return None

    def top_law(self, plan: dict):
        return None

    def __repr__(self) -> str:
        return f"<mechanism {self.name}>"

    def refusal(self, level, *, released, ladder) -> Refusal | None:
        return None

    def level_sold(self, level, *, ladder, ceiling):
        return level

    def next_level(self, held, cap, *, ladder):
        return min(cap, held * 2)

    def gain(self, held, target, now, then) -> float:
        return float(target / held)

    def scales(self, level, weights, grids) -> np.ndarray:
        return np.asarray(weights, dtype=np.float64) / float(level)

    def accuracy(self, level, *, labels, scales, plan, records) -> list[dict]:
        found = plan()
        return [{"label": label, "noise_scale": float(b), "error_bound": found.bound(i, level)}
                for i, (label, b) in enumerate(zip(labels, scales))]

    def intact(self, answer, *, dim, weights, grids) -> bool:
        return len(weights) == dim and bool(np.isfinite(answer).all())

    def layout(self, *, labels, upper) -> dict | None:
        return None
