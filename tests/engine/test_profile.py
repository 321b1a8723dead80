"""The privacy-loss profile delta(eps') = E[(1 - e^{eps' - L})_+] of a release.

l1: the closed form of ``releases.engine.profile.loss_profile_l1`` against the one-value
formula, its limits and shape, and large fixed-seed Monte Carlo samples of the
actual Laplace losses. l2: the quadrature against Monte Carlo.
"""

import itertools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from releases.engine import profile
from releases.engine.profile import (
    loss_profile_l1,
    loss_profile_l2,
    profile_chart_points,
    profile_groups,
)

pytestmark = pytest.mark.statistical

N_MC = 1_000_000


def _mc_l1(a, eps_prime, seed):
    """Sample L = sum_i (|y_i - a_i| - |y_i|), y_i ~ Lap(1): the loss for a neighbour moving by a_i scales."""
    rng = np.random.default_rng(seed)
    loss = np.zeros(N_MC)
    for ai in a:
        y = rng.laplace(0.0, 1.0, N_MC)
        loss += np.abs(y - ai) - np.abs(y)
    return _hockey(loss, eps_prime)


def _hockey(loss, eps_prime):
    out = []
    for e in eps_prime:
        f = -np.expm1(np.minimum(e - loss, 0.0))  # (1 - e^{e-L})_+
        out.append((f.mean(), f.std() / math.sqrt(len(f))))
    return out


