"""What happens to a noisy answer before anyone sees it (docs/mathematics.md section 9).

A released float is rounded to a power-of-two grid near a small fraction of
the noise scale, then clamped to the query's declared range. Both are
post-processing: in exact arithmetic they cost no privacy.

What the rounding does: it removes the classical low-bit attack on float
Laplace noise (Mironov, CCS 2012), in which the set of floats that ``u + V``
can reach depends on ``u``, so the last bits of a release can tell two
neighbouring answers apart. Once values are rounded to a grid far coarser
than a float's spacing, those bits are gone.

What it does not prove: Mironov's "snapping" theorem does not cover this
construction. It needs a grid at least as coarse as the noise scale (ours is
1/32 of it), one full-precision Laplace draw (ours may come from relax,
tighten or bridge steps) and a uniform at full float precision (numpy's are
multiples of 2^-53). The float path is therefore (eps, delta)-DP with a small
measured delta, see ``releases/engine/guarantee.py`` and ``bench/float_delta.py``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["grid_step", "snap", "laplace_error_bound"]

#: The grid is the largest power of two not above ``scale * GRID_FRACTION``.
GRID_FRACTION = 2.0**-5


def _positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def grid_step(scale, fraction: float = GRID_FRACTION) -> float:
    """The largest power of two that does not exceed ``scale * fraction``."""
    target = _positive("scale", scale) * _positive("fraction", fraction)
    mantissa, exponent = math.frexp(target)  # target = mantissa * 2**exponent, 0.5 <= m < 1
    return math.ldexp(1.0, exponent - 1)


def snap(values, scale, lower=None, upper=None, fraction: float = GRID_FRACTION):
    """Round ``values`` to the grid of :func:`grid_step` and clamp to ``[lower, upper]``.

    ``scale`` is the Laplace scale of the release: one number, or one per
    value (broadcasting to ``values``); ``lower`` and ``upper`` (scalars or
    arrays broadcasting to ``values``, or None for an open side) are the
    declared range of the query.
    """
    v = np.array(values, dtype=np.float64, copy=True)
    if not np.isfinite(v).all():
        raise ValueError("values must be finite")
    scales = np.asarray(scale, dtype=np.float64)
    if scales.ndim == 0:
        step = grid_step(float(scales), fraction)
    else:
        scales = np.broadcast_to(scales, v.shape)
        step = np.array([grid_step(b, fraction) for b in scales.ravel()]).reshape(v.shape)
    out = np.round(v / step) * step  # exact: each step is a power of two
    lo = None if lower is None else np.asarray(lower, dtype=np.float64)
    hi = None if upper is None else np.asarray(upper, dtype=np.float64)
    if lo is not None and hi is not None and np.any(lo > hi):
        raise ValueError("lower bound above upper bound")
    if lo is not None or hi is not None:
        out = np.clip(out, lo, hi)
    return out[()] if out.ndim == 0 else out


def laplace_error_bound(scale, confidence: float = 0.95, fraction: float = GRID_FRACTION) -> float:
    """A bound ``t`` with ``P(|released - true| <= t) >= confidence``.

    Laplace noise of scale ``b`` exceeds ``t`` in absolute value with
    probability ``exp(-t/b)``; rounding adds at most half a grid step, and
    clamping to a range that holds the true value only brings it closer.
    """
    b = _positive("scale", scale)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return b * math.log(1.0 / (1.0 - confidence)) + grid_step(b, fraction) / 2.0
