"""The privacy-loss profile of a lattice release (integer noise, ``releases.engine.profile.LatticeProfile``).

Coordinate ``i`` carries ``DLap(e^{-lam_i})`` noise and the worst-case
neighbour moves it by ``t_i`` lattice units. Checked here: against a
50-digit enumeration that starts from the noise's probability mass function
(not from the loss formula the code uses), the release's pure level, the
shape of the curve, the Laplace limit, and a Monte Carlo sample drawn with
the engine's own sampler ``releases.engine.lattice.sample``.
"""

import itertools
import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from releases.engine import lattice, profile
from releases.engine.profile import LatticeProfile, ProfileTooLarge, loss_profile_l1, loss_profile_lattice

from tests import mc

F = Fraction


def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def _loss_law(t: int, lam: Fraction) -> dict[Fraction, mpmath.mpf]:
    """One coordinate's loss law ``lam (|y - t| - |y|)`` summed from ``P(y) = (1-a)/(1+a) a^|y|``
    over ``y`` in ``[-Y, t + Y]``; the mass left out is below ``e^{-60}``."""
    a = mpmath.exp(-_mp(lam))
    c = (1 - a) / (1 + a)
    reach = int(60 / lam) + 1
    law: dict[Fraction, mpmath.mpf] = {}
    for y in range(-reach, t + reach + 1):
        loss = lam * (abs(y - t) - abs(y))
        law[loss] = law.get(loss, 0) + c * a ** abs(y)
    return law


def _enumerated(coords, grid) -> np.ndarray:
    """``delta(eps') = sum over the joint support of P (1 - e^{eps' - L})_+``, at 50 digits, exact losses."""
    with mpmath.workdps(50):
        laws = [list(_loss_law(t, lam).items()) for t, lam in coords]
        joint = [(sum(x for x, _ in combo), mpmath.fprod(p for _, p in combo)) for combo in itertools.product(*laws)]
        out = []
        for e in grid:
            cut = Fraction(float(e))
            out.append(float(mpmath.fsum(p * -mpmath.expm1(_mp(cut - loss)) for loss, p in joint if loss > cut)))
    return np.array(out)


CASES = [
    [(1, F(1, 2))],  # a count
    [(1, F(1)), (1, F(1))],  # a histogram under a public size: two bins by one
    [(3, F(1, 4)), (2, F(1, 3))],  # two lattices: the running-sum formula alone
    [(2, F(1, 7)), (1, F(2, 5)), (4, F(1, 10))],  # three lattices: one convolution across two
    [(1, F(1)), (1, F(1)), (1, F(1)), (2, F(1, 2))],  # equal levels merged on their lattice
    [(2, F(1, 3)), (1, F(1, 3)), (3, F(3, 10)), (1, F(3, 10)), (0, F(1, 9))],  # two merged blocks; t = 0 carries nothing
]


@pytest.mark.parametrize("coords", CASES)
def test_agrees_with_enumeration_within_its_stated_error(coords):
    """Every eps' from below -S to above S, atoms included: the error is a few ulp and within ``error()``."""
    s = float(sum(t * lam for t, lam in coords))
    grid = np.concatenate([np.linspace(-s - 0.5, s + 0.5, 31), [0.0, 0.5, -0.5, s / 3]])
    prof = LatticeProfile(coords)
    got = prof.deltas(grid)
    want = _enumerated(coords, grid)
    err = np.max(np.abs(got - want))
    assert err <= prof.error(grid), (err, prof.error(grid))
    assert err < 1e-15
    assert prof.error(grid) < 1e-13


def test_convolved_laws_agree_with_a_30_digit_sum():
    """Three sums on one lattice (121, 81 and 41 atoms) and a count on another: the count is folded into
    the smallest sum, that into the 81-atom one (float64 convolutions), the rest is the running-sum
    formula. Against the four laws convolved and summed at 30 digits the error is within ``error()``."""
    coords = [(120, F(1, 240)), (80, F(1, 240)), (40, F(1, 240)), (1, F(1, 3))]
    prof = LatticeProfile(coords)
    assert prof.work == 2 * 41 + 81 * 121
    grid = [-0.5, 0.0, 0.3, 0.6, 1.0]
    with mpmath.workdps(30):
        joint = {Fraction(0): mpmath.mpf(1)}
        for t, lam in coords:
            a = mpmath.exp(-_mp(lam))
            law = {lam * (t - 2 * k): (1 - a) / (1 + a) * a**k for k in range(1, t)}
            law[lam * t], law[-lam * t] = 1 / (1 + a), a**t / (1 + a)
            summed: dict[Fraction, mpmath.mpf] = {}
            for (x, p), (y, q) in itertools.product(joint.items(), law.items()):
                summed[x + y] = summed.get(x + y, 0) + p * q
            joint = summed
        want = [float(mpmath.fsum(p * -mpmath.expm1(_mp(Fraction(e) - x)) for x, p in joint.items() if x > Fraction(e)))
                for e in grid]
    err = np.max(np.abs(prof.deltas(grid) - want))
    assert err <= prof.error(grid) < 1e-13
    assert err < 1e-15


