"""What the lattice path accepts and refuses, and its accuracy figures.

Levels must be exact (a float would make the coins inexact): ``Fraction``,
``Decimal``, ``int`` or a decimal string, positive and within the engine's
range; every step checks their order per coordinate; noise must be integer.
``error_bound`` is the exact quantile of ``|V|``, checked against the tail
``P(|V| > t) = 2 alpha^{t+1} / (1 + alpha)`` at 60 digits.
"""

import math
from decimal import Decimal
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

from releases.engine import lattice

from . import lattice_laws as laws
from .lattice_checks import bits_only

NOISE = np.array([0, 3, -2])


def _rng():
    return bits_only(1)


@pytest.mark.parametrize(
    "bad",
    [0.5, 1.0, np.float64(0.5), True, 0, -1, F(0), F(-1, 2), "0", "-0.5", Decimal("NaN"), "inf", "abc", None,
     F(1, 10**16), 10**6 + 1],
)
def test_bad_levels_are_refused_everywhere(bad):
    good = F(1)
    with pytest.raises(ValueError):
        lattice.sample(bad, 3, _rng())
    with pytest.raises(ValueError):
        lattice.relax(NOISE, bad, F(2), _rng())
    with pytest.raises(ValueError):
        lattice.tighten(NOISE, F(2), bad, _rng())
    with pytest.raises(ValueError):
        lattice.bridge(NOISE, good, NOISE, F(3), bad, _rng())
    with pytest.raises(ValueError):
        lattice.step(bad, [1, 1, 1], _rng())
    with pytest.raises(ValueError):
        lattice.error_bound(bad)


def test_a_float_among_per_coordinate_levels_is_refused():
    with pytest.raises(ValueError, match="never a float"):
        lattice.relax(NOISE, [F(1), 0.5, F(1)], F(2), _rng())
    with pytest.raises(ValueError, match="never a float"):
        lattice.sample(np.array([F(1), 0.25], dtype=object), 2, _rng())


def test_exact_forms_of_one_level_draw_the_same_noise():
    """``1/2`` as a Fraction, a Decimal and a string is one level: same bits, same noise."""
    draws = [lattice.sample(level, 200, bits_only(7)) for level in (F(1, 2), Decimal("0.5"), "0.5", " 0.50 ")]
    assert all(np.array_equal(draws[0], d) for d in draws[1:])
    ints = [lattice.sample(level, 200, bits_only(7)) for level in (2, np.int64(2), F(2), "2")]
    assert all(np.array_equal(ints[0], d) for d in ints[1:])


def test_levels_must_be_in_order_for_every_coordinate():
    with pytest.raises(ValueError, match="level_to > level_from"):
        lattice.relax(NOISE, F(1), F(1), _rng())
    with pytest.raises(ValueError, match="level_to > level_from"):
        lattice.relax(NOISE, [F(1), F(1), F(3)], [F(2), F(2), F(2)], _rng())
    with pytest.raises(ValueError, match="level_to < level_from"):
        lattice.tighten(NOISE, F(1), F(2), _rng())
    with pytest.raises(ValueError, match="level_to < level_from"):
        lattice.tighten(NOISE, F(2), [F(1), F(2), F(1)], _rng())
    for lo, mid, hi in ((1, 1, 3), (1, 3, 3), (2, 1, 3), (1, 4, 3), (3, 2, 1)):
        with pytest.raises(ValueError, match="level_lo < level_mid < level_hi"):
            lattice.bridge(NOISE, lo, NOISE, hi, mid, _rng())
    with pytest.raises(ValueError, match="level_lo < level_mid < level_hi"):
        lattice.bridge(NOISE, 1, NOISE, 3, [2, 2, 3], _rng())


