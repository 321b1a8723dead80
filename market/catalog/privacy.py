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
  (``releases.engine.mechanisms.FLOAT_NOT_COMPUTED``); each release's line says what is known
  (``releases.engine.guarantee.float_release_statement``).
* Lattice listings (the ``lattice`` mechanism): coordinate ``i`` carries
  discrete Laplace noise at level ``eps / unit_weights[i]`` and the neighbour
  moves it by ``t`` whole steps (``Lattice.unit_cases``); the loss is
  discrete, and ``releases.engine.profile.LatticeProfile`` sums its exact law in
  floating point with a stated bound on the error. A law too large to sum is
  reported as not computed, never approximated.

* Microdata listings (bit reports): a record's loss over the bits a change can flip.

Each is its mechanism's ``profile`` (``releases.engine.mechanisms``); this module keeps the
figures (public inputs only) in the shared cache. The profile depends on the spec, the relation
and the level only, never on the data, so it is public.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from fractions import Fraction

import numpy as np
from django.core.cache import cache

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


#: Figures kept in this process (the shared cache is read once per process and key).
_KEPT: dict = {}
_KEPT_MOST = 1024


def _kept(parts: tuple, compute):
    """``compute()`` kept in this process and in the shared cache (:func:`_shared`)."""
    if parts not in _KEPT:
        if len(_KEPT) >= _KEPT_MOST:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[parts] = _shared(parts, compute)
    return _KEPT[parts]


def _point_method(listing, level) -> str | None:
    """How the listing's noise at ``level`` was made ("initial", "relax", ...), None if not released."""
    from releases.models import NoisePoint

    return NoisePoint.objects.filter(path__listing=listing, level=level).values_list("method", flat=True).first()


def release_profile(listing, level, *, plan) -> dict:
    """The privacy-loss profile of ``listing``'s release at ``level``; ``plan``: the listing's
    laid-out plan (``market.catalog.selectors.listing_plan``), which the caller reads.

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
    deltas, method, guarantee = listing.release_mechanism.profile(
        level, floats, plan=lambda: plan, records=listing.microdata, cached=_kept,
        point_method=lambda: _point_method(listing, level),
    )
    deltas = deltas or (None,) * len(at)
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
