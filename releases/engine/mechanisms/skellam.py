"""The exact Skellam path (docs/mathematics.md §17): Gaussian-like integer noise, ``(eps, delta)``-DP,
calibrated to the l2 size of a neighbour's change.

The answer is in whole grid steps, as on the lattice path. Coordinate ``i`` carries Skellam noise
``N_A - N_B`` at time ``mu(eps) w_i^2`` (``releases.engine.skellam``): ``w_i`` its group's
sensitivity in steps, ``mu(eps)`` the least grid time whose release meets the listing's ``delta``
at ``eps`` for every worst case (``releases.engine.skellam_privacy.calibrate``). The calibration
is computed once, when the listing is made, for each level of its ladder, and stored with its plan
(``{"delta", "levels", "times"}``): the mechanism bound to a listing (:meth:`Skellam.bound`) carries
it, as an OpenDP measurement carries its privacy map. A listing sells the levels of its ladder
only: any other level would need a calibration of its own, too slow to run while a buyer waits.

Its noise is stored as the pair of counts ``(N_A, N_B)`` of each coordinate (:data:`PAIRS`): the
path moves between times by the counting processes' own laws, which is what makes any set of
releases cost what the least noisy one costs.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from fractions import Fraction

import numpy as np

from .. import skellam as _skellam
from .. import skellam_privacy as sp
from .base import INTS, Base, Codec, Refusal, level_text
from .exact import grid_amounts

#: The fractions of the ceiling a Skellam listing's ladder sells (each rounded down to 4 places).
LADDER = (Fraction(1, 16), Fraction(3, 32), Fraction(1, 8), Fraction(3, 16), Fraction(1, 4), Fraction(3, 8),
          Fraction(1, 2), Fraction(3, 4), Fraction(1))
#: The listing's delta a new Skellam listing states unless its owner gives another.
DEFAULT_DELTA = Decimal("1e-9")


class _Pairs(Codec):
    """The pair of counts ``(N_A, N_B)`` of each coordinate, int64 little-endian, row by row."""

    def encode(self, values) -> bytes:
        arr = np.ascontiguousarray(values, dtype="<i8")
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError("Skellam noise is a (coordinates, 2) array of counts")
        return arr.tobytes()

    def decode(self, raw: bytes, shape=None) -> np.ndarray:
        if len(raw) % 16:
            raise ValueError(f"stored value is not {self.name}")
        return np.frombuffer(raw, dtype="<i8").reshape(-1, 2).copy()


PAIRS = _Pairs("pairs of int64 counts", "<i8")


def ladder_levels(ceiling) -> list[Decimal]:
    """The levels a Skellam listing with ``ceiling`` sells: :data:`LADDER` of it, 4 places, from the lowest."""
    top = Decimal(str(ceiling))
    out = []
    for share in LADDER:
        level = (top * share.numerator / share.denominator).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
        if level > 0 and level not in out:
            out.append(level)
    return out


def calibration(*, ceiling, delta, cases) -> dict:
    """The calibration a listing stores (``plan["calibration"]``): its ``delta`` and, for each level
    of its ladder, the least grid time meeting ``delta`` there for every worst case ``cases``
    (:func:`releases.engine.skellam_privacy.case_of`)."""
    levels = ladder_levels(ceiling)
    times = sp.ladder(levels, float(Decimal(str(delta))), [tuple(case) for case in cases])
    return {"delta": str(Decimal(str(delta))), "levels": [str(level) for level in levels],
            "times": [str(t) for t in times]}


def shift_cases(unit_cases, unit_weights) -> list[tuple]:
    """A plan's worst cases (``Lattice.unit_cases``) as :func:`skellam_privacy.case_of` cases."""
    return [sp.case_of(case, unit_weights) for case in unit_cases]


