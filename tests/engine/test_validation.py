"""Bad input is refused with a clear ValueError."""

import numpy as np
import pytest

from releases.engine.mechanism import bridge, l2_at, l2_extend, l2_path, new_rng, relax, tighten

R = np.random.default_rng(0)
X = np.zeros(4)
LV, VV = l2_path(2, 2.0, 0.5, np.random.default_rng(1))

CASES = [
    # eps <= 0, not finite, not a number
    (lambda: relax(X, 0.0, 1.0, R), "eps_from must be a positive"),
    (lambda: relax(X, 1.0, -2.0, R), "eps_to must be a positive"),
    (lambda: relax(X, np.nan, 1.0, R), "positive finite"),
    (lambda: tighten(X, np.inf, 1.0, R), "positive finite"),
    (lambda: tighten(X, 1.0, "x", R), "positive number"),
    (lambda: bridge(X, 0.0, X, 2.0, 1.0, R), "eps_lo must be a positive"),
    (lambda: l2_path(2, -1.0, 0.5, R), "eps_top must be a positive"),
    (lambda: l2_at(LV, VV, 0.0), "eps must be a positive"),
    # a wrong order of levels
    (lambda: relax(X, 2.0, 1.0, R), "relax needs eps_to >= eps_from"),
    (lambda: tighten(X, 1.0, 2.0, R), "tighten needs eps_to <= eps_from"),
    (lambda: bridge(X, 1.0, X, 2.0, 3.0, R), "eps_lo < eps_mid < eps_hi"),
    (lambda: bridge(X, 1.0, X, 2.0, 1.0, R), "eps_lo < eps_mid < eps_hi"),
    (lambda: bridge(X, 3.0, X, 2.0, 2.5, R), "eps_lo < eps_mid < eps_hi"),
    (lambda: l2_path(2, 0.5, 2.0, R), "eps_bottom <= eps_top"),
    (lambda: l2_extend(LV[::-1], VV[::-1], 0.1, R), "descending"),
    (lambda: l2_at(LV, VV, 3.0), "known range"),
    (lambda: l2_at(LV, VV, 0.1), "known range"),
    # non-finite noise
    (lambda: relax([0.0, np.nan], 1.0, 2.0, R), "noise must be finite"),
    (lambda: tighten([np.inf], 2.0, 1.0, R), "noise must be finite"),
    (lambda: bridge([0.0], 1.0, [-np.inf], 2.0, 1.5, R), "noise_hi must be finite"),
    (lambda: l2_extend(LV, np.full_like(VV, np.nan), 0.1, R), "values must be finite"),
    (lambda: relax(["a"], 1.0, 2.0, R), "array of numbers"),
    # mismatched shapes
    (lambda: bridge(np.zeros(3), 1.0, np.zeros(4), 2.0, 1.5, R), "same shape"),
    (lambda: relax(X, np.ones(3), 2.0, R), "does not broadcast"),
    (lambda: relax(X, np.ones((2, 4)), 2.0, R), "does not broadcast"),
    (lambda: l2_at(LV, VV[:-1], 1.0), "values must have shape"),
    (lambda: l2_extend(LV, VV[:, 0], 0.1, R), "values must have shape"),
    (lambda: l2_path(0, 1.0, 0.5, R), "dim must be a positive integer"),
    (lambda: l2_path(1.5, 1.0, 0.5, R), "dim must be a positive integer"),
]


@pytest.mark.parametrize("call,message", CASES)
def test_bad_input_raises_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_new_rng_draws_fresh_entropy():
    a, b = new_rng(), new_rng()
    assert not isinstance(a, np.random.Generator)  # the OS's bits (releases.engine.osrandom), never a seeded PRNG
    assert not np.array_equal(a.random(8), b.random(8))
