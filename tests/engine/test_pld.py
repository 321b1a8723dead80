"""Privacy-loss distributions (``releases.engine.pld``): composition is an upper bound and tight.

The reference for ``k`` pure ``eps0``-DP listings is exact: their worst case is ``k`` randomised
responses, whose loss is ``eps0 (2B - k)`` with ``B`` binomial, so ``delta(eps)`` is a finite sum
(mpmath, 50 digits); the PLD's convolution must lie above it and within a millionth of it.
"""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest

from releases.engine import pld


def _exact_pure(k: int, eps0: float, eps: float) -> float:
    with mpmath.workdps(50):
        p = mpmath.e ** eps0 / (1 + mpmath.e ** eps0)
        total = mpmath.mpf(0)
        for b in range(k + 1):
            loss = eps0 * (2 * b - k)
            if loss > eps:
                total += mpmath.binomial(k, b) * p**b * (1 - p) ** (k - b) * (1 - mpmath.e ** (eps - loss))
        return float(total)


@pytest.mark.parametrize("k, eps0, eps", [(3, 1.0, 1.5), (10, 0.5, 2.0), (40, 0.1, 1.5), (40, 0.25, 4.0)])
def test_pure_listings_compose_to_the_exact_binomial_figure_from_above(k, eps0, eps):
    ours, exact = pld.self_compose(pld.pure(eps0), k).delta(eps), _exact_pure(k, eps0, eps)
    assert exact <= ours <= exact * (1 + 1e-6) + 1e-18, (ours, exact)


def test_a_hundred_listings_at_0_1_compose_to_about_5_6_at_delta_1e_8_not_10():
    composed = pld.self_compose(pld.pure(0.1), 100)
    eps = composed.epsilon(1e-8)
    assert 5.5 < eps < 5.7
    assert _exact_pure(100, 0.1, eps) <= 1e-8 < _exact_pure(100, 0.1, eps - 0.01)


def test_losses_rounded_down_would_be_caught(monkeypatch):
    """The mutation: each loss rounded down to the grid cell below it (an optimistic figure)."""
    import math

    monkeypatch.setattr(pld, "_cell", lambda loss: math.floor(loss / pld.GRID - 1e-9))
    ours = pld.self_compose(pld.pure(0.5), 10).delta(2.0)
    monkeypatch.undo()
    assert ours < _exact_pure(10, 0.5, 2.0)
    assert pld._cell(0.5) * pld.GRID >= 0.5 and (pld._cell(0.5) - 1) * pld.GRID < 0.5


def test_skellam_listings_compose_as_one_release_of_all_their_shifts():
    """Two Skellam listings of one coordinate each at the same time compose to exactly the law of
    one release whose shift vector holds both: the composition is the same convolution."""
    one = pld.skellam(F(20), [1])
    both = pld.compose(one, one)
    assert both.delta(1.0) == pld.skellam(F(20), {1: 2}).delta(1.0)


def test_a_pure_listing_adds_its_eps_to_a_skellam_listings_profile_at_most():
    """Basic composition bounds the tight one: with an ``eps2``-DP listing beside it, the pair's
    ``delta(eps1 + eps2)`` is at most the Skellam listing's ``delta(eps1)``."""
    s = pld.skellam(F(30), [1, 1])
    together = pld.compose(s, pld.pure(0.5))
    for eps1 in (0.3, 0.8, 1.5):
        assert together.delta(eps1 + 0.5) <= s.delta(eps1)
        assert together.delta(eps1) >= s.delta(eps1)  # another release never lowers what is learnt