class Skellam(Base):
    """Gaussian-like integer noise on each value, calibrated to the l2 size of a change."""

    name = "skellam"
    engine = "skellam"
    norm = "l2"
    label = "Skellam path (Gaussian-like integer noise, (eps, delta)-DP)"
    answer = INTS
    noise = PAIRS
    on_grid = True
    shares_budget = False
    states_delta = True
    carries_vectors = True
    gamma_applies = False
    no_risk_reason = "Gaussian-like integer noise: the paper's formula is for Laplace noise"

    def __init__(self, calibrated: dict | None = None):
        self.calibrated = calibrated
        self._times = {} if calibrated is None else {
            Decimal(level): Fraction(time) for level, time in zip(calibrated["levels"], calibrated["times"])}

    def bound(self, plan: dict | None) -> Skellam:
        """This mechanism with a listing's calibration (``plan["calibration"]``)."""
        found = (plan or {}).get("calibration")
        return self if found is None or found is self.calibrated else Skellam(found)

    def calibration_for(self, *, ceiling, delta, unit_cases, unit_weights) -> dict:
        return calibration(ceiling=ceiling, delta=delta, cases=shift_cases(unit_cases, unit_weights))

    def top_law(self, plan: dict):
        """The exact loss law at its ladder's top level of the listing's one worst case, or of the
        envelope of its worst cases (``skellam_privacy.envelope``: a case dominating each of them)
        when it has several: what the listing counts as in its dataset's composition."""
        from .. import pld

        found = self.bound(plan)
        cases = shift_cases(plan["layout"]["unit_cases"], plan["weights"])
        case = cases[0] if len(cases) == 1 else sp.envelope(cases)
        return pld.Pld(*sp.case_law(found.time(found.ladder()[-1]), case))

    @property
    def delta(self) -> Decimal | None:
        return None if self.calibrated is None else Decimal(self.calibrated["delta"])

    def ladder(self) -> list[Decimal]:
        return sorted(self._times)

    def time(self, level) -> Fraction:
        """The calibrated base time of ``level`` (ValueError off the ladder, or with no calibration)."""
        try:
            return self._times[Decimal(str(level))]
        except KeyError:
            raise ValueError(f"level {level_text(level)} is not on this Skellam listing's ladder") from None

    def words(self) -> str:
        delta = "" if self.delta is None else f" δ = {self.delta:.0e}".replace("e-0", "e-")
        return ("Exact integer noise shaped like a Gaussian (the difference of two Poisson counts), "
                f"(ε, δ)-differentially private with{delta}: counts and bins are released as whole numbers, each "
                "sum as a whole number of steps of its rounding grid. Its noise grows like the square root of the number "
                "of values one record moves, so it is less than Laplace noise's when one record moves many values (from "
                "about 15 at δ = 1e-9); for fewer the lattice path is more accurate.")

    def guarantee(self, values: int) -> str:
        delta = "a small δ" if self.delta is None else f"δ = {self.delta:.0e}".replace("e-0", "e-")
        return (f"(ε, δ)-differential privacy with {delta} at each level sold, computed exactly from the privacy-loss "
                "law of the integer noise (every loss rounded up); all levels together cost what the highest costs. "
                "The noise is drawn with whole-number arithmetic from the operating system's random bits.")

    # ---- levels: the ladder
    def refusal(self, level, *, released, ladder) -> Refusal | None:
        levels = self.ladder()
        if Decimal(str(level)) in self._times:
            return None
        shown = ", ".join(level_text(at) for at in levels)
        return Refusal(f"this listing sells the levels {shown}; {level_text(level)} is not one of them",
                       f"One of {shown}.", f"level {level_text(level)} is not on the listing's ladder ({shown})")

    def level_sold(self, level, *, ladder, ceiling):
        return next((at for at in self.ladder() if at >= level), None) or ceiling

    def next_level(self, held, cap, *, ladder):
        return next((eps for eps in self.ladder() if held < eps <= cap), None)

    def gain(self, held, target, now, then) -> float:
        return now / then

    # ---- figures
    def scales(self, level, weights, grids) -> np.ndarray:
        """Each value's noise standard deviation, ``sqrt(2 mu w^2)`` steps times its grid."""
        mu = float(self.time(self.sold_at(level)))
        return (np.sqrt(2 * mu) * np.asarray(weights, dtype=np.float64)
                * np.array([float(g) for g in grids or ()]))

    def sold_at(self, level) -> Decimal:
        """The ladder level a figure at ``level`` is read at: the lowest at or above it (the top above the ladder)."""
        level = Decimal(str(level))
        ladder = self.ladder()
        return next((at for at in ladder if at >= level), ladder[-1])

    def value_bound(self, layout, i, level, confidence) -> float:
        """The exact ``confidence`` quantile of value ``i``'s Skellam noise at the ladder level sold for
        ``level`` (:meth:`sold_at`: a level off the ladder is bought as the next one up), in its units."""
        w = layout.unit_weights[i]
        steps = sp.error_bound(self.time(self.sold_at(level)) * w * w, confidence)
        return float(steps * layout.grids[i])

    def value_mean_error(self, layout, i, level) -> float:
        """``E|Z|`` of value ``i``'s Skellam noise at the ladder level sold for ``level``, in its units."""
        w = layout.unit_weights[i]
        return sp.mean_abs(self.time(self.sold_at(level)) * w * w) * float(layout.grids[i])

    def value_variance(self, layout, i, level) -> float:
        """``Var Z = 2 mu w^2`` steps of value ``i``'s Skellam noise at the ladder level sold for ``level``,
        times its grid squared."""
        w = layout.unit_weights[i]
        return float(2 * self.time(self.sold_at(level)) * w * w) * float(layout.grids[i]) ** 2

    def value_radius(self, layout, where, level, confidence) -> float:
        """The ``confidence`` quantile of the Euclidean length of the noise on the values at ``where``
        (one weight and one grid: a vector statistic), rounded up (``skellam_privacy.norm_bound``)."""
        weights = {layout.unit_weights[i] for i in where}
        grids = {layout.grids[i] for i in where}
        if len(weights) != 1 or len(grids) != 1:
            raise ValueError("an error radius is stated for values of one weight and one grid")
        w = weights.pop()
        steps = sp.norm_bound(self.time(self.sold_at(level)) * w * w, len(where), confidence)
        return float(steps * float(grids.pop()))

    def accuracy(self, level, *, labels, scales, plan, records) -> list[dict]:
        """The exact 95% quantile of each value's Skellam noise, in its units."""
        layout = plan().lattice
        return [{"label": label, "noise_scale": float(sd), "error_bound": self.value_bound(layout, i, level, 0.95)}
                for i, (label, sd) in enumerate(zip(labels, scales))]

    def profile(self, level, at, *, plan, records, cached, point_method) -> tuple:
        layout = plan().lattice
        cases = shift_cases(layout.unit_cases, layout.unit_weights)
        mu = self.time(level)
        parts = (self.name, tuple(cases), str(mu), tuple(at), sp.GRID)
        deltas = cached(parts, lambda: list(sp.profile(mu, cases, at)))
        method = ("exact law of the Skellam noise's privacy loss (every loss rounded up to a grid of 1e-4, the tails "
                  "counted as infinite losses)")
        return tuple(deltas), method, self.guarantee(len(plan().labels))

    # ---- the path
    def intact(self, answer, *, dim, weights, grids) -> bool:
        return len(weights) == dim and len(grids or ()) == dim

    def step(self, level, *, dim, weights, rng, below=None, above=None):
        """The counts at ``level``: a first draw, thinned from a lower level's (more noise: ``below``),
        topped up from a higher level's (``above``: less noise), or bridged between the two. Each
        weight's coordinates move at their own time ``mu w^2`` (the thinning's and the bridge's
        probabilities are the same for all of them)."""
        mu = self.time(level)
        w = np.asarray(weights, dtype=np.int64)
        if w.shape != (dim,):
            raise ValueError("one weight per coordinate")
        out = np.zeros((dim, 2), dtype=np.int64)
        for weight in np.unique(w):
            at = np.flatnonzero(w == weight)
            square = int(weight) * int(weight)
            here = mu * square
            lower = None if above is None else tuple(above[1][at].T)  # the higher level: a smaller time
            upper = None if below is None else tuple(below[1][at].T)
            if lower is not None and upper is not None:
                a, b = _skellam.bridge(lower, self.time(above[0]) * square, upper, self.time(below[0]) * square,
                                       here, rng)
            elif upper is not None:
                a, b = _skellam.relax(upper, self.time(below[0]) * square, here, rng)
            elif lower is not None:
                a, b = _skellam.tighten(lower, self.time(above[0]) * square, here, rng)
            else:
                a, b = _skellam.sample(here, at.size, rng)
            out[at, 0], out[at, 1] = a, b
        method = ("bridge" if below is not None and above is not None else "relax" if below is not None
                  else "tighten" if above is not None else "initial")
        return out, method  # the names the lattice path stores: its steps move the same way

    def values(self, answer, noise, *, level, weights, lower, upper, grids) -> list:
        return grid_amounts(answer, _skellam.noise((noise[:, 0], noise[:, 1])), lower, upper, grids)
