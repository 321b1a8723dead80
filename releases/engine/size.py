"""The size release: a noisy count per mean cell, published once for everyone
(docs/mathematics.md, "The size release and a mean's quote").

A mean whose divisor is a private count c (a private size, a filter, a
group-by, a column with missing values) has an error that depends on c. A
listing with such means publishes, once, ``P = c + E`` per cell at a small
level ``eps_p`` carved out of its ceiling, with ``E`` discrete Laplace
(:mod:`releases.engine.lattice`, from the operating system's bits). Its
coordinates together move by at most ``weight`` (the l1-sensitivity of the
size vector, a whole number) when one record is added, removed or replaced, so
each runs at ``eps_p / weight`` and the whole release is ``eps_p``-DP.

Everything else here is post-processing of ``P``: the one-sided lower end
``P - t`` that holds ``c >= P - t`` but with probability ``miss``, and the
mean's 95% bound with the count's error folded in by a union bound
(:func:`mean_quote`). Pure: no Django.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from releases.engine import lattice

#: A quote's three events (the size release's lower end, the sum's and the released count's
#: bounds) each fail with probability at most this, so all hold together with probability 95%.
EACH_MISS = Fraction(5, 300)
#: The confidence of the size release's own two-sided error bound, as shown with it.
SHOWN_CONFIDENCE = Fraction(95, 100)


def cell_level(level, weight: int) -> Fraction:
    """Each cell's lattice level: ``eps_p / weight`` (exact)."""
    if int(weight) < 1:
        raise ValueError(f"a size release's weight is a whole number from 1, got {weight!r}")
    return lattice.as_level(level) / int(weight)


def release(counts, level, weight: int, upper, rng) -> np.ndarray:
    """The noisy counts ``clamp(c + E, 0, upper)`` (int64), ``E ~ DLap(e^{-eps_p / weight})`` per cell.
    Clamping to a public range holding ``c`` keeps ``c >= P - t`` whenever ``E <= t``."""
    counts = np.asarray(counts, dtype=np.int64)
    noise = lattice.sample(cell_level(level, weight), counts.size, rng)
    return np.clip(counts + noise, 0, np.asarray(upper, dtype=np.int64))


def error_bound(level, weight: int, confidence=SHOWN_CONFIDENCE) -> int:
    """The two-sided ``confidence`` bound of one noisy count (whole records)."""
    return lattice.error_bound(cell_level(level, weight), Fraction(confidence))


def lower_slack(level, weight: int, miss=EACH_MISS) -> int:
    """The smallest ``t`` with ``P(E > t) <= miss``: ``c >= P - t`` fails with probability at most
    ``miss`` (one tail of a symmetric law: the two-sided bound at ``1 - 2 miss``)."""
    return lattice.error_bound(cell_level(level, weight), 1 - 2 * Fraction(miss))


def lower_end(noisy: int, level, weight: int, miss=EACH_MISS) -> int:
    """``P - t``: a lower confidence end of the true count (may be 0 or less: then nothing is known)."""
    return int(noisy) - lower_slack(level, weight, miss)


def mean_quote(t_s: float, t_c: float, lower: float, upper: float, divisor: int) -> float | None:
    """A mean's bound for a cell whose true count is at least ``divisor`` (the size release's lower
    end), with ``t_s`` and ``t_c`` the released sum's and count's bounds at ``1 - EACH_MISS`` each.
    On the event that all three hold, ``|M - m| <= (t_s + K t_c) / (c - t_c) <=
    (t_s + K t_c) / (divisor - t_c)`` for ``c >= divisor > t_c`` (``K = max(|lower|, |upper|)``): the
    bound decreases in ``c``. None when ``divisor <= t_c`` or the bound reaches the whole range
    ``upper - lower``: nothing better than the range is known (too few records to estimate)."""
    t_s, t_c, lower, upper = (Fraction(float(x)) for x in (t_s, t_c, lower, upper))
    if divisor <= t_c:
        return None
    exact = (t_s + max(abs(lower), abs(upper)) * t_c) / (int(divisor) - t_c)
    if exact >= upper - lower:
        return None
    return round_up(exact)


def round_up(x: Fraction) -> float:
    """The smallest float at or above ``x``."""
    shown = float(x)
    return shown if Fraction(shown) >= x else math.nextafter(shown, math.inf)
