"""The Skellam path's privacy figures (``releases.engine.skellam_privacy``): ``delta(eps)`` is an
upper bound that is also tight, the calibration meets the listing's ``delta`` with the least noise
on its grid, and the error bounds are the Skellam law's quantiles.

The reference for ``delta`` is the hockey-stick divergence summed directly over the outputs
(one or two coordinates: ``sum_k (P(k) - e^eps P(k - t))_+``, scipy's Bessel functions); the check
that must hold above it is the Rényi-DP bound of Agarwal et al. for the Skellam mechanism.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from scipy import special, stats

from releases.engine import skellam_privacy as sp


def _direct(mu: float, shifts: list[int], eps: float) -> float:
    """``delta(eps)`` summed over every output of one or two coordinates."""
    k = np.arange(-int(14 * np.sqrt(2 * mu) + 40), int(14 * np.sqrt(2 * mu) + 40) + 1)

    def p(x):
        return special.ive(np.abs(x), 2 * mu)

    if len(shifts) == 1:
        return float(np.sum(np.maximum(p(k) - np.exp(eps) * p(k - shifts[0]), 0)))
    a, b = np.meshgrid(k, k, indexing="ij")
    return float(np.sum(np.maximum(p(a) * p(b) - np.exp(eps) * p(a - shifts[0]) * p(b - shifts[1]), 0)))


CASES = [(F(5), [1], 0.5), (F(5), [1], 1.0), (F(3, 2), [2], 1.0), (F(20), [1, 1], 0.5), (F(50), [1, 2], 0.3),
         (F(200), [3], 0.2)]


@pytest.mark.parametrize("mu, shifts, eps", CASES)
def test_delta_is_above_the_direct_sum_and_close_to_it(mu, shifts, eps):
    ours, direct = sp.delta(mu, shifts, eps), _direct(float(mu), shifts, eps)
    assert direct <= ours <= direct * 1.005 + 1e-15, (ours, direct)


@pytest.mark.parametrize("mu, shifts, eps", CASES + [(F(2000), {1: 40}, 1.0), (F(30), {1: 12, 2: 3}, 1.5)])
def test_delta_stays_below_the_renyi_bound(mu, shifts, eps):
    """Above the finite losses' part, ``delta`` holds the mass counted as infinite: the tail left
    out (1e-18 a coordinate) and, for laws composed by FFT, its error bound (about 1e-11 here)."""
    infinite = sp.composed_law(F(mu), sp.shift_pairs(shifts))[2]
    assert sp.delta(mu, shifts, eps) <= sp.rdp_delta(mu, shifts, eps) + infinite * (1 + 2 * sp.SLACK) + 1e-15


def test_losses_rounded_down_would_be_caught(monkeypatch):
    """The mutation: each loss rounded down to the grid instead of up (an optimistic figure)."""
    monkeypatch.setattr(sp, "_round_up", np.floor)
    sp._loss_law.cache_clear()
    sp.composed_law.cache_clear()
    try:
        mu, shifts, eps = CASES[0]
        assert sp.delta(mu, shifts, eps) < _direct(float(mu), shifts, eps)
    finally:
        sp._loss_law.cache_clear()
        sp.composed_law.cache_clear()


def test_delta_falls_with_more_noise_and_a_larger_eps_and_adds_up_over_coordinates():
    assert sp.delta(F(10), [1], 0.5) > sp.delta(F(20), [1], 0.5) > sp.delta(F(40), [1], 0.5)
    d = sp.deltas(F(10), [1], [0.1, 0.5, 1.0, 2.0])
    assert d == sorted(d, reverse=True)
    assert sp.delta(F(10), [1, 1], 0.5) > sp.delta(F(10), [1], 0.5)
    assert sp.delta(F(10), [], 0.5) == 0.0
    assert sp.delta(F(10), {1: 3}, 0.5) == sp.delta(F(10), [1, -1, 1], 0.5)  # signs do not matter


def test_the_calibration_is_the_least_grid_time_meeting_delta():
    assert [sp._grid_index(float(sp._grid_time(j))) for j in (0, 5, 899, 900, 2345)] == [0, 5, 899, 900, 2345]
    for eps, target, shifts in ((1.0, 1e-6, [1]), (2.0, 1e-6, [2, 1])):
        mu = sp.time_for(eps, target, shifts)
        assert sp.delta(mu, shifts, eps) <= target
        step = F(1, 100) * F(10) ** (len(str(int(mu))) - 1) if mu >= 1 else F(1, 1000)
        assert sp.delta(mu - step, shifts, eps) > target, (mu, step)


def test_the_error_bound_is_the_skellam_quantile():
    def inside(x, m):
        return stats.skellam.cdf(x, m, m) - stats.skellam.cdf(-x - 1, m, m)

    for mu in (F(1, 2), F(5), F(123, 2)):
        q = sp.error_bound(mu)
        assert inside(q, float(mu)) >= 0.95 > inside(q - 1, float(mu))


def test_shown_rounds_up():
    assert str(sp.shown(1.234e-7)) == "1.3E-7" and str(sp.shown(1.2e-7)) == "1.2E-7"
    assert sp.shown(0.0) == 0
    assert str(sp.shown(np.float64(8.98e-11))) == "9.0E-11"  # numpy scalars too (their repr is not a number)


def test_the_recurrences_probabilities_are_mpmaths_bessel_values():
    import mpmath

    for mu in (F(1, 3), F(5), F(2000), F(3001, 3)):
        k_max, probs = sp._support(mu)
        assert len(probs) == 2 * k_max + 1
        with mpmath.workdps(40):
            two_mu = 2 * mpmath.mpf(mu.numerator) / mu.denominator
            for k in (0, 1, 7, k_max // 2, k_max):
                exact = mpmath.besseli(k, two_mu) * mpmath.exp(-two_mu)
                assert abs(probs[k_max + k] - exact) <= exact * mpmath.mpf("1e-11"), (mu, k)
                assert probs[k_max - k] == probs[k_max + k]
        assert 2 * probs[k_max + 1:].sum() + probs[k_max] == pytest.approx(1, abs=1e-15)
    k_max, wide = sp._support(F(5), 3)  # three more on each side, the same values
    assert len(wide) == 2 * (k_max + 3) + 1 and np.array_equal(wide[3:-3], sp._support(F(5))[1])


def test_a_case_runs_each_coordinate_at_its_weights_squared_time():
    """A coordinate of weight ``w`` has noise at time ``mu w^2``: a case's figure is the composed law
    of each coordinate at its own time, and the largest case is the listing's."""
    case = sp.case_of([(0, 3), (1, -3), (2, 1)], weights=[3, 3, 1])
    assert case == ((1, 1, 1), (3, 3, 2))
    alone = sp.law_power(sp._loss_law(F(90), 3), 2)
    both = sp.convolve_laws(sp._loss_law(F(10), 1), alone)
    assert sp.profile(F(10), [case], [0.7]) == sp._read(both, [0.7])
    assert sp.profile(F(10), [case, ((1, 1, 1),)], [0.7]) == sp.profile(F(10), [case], [0.7])


