"""Accuracy on the exact lattice path: the discrete Laplace tails, and the error bound at a
confidence as an exact integer (a display figure: nothing is sampled from it). Pure: no Django."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from .lattice_inputs import as_level

def tail_probability(level, t: int) -> float:
    """``P(|V| > t)`` for ``V ~ DLap(e^{-level})``: ``2 alpha^{t+1} / (1 + alpha)`` (for display)."""
    lam = float(as_level(level))
    if t < 0:
        return 1.0
    return 2.0 * math.exp(-lam * (t + 1)) / (1.0 + math.exp(-lam))


def error_bound(level, confidence=Fraction(95, 100)) -> int:
    """The smallest integer ``t`` with ``P(|V| > t) <= 1 - confidence`` for ``V ~ DLap(e^{-level})``.

    ``P(|V| > t) = 2 alpha^{t+1} / (1 + alpha)``; the inequality is
    ``(t + 1) level >= log(2 / ((1 - confidence)(1 + alpha)))``, solved in
    floating point and then checked at 50 digits (mpmath), so the integer is
    exact. A display figure: nothing is sampled from it.
    """
    lam = as_level(level)
    conf = Fraction(str(confidence)) if isinstance(confidence, float) else Fraction(confidence)
    if not 0 < conf < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return _error_bound(lam, conf)


@lru_cache(maxsize=4096)
def _error_bound(lam: Fraction, conf: Fraction) -> int:
    import mpmath

    with mpmath.workdps(50):
        lam_m = mpmath.mpf(lam.numerator) / lam.denominator
        alpha = mpmath.exp(-lam_m)
        miss = mpmath.mpf(conf.denominator - conf.numerator) / conf.denominator

        def ok(t: int) -> bool:
            return 2 * alpha ** (t + 1) / (1 + alpha) <= miss

        guess = max(0, int(mpmath.ceil(mpmath.log(2 / (miss * (1 + alpha))) / lam_m)) - 1)
        while guess > 0 and ok(guess - 1):
            guess -= 1
        while not ok(guess):
            guess += 1
    return guess