@pytest.mark.parametrize("a", [0.05, 0.7, 1.0, 3.0])
def test_one_value_is_one_minus_exp_half_gap(a):
    grid = np.linspace(-a, a, 41)
    got = loss_profile_l1([a], grid)
    want = 1.0 - np.exp((grid - a) / 2.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("a", [[1.0], [0.2] * 5, [0.3, 0.6, 0.6], [0.05] * 20 + [1.0]])
def test_limits_and_shape(a):
    s = sum(a)
    # At and above the level the release is pure: delta = 0.
    # (s is a float sum, within an ulp of the exact S.)
    assert loss_profile_l1(a, [s + 1e-12, s + 1.0, 50.0]).tolist() == [0.0, 0.0, 0.0]
    assert loss_profile_l1(a, [s])[0] < 1e-15  # the atom at S times (1 - e^{s - S})
    # The loss is at least -S, so below -S nothing is cut: delta = 1 - e^{eps'}, and -> 1.
    low = np.array([-s - 5.0, -s - 0.5])
    np.testing.assert_allclose(loss_profile_l1(a, low), -np.expm1(low), rtol=1e-14)
    # Just above -S the closed form (every term in play) meets that line: continuity.
    at = -s + 1e-9
    assert loss_profile_l1(a, [at])[0] == pytest.approx(-math.expm1(at), rel=1e-7)
    # ... and just below S it is nearly 0.
    assert 0.0 <= loss_profile_l1(a, [s - 1e-9])[0] < 1e-8
    grid = np.linspace(-s, s, 61)
    d = loss_profile_l1(a, grid)
    assert np.all((d >= 0) & (d <= 1))
    assert np.all(np.diff(d) <= 1e-15), "delta must fall as eps' grows"


@pytest.mark.parametrize(
    ("a", "seed"),
    [
        ([1.0], 1),  # K = 1
        ([0.2] * 5, 2),  # K = 5 equal groups
        ([0.5, 0.25, 0.25], 3),  # one value plus two of half its size
        ([0.05] * 20 + [1.0], 4),  # 21 coordinates, two distinct values
    ],
)
def test_l1_agrees_with_monte_carlo(a, seed):
    """1e6 fixed-seed samples of the actual losses; agreement within 5 standard errors."""
    s = sum(a)
    grid = [0.0, 0.25 * s, 0.5 * s, 0.8 * s]
    exact = loss_profile_l1(a, grid)
    for x, (mean, se) in zip(exact, _mc_l1(a, grid, seed)):
        assert abs(x - mean) <= 5 * se + 1e-12, (a, x, mean, se)


def test_precision_is_enough():
    """More working bits change nothing: the cancellation is covered."""
    a = [Fraction(1, 10)] * 17 + [Fraction(1, 5)] * 17 + [Fraction(3, 10)] * 16
    grid = [-3.0, 0.0, 1.0, 5.0]
    base = loss_profile_l1(a, grid)
    old = profile._L1Profile.EXTRA_BITS
    try:
        profile._L1Profile.EXTRA_BITS = old + 300
        more = loss_profile_l1(a, grid)
    finally:
        profile._L1Profile.EXTRA_BITS = old
    np.testing.assert_allclose(base, more, rtol=1e-13, atol=1e-300)
    assert np.all(base > 0)


def test_fifty_coordinates_with_two_values_is_quick():
    import time

    a = [0.02] * 25 + [0.03] * 25
    t = time.perf_counter()
    d = loss_profile_l1(a, [0.0, 0.5, 1.0])
    assert time.perf_counter() - t < 10
    assert d[0] > d[1] > d[2] > 0


def test_profile_groups():
    # A count (weight 2 = K*1) and a clamped sum in [0, 10] (weight 2*10): add/remove moves 1 and 10.
    a = profile_groups([2, 20], [1, 10], Decimal("1.5"))
    assert a == [Fraction(3, 4), Fraction(3, 4)]
    # replace-one histogram: two bins move by one; others do not move and are left out.
    a = profile_groups([3, 3, 3, 3], [1, -1, 0, 0], 1)
    assert a == [Fraction(1, 3), Fraction(1, 3)]
    with pytest.raises(ValueError):
        profile_groups([1], [1, 2], 1)
    with pytest.raises(ValueError):
        profile_groups([0], [1], 1)
    with pytest.raises(ValueError):
        profile_groups([1], [1], 0)
    with pytest.raises(ValueError):
        profile_groups([1], [float("nan")], 1)


def test_chart_points():
    a = [0.5, 0.5]
    pts = profile_chart_points(a, 1.0)
    assert len(pts) == 60
    assert pts[0][0] == 0.0 and pts[-1] == (1.0, 0.0)
    xs, ds = zip(*pts)
    assert all(x < y for x, y in itertools.pairwise(xs))
    assert all(x >= y for x, y in itertools.pairwise(ds))
    assert pts[0][1] == pytest.approx(loss_profile_l1(a, [0.0])[0], rel=1e-14)
    # denser at the ends than in the middle
    gaps = np.diff(xs)
    assert gaps[0] < gaps[30] and gaps[-1] < gaps[30]


def test_bad_input_is_value_error():
    with pytest.raises(ValueError):
        loss_profile_l1([-1.0], [0.0])
    with pytest.raises(ValueError):
        loss_profile_l1([1.0], [float("nan")])
    with pytest.raises(ValueError):
        loss_profile_l2(0, 1.0, [0.0])
    assert loss_profile_l1([], [0.0]).tolist() == [0.0]


# --------------------------------------------------------------------------
# l2


@pytest.mark.parametrize(("dim", "eps", "seed"), [(2, 1.0, 11), (3, 1.0, 12), (2, 2.5, 13), (3, 0.4, 14)])
def test_l2_agrees_with_monte_carlo(dim, eps, seed):
    """Noise radius Gamma(dim, 1) in units of Delta/eps, uniform direction; the loss is
    ||W + eps e|| - ||W||. 1e6 fixed-seed samples; within 5 standard errors."""
    rng = np.random.default_rng(seed)
    r = rng.gamma(dim, 1.0, N_MC)
    v = rng.standard_normal((N_MC, dim))
    cos = v[:, 0] / np.linalg.norm(v, axis=1)
    loss = np.sqrt(r * r + 2 * r * eps * cos + eps * eps) - r
    grid = [-0.5 * eps, 0.0, 0.3 * eps, 0.8 * eps]
    got = loss_profile_l2(dim, eps, grid)
    for x, (mean, se) in zip(got, _hockey(loss, grid)):
        assert abs(x - mean) <= 5 * se + 1e-12, (dim, eps, x, mean, se)


def test_l2_limits_and_dimension_one():
    for dim in (2, 3, 5):
        d = loss_profile_l2(dim, 1.2, [-2.0, -1.2, 1.2, 3.0])
        np.testing.assert_allclose(d[:2], -np.expm1([-2.0, -1.2]), rtol=1e-14)
        assert d[2:].tolist() == [0.0, 0.0]
        grid = np.linspace(-1.1, 1.1, 23)
        prof = loss_profile_l2(dim, 1.2, grid)
        assert np.all(np.diff(prof) <= 1e-12)
        # continuity at -eps from inside (accuracy of the quadrature)
        assert loss_profile_l2(dim, 1.2, [-1.2 + 1e-9])[0] == pytest.approx(-math.expm1(-1.2), abs=1e-8)
    np.testing.assert_allclose(loss_profile_l2(1, 0.9, [0.0, 0.3]), loss_profile_l1([0.9], [0.0, 0.3]))