def test_the_calibration_of_a_case_is_the_least_grid_time_and_a_ladder_is_each_level_calibrated():
    cases = [((1, 1, 6),), ((2, 1, 1), (1, 1, 2))]
    for eps in (0.5, 2):
        mu = sp.calibrate(eps, 1e-7, cases)
        j = sp._grid_index(float(mu))
        assert sp._grid_time(j) == mu
        assert sp.profile(mu, cases, [eps])[0] <= 1e-7 < sp.profile(sp._grid_time(j - 1), cases, [eps])[0]
    levels = [F(1, 4), F(1), F(1, 2)]
    assert sp.ladder(levels, 1e-7, cases) == [sp.calibrate(e, 1e-7, cases) for e in levels]


@pytest.mark.parametrize("mu", [F(1, 2), F(3), F(40), F(700)])
def test_a_larger_shift_never_costs_less(mu):
    """The plans state each worst case by its largest moves: that is sound only if a coordinate moved
    less costs no more. For a pair of distributions the profile delta(eps) at every eps orders them
    (Blackwell), and dominance composes over coordinates; here delta for a shift t lies at or below
    delta for t + 1, at every eps of a fine grid, for shifts 1 to 6."""
    grid = list(np.linspace(0, 6, 121))
    rows = [sp.deltas(mu, [t], grid) for t in range(1, 7)]
    for smaller, larger in zip(rows, rows[1:]):
        assert all(a <= b * (1 + 1e-9) + 1e-16 for a, b in zip(smaller, larger))


def test_a_level_needing_more_than_the_largest_time_is_refused_in_words():
    with pytest.raises(sp.TooMuchNoise, match="the level is too low for these values"):
        sp.calibrate(1e-4, 1e-9, [((1, 1, 20),)])
    with pytest.raises(sp.TooMuchNoise):  # a heavy value: its own time counts (mu w^2)
        sp.calibrate(0.01, 1e-9, [((3000, 3000, 1),)])