@pytest.mark.parametrize(
    "noise",
    [np.array([1.0, 2.0]), [1.0, 2.0], np.array([1, 2.5], dtype=object), np.array([True, False]), ["1", "2"],
     np.array([[1, 2], [3, 4]])],
    ids=["float array", "float list", "object array with a float", "booleans", "strings", "two-dimensional"],
)
def test_noise_must_be_a_flat_integer_array(noise):
    for call in (
        lambda: lattice.relax(noise, 1, 2, _rng()),
        lambda: lattice.tighten(noise, 2, 1, _rng()),
        lambda: lattice.bridge(noise, 1, np.array([0, 0]), 3, 2, _rng()),
        lambda: lattice.bridge(np.array([0, 0]), 1, noise, 3, 2, _rng()),
    ):
        with pytest.raises(ValueError):
            call()


def test_integer_noise_of_any_integer_type_is_accepted():
    for noise in ([0, 3, -2], np.array([0, 3, -2], dtype=np.int32), np.array([0, 3, -2], dtype=object)):
        out = lattice.relax(noise, 1, 2, _rng())
        assert out.dtype == np.int64 and out.shape == (3,)


def test_lengths_must_match():
    with pytest.raises(ValueError, match="noise_lo has 3 values and noise_hi 2"):
        lattice.bridge(NOISE, 1, NOISE[:2], 3, 2, _rng())
    with pytest.raises(ValueError, match="2 levels for 3 coordinates"):
        lattice.relax(NOISE, [F(1), F(1)], 2, _rng())
    with pytest.raises(ValueError, match="4 levels for 3 coordinates"):
        lattice.sample([1, 1, 1, 1], 3, _rng())
    for size in (-1, 2.0, True, "3"):
        with pytest.raises(ValueError, match="size"):
            lattice.sample(1, size, _rng())


def test_weights_must_be_positive_integers():
    for weights in ([1, 0], [1, 2.0], [True], [-3]):
        with pytest.raises(ValueError, match="weights"):
            lattice.levels_for(1, weights)
    assert lattice.levels_for("0.3", [1, 3]) == [F(3, 10), F(1, 10)]


def _tail(level, t: int):
    """``P(|V| > t) = 2 alpha^{t+1} / (1 + alpha)`` at 60 digits."""
    with mpmath.workdps(60):
        lam = mpmath.mpf(F(level).numerator) / F(level).denominator
        alpha = mpmath.exp(-lam)
        return 2 * alpha ** (t + 1) / (1 + alpha)


@pytest.mark.parametrize("level", [F(1, 10**5), F(1, 1000), F(1, 2), 1, 3, F(1, 3), 40])
@pytest.mark.parametrize("confidence", [F(1, 2), F(9, 10), F(95, 100), F(99, 100), F(999_999, 1_000_000)])
def test_error_bound_is_the_smallest_t_the_exact_tail_allows(level, confidence):
    t = lattice.error_bound(level, confidence)
    miss = mpmath.mpf(confidence.denominator - confidence.numerator) / confidence.denominator
    assert _tail(level, t) <= miss
    assert t == 0 or _tail(level, t - 1) > miss


def test_tail_probability_is_the_exact_tail_and_confidence_is_checked():
    """The display figure ``tail_probability`` agrees with the tail at 60 digits and with the
    reference law's mass outside ``[-t, t]``; a confidence outside (0, 1) is refused."""
    for level in (F(1, 2), 1, F(1, 1000)):
        for t in (0, 5, 100):
            exact = float(_tail(level, t))
            assert lattice.tail_probability(level, t) == pytest.approx(exact, rel=1e-12)
            mass_inside = math.exp(laws.dlap(level).log_mass(-t, t))
            assert lattice.tail_probability(level, t) == pytest.approx(1 - mass_inside, rel=1e-9, abs=1e-15)
    assert lattice.tail_probability(1, -1) == 1.0
    for bad in (0, 1, F(3, 2), -0.5):
        with pytest.raises(ValueError, match="confidence"):
            lattice.error_bound(1, bad)
