"""Exact reference laws of the lattice path, written from the definitions alone.

Nothing here calls ``releases.engine.lattice``: every law is built from three facts.

* ``DLap(alpha)`` on the integers, ``alpha = e^{-level}``:
  ``P(k) = c alpha^|k|`` with ``c = (1 - alpha)/(1 + alpha) = tanh(level/2)``.
* The tightening increment from ``hi`` down to ``lo`` (``a = e^{-lo}``,
  ``b = e^{-hi}``): ``W = 0`` with probability ``p0 = (b/a) ((1-a)/(1-b))^2``,
  otherwise ``W ~ DLap(a)``; ``V_lo = V_hi + W`` with ``W`` independent of
  ``V_hi``. Along three levels the increments of the two gaps are independent.
* Bayes' rule. ``V_hi`` given ``V_lo = x`` has probabilities
  ``P(V_hi = y) P(W = x - y) / P(V_lo = x)``; ``V_mid`` given ``V_lo = x_lo``
  and ``V_hi = x_hi`` has probabilities proportional to
  ``P(W1 = v - x_hi) P(W2 = x_lo - v)`` (``W1`` the increment from ``hi`` to
  ``mid``, ``W2`` from ``mid`` to ``lo``).

Every such law is a few point masses plus a few terms
``w exp(-sum_k c_k |y - t_k|)``: on each stretch between the points ``t_k``
the exponent is linear in ``y``, so the mass of any interval (bounded or not)
is a finite sum of geometric series, in closed form. The laws are therefore
exact (up to float64 rounding, about 1e-15 relative, which no sample of these
sizes can see) on any support, however large: tiny levels need no truncation.
Everything is kept as logarithms so that far-out inputs do not underflow.

The joint laws of two and three levels are tabulated on a box large enough
that the mass outside it is below 1e-12 (checked).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise

import numpy as np

INF = math.inf
#: The joint tables leave out less than this mass (each coordinate's box drops under a third of it).
MISSING = 1e-12


def as_float(level) -> float:
    """A level as a float, for the reference only (the engine never sees it)."""
    return float(Fraction(level))


def _logsumexp(logs) -> float:
    logs = [v for v in logs if v != -INF]
    if not logs:
        return -INF
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs))


def _log_geometric_sum(slope: float, count: float) -> float:
    """``log sum_{j < count} e^{slope j}`` for ``slope <= 0`` (``count`` may be infinite)."""
    if slope == 0:
        return math.log(count)
    head = 0.0 if count == INF else math.log(-math.expm1(slope * count))
    return head - math.log(-math.expm1(slope))


def _log_term_mass(log_w: float, kernel, s, e) -> float:
    """``log sum_{y = s}^{e} exp(log_w - sum_k c_k |y - t_k|)``; ``s`` may be ``-inf``, ``e`` ``inf``."""
    points = sorted({t for _, t in kernel})
    starts = [-INF] + points
    ends = [p - 1 for p in points] + [INF]
    logs = []
    for start, end in zip(starts, ends):
        lo, hi = max(start, s), min(end, e)
        if lo > hi:
            continue
        # on [start, end] every |y - t| is linear: y - t for t <= start, t - y otherwise
        slope = -sum(c if t <= start else -c for c, t in kernel)
        count = hi - lo + 1
        if slope <= 0:
            anchor, step = lo, slope
        else:
            anchor, step = hi, -slope
        if anchor in (-INF, INF):
            raise ValueError("the series diverges")
        logs.append(log_w - sum(c * abs(anchor - t) for c, t in kernel) + _log_geometric_sum(step, count))
    return _logsumexp(logs)


class Law:
    """A non-negative function on the integers: point masses plus decaying terms, as logarithms.

    ``atoms``: ``(log weight, point)``; ``terms``: ``(log weight, ((c, t), ...))``
    standing for ``weight * exp(-sum c |y - t|)``.
    """

    def __init__(self, atoms=(), terms=()):
        self.atoms = [(w, int(p)) for w, p in atoms if w != -INF]
        self.terms = [(w, tuple((float(c), int(t)) for c, t in kernel)) for w, kernel in terms if w != -INF]

    def log_mass(self, s=-INF, e=INF) -> float:
        """``log`` of the total weight of the integers ``s..e``."""
        logs = [w for w, p in self.atoms if s <= p <= e]
        logs += [_log_term_mass(w, kernel, s, e) for w, kernel in self.terms]
        return _logsumexp(logs)

    def log_pmf(self, k) -> np.ndarray:
        """``log`` of the weight at each integer of ``k`` (an array, any shape)."""
        k = np.asarray(k, dtype=np.int64)
        out = np.full(k.shape, -INF)
        for w, p in self.atoms:
            out = np.logaddexp(out, np.where(k == p, w, -INF))
        for w, kernel in self.terms:
            out = np.logaddexp(out, w - sum(c * np.abs(k - t) for c, t in kernel))
        return out

    def scaled(self, log_factor: float) -> Law:
        return Law([(w + log_factor, p) for w, p in self.atoms], [(w + log_factor, k) for w, k in self.terms])

    def normalised(self) -> Law:
        return self.scaled(-self.log_mass())

    def shifted(self, x: int) -> Law:
        """``y -> f(y - x)``: the law of ``Y + x``."""
        return Law([(w, p + x) for w, p in self.atoms], [(w, tuple((c, t + x) for c, t in k)) for w, k in self.terms])

    def mirrored(self, x: int) -> Law:
        """``y -> f(x - y)``: the law of ``x - Y``."""
        return Law([(w, x - p) for w, p in self.atoms], [(w, tuple((c, x - t) for c, t in k)) for w, k in self.terms])

    def _log_atom_at(self, p: int) -> float:
        return _logsumexp([w for w, q in self.atoms if q == p])

    def _log_terms_at(self, p: int) -> float:
        return _logsumexp([w - sum(c * abs(p - t) for c, t in kernel) for w, kernel in self.terms])

    def times(self, other: Law) -> Law:
        """The pointwise product ``f g`` of two such functions (again atoms plus terms).

        With ``f = A + T`` and ``g = A' + T'`` (atoms, terms): ``f g = T T' +
        (A g + T A')``; the first is a sum of terms (kernels side by side), the
        second lives on the atoms' points.
        """
        points = sorted({p for _, p in self.atoms} | {p for _, p in other.atoms})
        atoms = [
            (_logsumexp([self._log_atom_at(p) + float(other.log_pmf(p)), self._log_terms_at(p) + other._log_atom_at(p)]), p)
            for p in points
        ]
        terms = [(w + v, k + kk) for w, k in self.terms for v, kk in other.terms]
        return Law(atoms, terms)

    def probabilities(self, cuts) -> np.ndarray:
        """Masses of ``(-inf, c0-1], [c0, c1-1], ..., [c_last, inf)`` for sorted integer cuts."""
        edges = [-INF] + [int(c) for c in cuts] + [INF]
        return np.array([math.exp(self.log_mass(s, e - 1)) for s, e in pairwise(edges)])

    def quantile(self, q: float) -> int:
        """The smallest integer ``k`` with ``P(Y <= k) >= q`` (a normalised law)."""
        lo, hi = -1, 1
        while math.exp(self.log_mass(e=lo)) >= q:
            lo *= 2
        while math.exp(self.log_mass(e=hi)) < q:
            hi *= 2
        while hi - lo > 1:  # P(<= lo) < q <= P(<= hi)
            mid = (lo + hi) // 2
            if math.exp(self.log_mass(e=mid)) >= q:
                hi = mid
            else:
                lo = mid
        return hi


# --------------------------------------------------------------------------
# the laws of the path


def dlap(level) -> Law:
    """``DLap(e^{-level})``: ``tanh(level/2) e^{-level |k|}``."""
    lam = as_float(level)
    return Law(terms=[(math.log(math.tanh(lam / 2)), ((lam, 0),))])


def stay_probability(lo, hi) -> float:
    """``p0 = (b/a) ((1-a)/(1-b))^2``: the tightening increment from ``hi`` to ``lo`` is 0."""
    lo, hi = as_float(lo), as_float(hi)
    return math.exp(-(hi - lo)) * (math.expm1(-lo) / math.expm1(-hi)) ** 2


def increment(lo, hi) -> Law:
    """The law of ``W = V_lo - V_hi``: 0 with probability ``p0``, else ``DLap(e^{-lo})``."""
    p0 = stay_probability(lo, hi)
    other = dlap(lo)
    return Law([(math.log(p0), 0)], [(w + math.log1p(-p0), k) for w, k in other.terms])


def tighten_law(y: int, lo, hi) -> Law:
    """``V_lo`` given ``V_hi = y``: ``y + W``."""
    return increment(lo, hi).shifted(y)


def relax_weights(x: int, lo, hi) -> Law:
    """``y -> P(V_hi = y) P(V_lo = x | V_hi = y)``, not normalised: its total is ``P(V_lo = x)``."""
    return dlap(hi).times(increment(lo, hi).mirrored(x))


def relax_law(x: int, lo, hi) -> Law:
    """``V_hi`` given ``V_lo = x``, by Bayes' rule over the tightening step."""
    return relax_weights(x, lo, hi).normalised()


def bridge_weights(x_lo: int, x_hi: int, lo, mid, hi) -> Law:
    """``v -> P(W1 = v - x_hi) P(W2 = x_lo - v)``: its total is ``P(V_lo = x_lo | V_hi = x_hi)``."""
    return increment(mid, hi).shifted(x_hi).times(increment(lo, mid).mirrored(x_lo))


def bridge_law(x_lo: int, x_hi: int, lo, mid, hi) -> Law:
    """``V_mid`` given ``V_lo = x_lo`` and ``V_hi = x_hi``, by Bayes' rule over the chain."""
    return bridge_weights(x_lo, x_hi, lo, mid, hi).normalised()


def box(level) -> int:
    """The smallest ``K`` with ``P(|V| > K) = 2 alpha^{K+1}/(1+alpha)`` below ``MISSING / 3``."""
    lam = as_float(level)
    k = max(0, math.ceil((math.log(6 / MISSING) - math.log1p(math.exp(-lam))) / lam) - 1)
    while 2 * math.exp(-lam * (k + 1)) / (1 + math.exp(-lam)) >= MISSING / 3:
        k += 1
    return k


def joint_table(levels) -> tuple[list[np.ndarray], np.ndarray]:
    """The joint law of ``(V_l1, ..., V_lk)`` for increasing levels, on a box.

    Built from the top: ``V_lk ~ DLap``, then each lower level adds its
    independent tightening increment. Returns the axes (the integers
    ``-K..K`` of each level's box) and the table of probabilities, indexed
    like the levels.
    """
    axes = [np.arange(-box(level), box(level) + 1) for level in levels]
    k = len(levels)
    grids = np.meshgrid(*axes, indexing="ij", sparse=True)
    log_p = dlap(levels[-1]).log_pmf(grids[-1])
    for i in range(k - 1):
        log_p = log_p + increment(levels[i], levels[i + 1]).log_pmf(grids[i] - grids[i + 1])
    table = np.exp(log_p)
    if not 0 <= 1 - table.sum() < MISSING:
        raise AssertionError(f"the box leaves out {1 - table.sum():.3g}")
    return axes, table
