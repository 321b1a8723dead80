"""Rounding to a power-of-two grid, clamping, and the 95% error bound."""

import math

import numpy as np
import pytest

from releases.engine.postprocess import GRID_FRACTION, grid_step, laplace_error_bound, snap


@pytest.mark.parametrize("scale", [1e-6, 0.01, 0.3, 1.0, 2.0, 7.5, 1e6])
def test_grid_is_the_largest_power_of_two_below_a_fraction_of_the_scale(scale):
    step = grid_step(scale)
    assert math.frexp(step)[0] == 0.5  # a power of two
    assert step <= scale * GRID_FRACTION < 2 * step


def test_snap_rounds_to_the_grid_and_clamps(rng):
    scale = 3.0  # grid 2^-4 = 0.0625
    values = rng.normal(0, 50, 10_000)
    out = snap(values, scale, lower=-40.0, upper=60.0)
    step = grid_step(scale)
    assert step == 0.0625
    inside = (out > -40) & (out < 60)
    assert np.all(np.abs(out[inside] / step - np.round(out[inside] / step)) == 0)
    assert np.all(np.abs(out[inside] - values[inside]) <= step / 2)
    assert out.min() == -40.0 and out.max() == 60.0
    assert snap(1.03, scale) == 1.0
    assert snap(np.array([5.0, -5.0]), 1.0, lower=np.array([0.0, 0.0])).tolist() == [5.0, 0.0]
    with pytest.raises(ValueError):
        snap([1.0, np.nan], scale)
    with pytest.raises(ValueError):
        snap([1.0], scale, lower=2.0, upper=1.0)
    with pytest.raises(ValueError):
        snap([1.0], 0.0)


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_error_bound_covers_95_percent_of_releases(scale, rng):
    # one size at both GRADUAL_MC settings: "tight" (coverage <= 95.3%) needs the 200,000 draws, and they
    # cost a tenth of a second
    n = 200_000
    released = snap(rng.laplace(0.0, scale, n), scale)
    bound = laplace_error_bound(scale)
    assert bound == pytest.approx(scale * math.log(20), rel=0.02)
    coverage = np.mean(np.abs(released) <= bound)
    # the bound is valid (>= 95%) and tight (rounding adds at most half a step)
    assert 0.95 <= coverage <= 0.953