def test_a_count_and_a_long_sum_agree_with_a_30_digit_sum():
    """A count and a sum moving 10^4 steps (w = 30001): 20,002 pairs of atoms summed at 30 digits. The
    running sums over 10^4 atoms are where float64 would lose about 1e-13; the error stays at the last bit."""
    coords = [(1, F(1, 2)), (10_000, F(1, 30_001))]
    grid = [0.0, 0.3, 0.8]
    with mpmath.workdps(30):
        t, lam = coords[1]
        a, b = mpmath.exp(-_mp(coords[0][1])), mpmath.exp(-_mp(lam))
        count = [(F(1, 2), 1 / (1 + a)), (-F(1, 2), a / (1 + a))]
        ratio = (1 - b) / (1 + b)
        law = [(lam * (t - 2 * k), ratio * b**k) for k in range(1, t)] + [(lam * t, 1 / (1 + b)), (-lam * t, b**t / (1 + b))]
        want = [
            float(mpmath.fsum(p * q * -mpmath.expm1(_mp(Fraction(e) - x - y))
                              for x, p in count for y, q in law if x + y > Fraction(e)))
            for e in grid
        ]
    prof = LatticeProfile(coords)
    err = np.max(np.abs(prof.deltas(grid) - want))
    assert err <= prof.error(grid) < 1e-14
    assert err < 1e-16


def test_the_coordinate_law_is_the_clamped_noise():
    """P(k) = 1/(1+a), (1-a)/(1+a) a^k, a^t/(1+a) at L = lam (t - 2k), as summed from the mass function."""
    t, lam = 5, F(2, 7)
    block = profile._Block.coordinate(t, lam)
    law = _loss_law(t, lam)
    assert sorted(law, reverse=True) == [lam * (t - 2 * k) for k in range(t + 1)]
    for k in range(t + 1):
        assert block.p[k] == pytest.approx(float(law[lam * (t - 2 * k)]), rel=4e-16 * block.err)


@pytest.mark.parametrize(
    ("weights", "moves", "eps"),
    [
        ((1,), (1,), F(1)),  # a count
        ((4, 4), (1, 1), F(3, 2)),  # a histogram under a public size (K = 2 groups)
        ((2, 20000), (1, 10000), F(1)),  # a count and a sum in lattice units
        ((3, 29997, 29997), (1, 9999, 0), F(7, 10)),  # the sum's second cell does not move
    ],
)
def test_pure_at_the_level(weights, moves, eps):
    """lam_i = eps / w_i and t_i <= w_i: the loss never exceeds eps, so delta = 0 at eps' >= eps, > 0 below."""
    coords = [(t, eps / w) for w, t in zip(weights, moves)]
    s = sum(t * lam for t, lam in coords)
    assert s <= eps
    above = [float(s), float(s) + 1e-12, float(eps) + 1.0, math.inf]
    assert loss_profile_lattice(coords, above).tolist() == [0.0] * 4
    just_below = float(s) * (1 - 1e-6)
    assert loss_profile_lattice(coords, [just_below])[0] > 0
    # the loss is at least -S: below it nothing is cut, delta = 1 - e^{eps'}
    low = np.array([-float(s) - 0.25, -float(s) - 3.0, -math.inf])
    np.testing.assert_array_equal(loss_profile_lattice(coords, low), -np.expm1(low))


@pytest.mark.parametrize("coords", [*CASES[1:4], [(1, F(1, 2)), (10_000, F(1, 30_001))]])
def test_falls_as_eps_prime_grows(coords):
    s = float(sum(t * lam for t, lam in coords))
    prof = LatticeProfile(coords)
    grid = np.linspace(-s - 0.1, s + 0.1, 401)
    d = prof.deltas(grid)
    assert np.all((d >= 0) & (d <= 1))
    assert np.all(np.diff(d) <= prof.error(grid)), "delta must not rise with eps'"
    assert d[0] > d[200] > d[-1] == 0.0


@pytest.mark.parametrize("a", [[1.0], [0.5, 1 / 3]])
def test_tends_to_the_laplace_profile(a):
    """lam -> 0 with t lam = a fixed: the discrete loss tends to the Laplace one, with an error of order lam^2."""
    grid = np.linspace(-sum(a), sum(a), 41)
    laplace = loss_profile_l1(a, grid)
    gaps = []
    for t in (10, 100, 1000):
        coords = [(t, Fraction(ai).limit_denominator(1000) / t) for ai in a]
        gaps.append(np.max(np.abs(loss_profile_lattice(coords, grid) - laplace)))
    assert gaps[0] > 50 * gaps[1] > 2500 * gaps[2]
    assert gaps[2] < 1e-6


