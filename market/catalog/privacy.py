"""What a listing's releases guarantee, in figures that are exactly true
(docs/mathematics.md, "The privacy-loss profile" and "Floating point").

A release at level eps is eps-DP for the dataset's relation: for a worst-case
neighbour its privacy loss never exceeds eps. Below eps it is
(eps', delta(eps'))-DP, with ``delta`` the hockey-stick value of the actual
release: the sum of independent Laplace losses, one per coordinate that the
neighbour moves, each with parameter ``share * eps`` (``Plan.loss_cases``);
when the plan has several incomparable worst cases (a grouped sum under a
public size moves one cell far or two cells less), the largest of their
profiles, point by point.
``releases.profile`` computes it exactly for l1 listings and by a quadrature
of stated accuracy for l2 ones. The profile depends on the spec, the relation
and the level only, never on the data, so it is public.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np
from django.core.cache import cache

from releases.guarantee import float_path_statement
from releases.profile import loss_profile_l1, loss_profile_l2

from .selectors import listing_plan

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


@lru_cache(maxsize=1024)
def _deltas(norm: str, cases: tuple[tuple[Fraction, ...], ...] | None, dim: int, level: Decimal, at: tuple[float, ...]) -> tuple:
    """The profile at ``at``, kept in this process and in the shared cache: it depends on public
    inputs only, and a listing of 40 values of two sizes takes about a third of a second."""
    key = "profile:" + hashlib.sha256(repr((norm, cases, dim, str(level), at)).encode()).hexdigest()
    found = cache.get(key)
    if found is not None:
        return tuple(found)
    if norm == "l2":
        deltas = tuple(float(d) for d in loss_profile_l2(dim, Fraction(level), np.array(at)))
    else:
        worst = np.zeros(len(at))
        for shares in cases:  # the profile of each worst case; the release's is their maximum
            a = [share * Fraction(level) for share in shares]
            worst = np.maximum(worst, np.array([float(d) for d in loss_profile_l1(a, np.array(at))]))
        deltas = tuple(float(d) for d in worst)
    cache.set(key, list(deltas), timeout=None)
    return deltas


def release_profile(listing, level, *, plan=None) -> dict:
    """The privacy-loss profile of ``listing``'s release at ``level``.

    ``{"level": Decimal, "method": "exact" | "quadrature (absolute error below 1e-10)",
    "points": [{"epsilon": Decimal, "delta": float}] (eps' from 0 to the level, exact decimals),
    "summary": {"epsilon", "delta"} (at half the level), "guarantee": one line on the float path,
    "protects": whom it protects}``.
    """
    plan = plan or listing_plan(listing)
    level = Decimal(level)
    half = level * Decimal(SUMMARY_FRACTION.numerator) / Decimal(SUMMARY_FRACTION.denominator)
    at = (*_grid(level), half)
    deltas = _deltas(plan.norm, plan.loss_cases, len(plan.labels), level, tuple(float(x) for x in at))
    return {
        "level": level,
        "method": "exact" if plan.norm == "l1" else "quadrature (absolute error below 1e-10)",
        "points": [{"epsilon": x, "delta": d} for x, d in zip(at[:-1], deltas[:-1])],
        "summary": {"epsilon": half, "delta": deltas[-1]},
        "guarantee": float_path_statement(len(plan.labels)),
        "protects": listing.dataset.protects,
    }


def profile_chart(profiles: list[dict]) -> dict | None:
    """delta(eps') against eps' for each released level, as a plotly spec."""
    if not profiles:
        return None
    return {
        "data": [
            {
                "x": [float(p["epsilon"]) for p in profile["points"]],
                "y": [p["delta"] for p in profile["points"]],
                "type": "scatter", "mode": "lines", "name": f"released at ε = {profile['level'].normalize()}",
            }
            for profile in profiles
        ],
        "layout": {
            "xaxis": {"title": {"text": "ε′"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "δ(ε′): the release is (ε′, δ)-DP"}, "rangemode": "tozero"},
        },
    }
