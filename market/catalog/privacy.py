"""What a listing's releases guarantee, in figures that are exactly true
(docs/mathematics.md, "The privacy-loss profile" and "Floating point").

A release at level eps is eps-DP for the dataset's relation: for a worst-case
neighbour its privacy loss never exceeds eps. Below eps it is
(eps', delta(eps'))-DP, with ``delta`` the hockey-stick value of the actual
release: the sum of independent losses, one per coordinate that the
neighbour moves; when the plan has several incomparable worst cases (a
grouped sum under a public size moves one cell far or two cells less), the
largest of their profiles, point by point.

* Float listings (the retired float path): floating-point noise is not exactly Laplace, and its
  δ was established only for one count's first draw at a few levels, so no profile is stated
  (``FLOAT_NOT_COMPUTED``); each release's line says what is known
  (``releases.engine.guarantee.float_release_statement``).
* Lattice listings (``plan.engine == "lattice"``): coordinate ``i`` carries
  discrete Laplace noise at level ``eps / unit_weights[i]`` and the neighbour
  moves it by ``t`` whole steps (``Lattice.unit_cases``); the loss is
  discrete, and ``releases.engine.profile.LatticeProfile`` sums its exact law in
  floating point with a stated bound on the error. A law too large to sum is
  reported as not computed, never approximated.

The profile depends on the spec, the relation and the level only, never on
the data, so it is public.
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np
from django.core.cache import cache

from releases.engine.guarantee import float_release_statement, guarantee_statement
from releases.engine.profile import MAX_ATOMS, MAX_WORK, LatticeProfile, ProfileTooLarge

from .selectors import listing_plan
from .spec import LATTICE

#: eps' points on a profile chart (a cosine grid from 0 to the level, dense at both ends).
CHART_POINTS = 41
#: The eps' a profile is summarised at, as a fraction of the level.
SUMMARY_FRACTION = Fraction(1, 2)


#: eps' on a chart are exact decimals with this many places.
GRID_QUANTUM = Decimal("0.000001")


def _grid(level: Decimal, points: int = CHART_POINTS) -> list[Decimal]:
    """eps' from 0 to ``level`` as exact decimals, on a cosine grid (dense at both ends)."""
    shape = 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, points)))
    inner = [(level * Decimal(repr(float(x)))).quantize(GRID_QUANTUM) for x in shape[1:-1]]
    return [Decimal(0), *inner, level]


def _shared(parts: tuple, compute):
    """``compute()``, kept in the shared cache under a digest of ``parts`` (public inputs only)."""
    key = "profile:" + hashlib.sha256(repr(parts).encode()).hexdigest()
    found = cache.get(key)
    if found is not None:
        return found
    value = compute()
    cache.set(key, value, timeout=None)
    return value


def _rounded_up(x: float) -> str:
    """``x > 0`` rounded up to one significant digit, e.g. ``"5e-12"`` for 4.4e-12."""
    mantissa, exponent = f"{x:.15e}".split("e")
    digit, power = math.ceil(float(mantissa)), int(exponent)
    return f"1e{power + 1}" if digit == 10 else f"{digit}e{power}"


@lru_cache(maxsize=1024)
def _lattice_deltas(weights: tuple[int, ...], cases: tuple[tuple[tuple[int, int], ...], ...], level: Decimal,
                    at: tuple[float, ...]) -> tuple[tuple[float, ...] | None, str]:
    """A lattice listing's profile at ``at`` and how it was computed, or ``(None, "not computed: ...")``
    when its loss law is too large to sum (:class:`ProfileTooLarge`). Kept in this process and in the shared cache."""

    def compute() -> list:
        eps = Fraction(level)
        grid = np.array(at)
        worst, error = np.zeros(len(at)), 0.0
        try:
            for case in cases:
                prof = LatticeProfile([(t, eps / weights[i]) for i, t in case])
                worst = np.maximum(worst, prof.deltas(grid))
                error = max(error, prof.error(grid))  # the maximum of the cases is off by at most as much
        except ProfileTooLarge as exc:
            return [None, f"not computed: {exc}"]
        method = ("exact law of the integer noise's privacy loss, summed in floating point "
                  f"(absolute error below {_rounded_up(error)})")
        return [[float(d) for d in worst], method]

    # the limits are part of the key: a law refused under smaller ones is tried again under larger ones
    deltas, method = _shared((LATTICE, weights, cases, str(level), at, MAX_ATOMS, MAX_WORK), compute)
    return (None if deltas is None else tuple(deltas)), method


