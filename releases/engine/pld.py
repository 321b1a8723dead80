"""Privacy-loss distributions, discretised pessimistically, and their composition (docs/mathematics.md
§18): how a dataset's listings compose when its owner allows a small ``delta``.

A listing's *privacy-loss distribution* (PLD) is the law of ``L = log(p_D(y) / p_D'(y))`` for an
output ``y`` drawn under the dataset ``D``, ``D'`` its worst-case neighbour; the listing is
``(eps, delta(eps))``-DP for ``delta(eps) = E[(1 - e^{eps - L})_+]``, and independent releases
compose by adding their losses: the PLD of several listings is the convolution of theirs.

Here a PLD is kept on a grid of ``GRID`` (every loss rounded *up* to a multiple of it, which can
only raise ``delta``) with a mass at an infinite loss (counted in full in every ``delta``), as
Google's ``dp_accounting`` does with its pessimistic estimate:

* :func:`pure`: any ``eps``-DP listing (the lattice path, bit reports at their ceiling): its
  profile is at most randomised response's at ``eps`` (Kairouz, Oh and Viswanath 2015), losses
  ``+eps`` and ``-eps`` with probabilities ``e^eps / (1 + e^eps)`` and ``1 / (1 + e^eps)``, so that
  PLD stands in for it (an upper bound, tight for the worst ``eps``-DP mechanism);
* :func:`skellam`: a release on the Skellam path at time ``mu`` for a shift vector
  (``releases.engine.skellam_privacy``'s law, on the same grid).

:func:`compose` convolves; :meth:`Pld.delta` reads ``delta(eps)`` (times ``1 + SLACK`` for the
floating-point sums) and :meth:`Pld.epsilon` the least ``eps`` on a fine grid with ``delta(eps)``
at most a given ``delta``. This module never imports Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import skellam_privacy

__all__ = ["GRID", "Pld", "compose", "pure", "skellam"]

GRID = skellam_privacy.GRID
SLACK = skellam_privacy.SLACK


@dataclass(frozen=True)
class Pld:
    """Losses ``(low + j) GRID`` with probabilities ``p[j]``, and ``infinite``, the mass at an
    infinite loss."""

    low: int
    p: np.ndarray
    infinite: float

    def delta(self, eps) -> float:
        losses = (self.low + np.arange(self.p.size)) * GRID
        above = losses > float(eps)
        d = float(np.sum(self.p[above] * -np.expm1(float(eps) - losses[above]))) + self.infinite
        return min(1.0, d * (1 + SLACK))

    def epsilon(self, delta: float, step: float = 1e-3) -> float:
        """The least multiple of ``step`` whose ``delta(eps)`` is at most ``delta`` (rounded up: a
        figure shown is never below the truth); ``inf`` if the infinite mass alone exceeds it."""
        if self.infinite * (1 + SLACK) > delta:
            return math.inf
        top = (self.low + self.p.size) * GRID
        lo, hi = 0, max(1, math.ceil(top / step))
        if self.delta(0) <= delta:
            return 0.0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.delta(mid * step) <= delta:
                hi = mid
            else:
                lo = mid
        return hi * step

    def __add__(self, other: Pld) -> Pld:
        return compose(self, other)


def _cell(loss: float) -> int:
    """The grid cell a loss is rounded up to: the least ``j`` with ``j GRID >= loss`` (in floating
    point, as :meth:`Pld.delta` reads the cells back)."""
    cell = math.ceil(loss / GRID - 1e-9)  # a quotient a hair above a whole number is that number ...
    return cell if cell * GRID >= loss else cell + 1  # ... unless its cell would lie below the loss


def _law(pairs: list[tuple[float, float]]) -> Pld:
    """A PLD from ``(loss, probability)`` pairs, each loss rounded up to the grid."""
    cells = [_cell(loss) for loss, _ in pairs]
    low = min(cells)
    p = np.zeros(max(cells) - low + 1)
    for cell, (_, prob) in zip(cells, pairs):
        p[cell - low] += prob
    return Pld(low, p, 0.0)


def pure(eps) -> Pld:
    """The PLD that dominates every ``eps``-DP listing: randomised response at ``eps``."""
    e = float(Fraction(eps)) if not isinstance(eps, float) else eps
    if e <= 0:
        return Pld(0, np.ones(1), 0.0)
    up = 1 / (1 + math.exp(-e))
    return _law([(e, up), (-e, 1 - up)])


def skellam(mu, shift) -> Pld:
    """The PLD of a release on the Skellam path at time ``mu`` for the worst-case shift vector."""
    shifts = skellam_privacy.shift_pairs(shift)
    if not shifts:
        return Pld(0, np.ones(1), 0.0)
    low, p, infinite = skellam_privacy.composed_law(Fraction(mu), shifts)
    return Pld(low, p, infinite)


def compose(*plds: Pld) -> Pld:
    """The PLD of independent releases together (their losses added)."""
    if not plds:
        return Pld(0, np.ones(1), 0.0)
    out = (plds[0].low, plds[0].p, plds[0].infinite)
    for other in plds[1:]:
        out = skellam_privacy.convolve_laws(out, (other.low, other.p, other.infinite))
    return Pld(*out)


def self_compose(pld: Pld, k: int) -> Pld:
    """``k`` independent copies of ``pld`` together (repeated squaring)."""
    law = skellam_privacy.law_power((pld.low, pld.p, pld.infinite), int(k))
    return Pld(*law) if law is not None else Pld(0, np.ones(1), 0.0)
