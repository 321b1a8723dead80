"""The exact lattice path (docs/mathematics.md section 11): integer noise, exactly eps-DP.

The answer is in whole grid steps; coordinate ``i`` carries discrete Laplace noise at level
``eps / weights[i]`` (``releases.engine.lattice``), released as ``clamp(answer + noise) * grid``.
"""

from __future__ import annotations

import math

from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .. import guarantee as _guarantee
from .. import lattice
from ..profile import MAX_ATOMS, MAX_WORK, LatticeProfile, ProfileTooLarge
from .base import INTS, Base


def rounded_up(x: float) -> str:
    """``x > 0`` rounded up to one significant digit, e.g. ``"5e-12"`` for 4.4e-12."""
    import math

    mantissa, exponent = f"{x:.15e}".split("e")
    digit, power = math.ceil(float(mantissa)), int(exponent)
    return f"1e{power + 1}" if digit == 10 else f"{digit}e{power}"


class Lattice(Base):
    """Exact integer noise on each value (``releases.engine.lattice``): every new listing."""

    name = "lattice"
    engine = "lattice"
    label = "Exact lattice path (integer noise, exactly eps-DP)"
    answer = INTS
    noise = INTS
    on_grid = True
    no_risk_reason = "exact integer noise: the paper's formula is for continuous Laplace noise"

    def words(self) -> str:
        return _guarantee.engine_words(self.engine)

    def guarantee(self, values: int) -> str:
        return _guarantee.guarantee_statement(self.engine, values)

    def value_mean_error(self, layout, i: int, level) -> float:
        """``E|Z|`` of ``DLap(a)`` steps, ``a = e^{-eps / w}``: ``2a / (1 - a^2)``, times the grid."""
        a = math.exp(-float(level) / layout.unit_weights[i])
        return 2 * a / (1 - a * a) * float(layout.grids[i])

    def value_variance(self, layout, i: int, level) -> float:
        """``Var Z`` of ``DLap(a)`` steps, ``a = e^{-eps / w}``: ``2a / (1 - a)^2``, times the grid squared."""
        a = math.exp(-float(level) / layout.unit_weights[i])
        return 2 * a / (1 - a) ** 2 * float(layout.grids[i]) ** 2

    def scales(self, level, weights, grids) -> np.ndarray:
        """``weight * grid / eps``: its discrete Laplace noise is ``DLap(e^{-eps / weight})`` steps."""
        weights = np.asarray(weights, dtype=np.float64) * np.array([float(g) for g in grids or ()])
        return weights / float(level)

    @staticmethod
    def deltas(weights, cases, level, at) -> tuple[list[float] | None, str]:
        """The profile at ``at`` of a plan whose coordinate ``i`` has unit weight ``weights[i]`` and
        whose worst cases move coordinates by ``cases`` (``Lattice.unit_cases``): the largest of the
        cases' exact laws, point by point, and how it was computed; ``(None, "not computed: ...")``
        when a law is too large to sum (``ProfileTooLarge``)."""
        eps = Fraction(Decimal(level))
        grid = np.array(at)
        worst, error = np.zeros(len(at)), 0.0
        try:
            for case in cases:
                prof = LatticeProfile([(t, eps / weights[i]) for i, t in case])
                worst = np.maximum(worst, prof.deltas(grid))
                error = max(error, prof.error(grid))  # the maximum of the cases is off by at most as much
        except ProfileTooLarge as exc:
            return None, f"not computed: {exc}"
        method = ("exact law of the integer noise's privacy loss, summed in floating point "
                  f"(absolute error below {rounded_up(error)})")
        return [float(d) for d in worst], method

    def profile(self, level, at, *, plan, records, cached, point_method) -> tuple:
        layout = plan().lattice
        weights, cases = layout.unit_weights, layout.unit_cases
        # the limits are part of the key: a law refused under smaller ones is tried again under larger ones
        parts = (self.name, weights, cases, str(level), at, MAX_ATOMS, MAX_WORK)
        deltas, method = cached(parts, lambda: list(self.deltas(weights, cases, level, at)))
        return (None if deltas is None else tuple(deltas)), method, self.guarantee(len(plan().labels))

    def intact(self, answer, *, dim, weights, grids) -> bool:
        return len(weights) == dim and len(grids or ()) == dim

    def step(self, level, *, dim, weights, rng, below=None, above=None):
        sides = {name: side for name, side in (("below", below), ("above", above)) if side is not None}
        return lattice.step(level, _lattice_weights(weights), rng, **sides)

    def values(self, answer, noise, *, level, weights, lower, upper, grids) -> list:
        """Whole steps clamped to the declared range, times each value's grid (ints on an integer grid)."""
        return grid_amounts(answer, noise, lower, upper, grids)