#: Why a float release's profile is not drawn.
FLOAT_NOT_COMPUTED = ("not computed: floating-point noise is not exactly Laplace and its δ was never established "
                      "for this release, so no δ(ε′) can be stated (the profile of exact Laplace noise would "
                      "understate it: it is 0 at ε, the float release's is not)")


def _single_count(plan) -> bool:
    """The one case whose float δ was enumerated: a plan of one count of weight 1."""
    return (plan.norm == "l1" and len(plan.labels) == 1 and plan.statistics[0]["kind"] == "count"
            and float(plan.weights[0]) == 1.0)


def _point_method(listing, level) -> str | None:
    """How the listing's noise at ``level`` was made ("initial", "relax", ...), None if not released."""
    from releases.models import NoisePoint

    return NoisePoint.objects.filter(path__listing=listing, level=level).values_list("method", flat=True).first()


def release_profile(listing, level, *, plan=None) -> dict:
    """The privacy-loss profile of ``listing``'s release at ``level``.

    ``{"level": Decimal, "method": how delta was computed ("exact", the quadrature's or the lattice
    sum's error bound, or "not computed: <why>": always for the retired float path), "points":
    [{"epsilon": Decimal, "delta": float or None}] (eps' from 0 to the level, exact decimals; None
    when not computed), "summary": {"epsilon", "delta"} (at half the level), "guarantee": one line
    on the release (pure eps-DP on the lattice; on the float path the δ enumerated for exactly this
    case, or that none has been established), "protects": whom it protects}``.
    """
    level = Decimal(level)
    half = level * Decimal(SUMMARY_FRACTION.numerator) / Decimal(SUMMARY_FRACTION.denominator)
    at = (*_grid(level), half)
    floats = tuple(float(x) for x in at)
    if listing.is_microdata:
        md = listing.microdata()
        deltas = md.deltas(level, floats)
        return {
            "level": level,
            "method": f"exact law of a record's loss over the {md.weight} bits a change can flip, summed in floating point",
            "points": [{"epsilon": x, "delta": d} for x, d in zip(at[:-1], deltas[:-1])],
            "summary": {"epsilon": half, "delta": deltas[-1]},
            "guarantee": guarantee_statement("bits"),
            "protects": listing.dataset.protects,
        }
    plan = plan or listing_plan(listing)
    if plan.engine == LATTICE:
        deltas, method = _lattice_deltas(plan.lattice.unit_weights, plan.lattice.unit_cases, level, floats)
        deltas = deltas or (None,) * len(at)
        guarantee = guarantee_statement(plan.engine, len(plan.labels))
    else:  # the retired float path: its δ was never established, so no δ(ε′) is drawn, not even 0 at ε
        deltas = (None,) * len(at)
        method = FLOAT_NOT_COMPUTED
        guarantee = float_release_statement(level, method=_point_method(listing, level), single_count=_single_count(plan))
    return {
        "level": level,
        "method": method,
        "points": [{"epsilon": x, "delta": d} for x, d in zip(at[:-1], deltas[:-1])],
        "summary": {"epsilon": half, "delta": deltas[-1]},
        "guarantee": guarantee,
        "protects": listing.dataset.protects,
    }


def profile_chart(profiles: list[dict]) -> dict | None:
    """delta(eps') against eps' for each released level, as a chart's series (market/web/svg.py draws them)."""
    if not profiles:
        return None
    return {
        "x_title": "ε′",
        "y_title": "δ(ε′): the release is (ε′, δ)-DP",
        "series": [
            {
                "x": [float(p["epsilon"]) for p in profile["points"]],
                "y": [p["delta"] for p in profile["points"]],
                "name": f"released at ε {profile['level'].normalize():f}",
            }
            for profile in profiles
        ],
    }