def test_large_shapes_against_the_laplace_profile():
    """A count and a sum moving 10^4 units, and two such sums on unrelated lattices: the sum is Laplace
    to within about lam^2, so delta is the count's two atoms times the Laplace profile, to 1e-8."""
    grid = np.linspace(0.0, 1.0, 21)
    lam, b = F(1, 2), F(1, 20_003)  # the sum's lam t = 10^4 / 20003, about 1/2
    a = float(b * 10_000)
    got = loss_profile_lattice([(1, lam), (10_000, b)], grid)
    alpha = math.exp(-float(lam))
    want = (loss_profile_l1([a], grid - float(lam)) + alpha * loss_profile_l1([a], grid + float(lam))) / (1 + alpha)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    b1, b2 = F(1, 20_011), F(1, 20_021)  # coprime weights: no common lattice below 4e8 atoms
    got = loss_profile_lattice([(10_000, b1), (10_000, b2)], grid)
    want = loss_profile_l1([float(b1 * 10_000), float(b2 * 10_000)], grid)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


@pytest.mark.parametrize(
    ("coords", "seed"),
    [
        ([(1, F(1, 2))], 11),
        ([(2, F(1, 3)), (3, F(1, 5))], 12),
    ],
)
@pytest.mark.statistical
def test_agrees_with_the_engine_sampler(coords, seed):
    """100,000 draws per coordinate (25,000 at the quick size of GRADUAL_MC) from ``lattice.sample`` (fixed seed), the loss computed from them;
    agreement within 5 standard errors at 4 points (false alarm about 2e-6 under the normal approximation)."""
    n = mc.size(full=100_000, quick=25_000)
    rng = random.Random(seed)
    loss = np.zeros(n)
    for t, lam in coords:
        y = lattice.sample(lam, n, rng)
        loss += float(lam) * (np.abs(y - t) - np.abs(y))
    s = float(sum(t * lam for t, lam in coords))
    grid = [0.0, 0.25 * s, 0.5 * s, 0.75 * s]
    exact = loss_profile_lattice(coords, grid)
    for x, e in zip(exact, grid):
        f = -np.expm1(np.minimum(e - loss, 0.0))
        mean, se = f.mean(), f.std() / math.sqrt(n)
        assert abs(x - mean) <= 5 * se, (coords, e, x, mean, se)


def test_common_shapes_are_quick():
    """A count, a public-size histogram, a count with a sum (w = 30001, t = 10^4) and two grouped sums
    (t = 10^4): 42 points each, well under a second in all (a generous 5 s bound for a loaded machine)."""
    import time

    grid = np.linspace(0.0, 1.0, 42)
    shapes = [
        [(1, F(1))],
        [(1, F(1, 2)), (1, F(1, 2))],
        [(1, F(1, 2)), (10_000, F(1, 30_001))],
        [(10_000, F(1, 20_000)), (10_000, F(1, 20_000))],
    ]
    start = time.perf_counter()
    for coords in shapes:
        prof = LatticeProfile(coords)
        assert prof.work == 0  # two coordinates or fewer: no convolution at all
        d = prof.deltas(grid)
        assert d[0] > d[21] > d[-1] == 0.0
        assert prof.error(grid) < 1e-14
    assert time.perf_counter() - start < 5


def test_too_large_is_refused_not_approximated(monkeypatch):
    # three unrelated lattices: any two would need over 2e6 atoms
    with pytest.raises(ProfileTooLarge, match="atoms"):
        LatticeProfile([(1000, F(1, 1009)), (1000, F(1, 1013)), (1000, F(1, 1019))])
    with pytest.raises(ProfileTooLarge):
        LatticeProfile([(profile.MAX_ATOMS, F(1, 10**7))])
    monkeypatch.setattr(profile, "MAX_WORK", 10**7)  # three sums: one 10^4 x 10^4 convolution
    with pytest.raises(ProfileTooLarge, match="multiply-adds"):
        LatticeProfile([(10_000, F(1, 30_000))] * 3)
    assert not issubclass(ProfileTooLarge, ValueError)  # not a caller's mistake


@pytest.mark.parametrize(
    "coords",
    [[(1, 0.5)], [(-1, F(1))], [(True, F(1))], [(1.0, F(1))], [(1, F(0))], [(1,)], [3]],
)
def test_bad_input_is_value_error(coords):
    with pytest.raises(ValueError):
        LatticeProfile(coords)
    with pytest.raises(ValueError):
        loss_profile_lattice([(1, F(1))], [float("nan")])


def test_no_moving_coordinate_has_no_loss():
    d = loss_profile_lattice([(0, F(1))], [-1.0, 0.0, 1.0])
    assert d.tolist() == [-math.expm1(-1.0), 0.0, 0.0]