def _lattice_weights(weights):
    """The weights as ``lattice.step`` takes them: integer weights as one int64 array (no
    conversion one by one), others each through ``int``. A listing's weights are the same at
    every release: a list or tuple's are kept for the last few (read-only; equal weights convert
    alike, so an equal key's entry is the same answer)."""
    if isinstance(weights, (list, tuple)):
        try:
            return _lattice_weights_of(tuple(weights))
        except TypeError:  # an unhashable weight: converted as it is (lattice.step refuses it)
            pass
    return _converted_weights(weights)


@lru_cache(maxsize=64)
def _lattice_weights_of(weights: tuple):
    out = _converted_weights(weights)
    if isinstance(out, np.ndarray):
        out.flags.writeable = False
        return out
    return tuple(out)


def _converted_weights(weights):
    arr = np.asarray(weights)
    return arr if arr.dtype.kind in "iu" else [int(w) for w in weights]


#: Integers below this are exact in a float64, and so is their quotient's rounding.
_EXACT = 2**53


def _decimal_amounts(answer, noise, lower, upper, grids) -> list:
    """:func:`grid_amounts` one value at a time in Decimal (for values too large for int64 arithmetic)."""
    out = []
    for u, n, low, high, grid in zip(answer, noise, lower, upper, [Decimal(g) for g in grids]):
        steps = min(max(int(u) + int(n), int(low)), int(high))
        amount = steps * grid
        out.append(int(amount) if amount == amount.to_integral_value() else float(amount))
    return out


def _int64(values):
    """``values`` as a one-dimensional int64 array, or None when they do not fit (the caller then
    takes the Decimal loop)."""
    try:
        arr = values if isinstance(values, np.ndarray) else np.array(values, dtype=np.int64)
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > 2**63 - 1:
            return None
        arr = arr.astype(np.int64, copy=False)
    except (OverflowError, TypeError, ValueError):
        return None
    return arr if arr.ndim == 1 else None


def _grid_fractions(grids) -> tuple[np.ndarray, np.ndarray] | None:
    """Each value's grid ``p / q`` in lowest terms as two int64 arrays, read-only (None: a grid
    beyond int64). A listing's grids are the same at every release: kept for the last few."""
    return _grid_fractions_of(tuple(grids))


@lru_cache(maxsize=64)
def _grid_fractions_of(grids: tuple) -> tuple[np.ndarray, np.ndarray] | None:
    distinct = {g: i for i, g in enumerate(dict.fromkeys(grids))}
    which = np.array(list(map(distinct.__getitem__, grids)), dtype=np.int64)
    fractions = [Fraction(Decimal(g)) for g in distinct]
    try:
        p = np.array([f.numerator for f in fractions], dtype=np.int64)
        q = np.array([f.denominator for f in fractions], dtype=np.int64)
    except OverflowError:
        return None
    p, q = p[which], q[which]
    p.flags.writeable = q.flags.writeable = False
    return p, q


def grid_amounts(answer, noise, lower, upper, grids) -> list:
    """``clamp(answer + noise, lower, upper) * grid`` for each value: an ``int`` where the amount is
    whole, else the float nearest to it (as ``float(Decimal)`` gives).

    In int64 numpy: with the grid ``p / q`` in lowest terms, the amount is ``steps p / q``, whole
    when ``q`` divides ``steps p``; otherwise ``steps p`` and ``q`` are below ``2^53`` (checked),
    so both are exact float64s and their IEEE quotient is the correctly rounded amount. Values
    beyond those bounds take the Decimal loop (:func:`_decimal_amounts`).
    """
    grids = list(grids or ())
    u, n, low, high = _int64(answer), _int64(noise), _int64(lower), _int64(upper)
    pq = _grid_fractions(grids) if all(a is not None for a in (u, n, low, high)) else None
    if pq is None or not (u.size == n.size == low.size == high.size == len(grids)):
        return _decimal_amounts(np.asarray(answer).tolist(), np.asarray(noise).tolist(), lower, upper, grids)
    p, q = pq
    if u.size == 0:
        return []
    if max(int(np.abs(u).max()), int(np.abs(n).max())) >= 2**62:  # u + n must not overflow
        return _decimal_amounts(u.tolist(), n.tolist(), lower, upper, grids)
    steps = np.minimum(np.maximum(u + n, low), high)
    largest = int(np.abs(steps).max())
    if int(q.max()) >= _EXACT or int(np.abs(p).max()) * largest >= _EXACT:
        return _decimal_amounts(u.tolist(), n.tolist(), lower, upper, grids)
    num = steps * p
    whole = num % q == 0
    if whole.all():
        return (num // q).tolist()
    out = (num.astype(np.float64) / q.astype(np.float64)).astype(object)
    out[whole] = (num[whole] // q[whole]).astype(object)
    return out.tolist()
