"""Exact laws and statistical yardsticks shared by the engine's tests."""

import numpy as np
from scipy import stats


def laplace_cdf(scale):
    return stats.laplace(scale=scale).cdf


def binomial_close(hits: int, n: int, p: float, sigmas: float = 5.0) -> bool:
    """``hits`` out of ``n`` is within ``sigmas`` standard deviations of ``n p``."""
    sd = np.sqrt(n * p * (1 - p))
    return abs(hits - n * p) <= sigmas * max(sd, 1.0)


def corr(a, b) -> float:
    return float(np.corrcoef(np.ravel(a), np.ravel(b))[0, 1])


def relax_continuous_cdf(x: float, e1: float, e2: float):
    """CDF of ``relax(x)`` restricted to ``y != x`` (normalised), from docs/mathematics.md section 2.

    Written for ``x >= 0`` in terms of ``y``; for ``x < 0`` use symmetry.
    """
    a, s, m = e2 - e1, e1 + e2, abs(x)
    t = np.exp(-a * m)
    p1 = a / (2 * e2)
    p2 = s / (2 * e2) * (1 - t)
    p3 = a / (2 * e2) * t
    total = p1 + p2 + p3

    def cdf(y):
        y = np.asarray(y, dtype=float)
        below = p1 * np.exp(s * np.minimum(y, 0.0))
        inside = p1 + s / (2 * e2) * (1 - np.exp(-a * np.clip(y, 0.0, m)))
        above = p1 + p2 + p3 * (1 - np.exp(-s * np.maximum(y - m, 0.0)))
        out = np.where(y < 0, below, np.where(y <= m, inside, above))
        return out / total

    return cdf
