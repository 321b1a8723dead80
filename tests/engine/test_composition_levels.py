"""Composition of releases at different levels (``releases.engine.risk``): the heterogeneous advanced
composition bound and the privacy-at-risk paper's Theorem 9 carried to different levels, against
hand-computed examples and the paper's own (equal-level) formula."""

import math

import numpy as np
import pytest

from releases.engine.risk import advanced_composition, composition_at_risk, composition_at_risk_levels, gamma_at_risk


def test_advanced_composition_hand_computed():
    """Levels 0.5 and 1 at delta 1e-6: sqrt(2 ln(1e6) 1.25) = 5.87697000119..., plus
    0.5 (e^0.5 - 1) + 1 (e - 1) = 2.04264246380..., so 7.91961246500..."""
    assert advanced_composition([0.5, 1.0], 1e-6) == pytest.approx(7.919612465001107, rel=1e-13)


def test_at_risk_hand_computed():
    """eps0 = (0.5, 1), eps = 0.25 for both, gamma = (0.5, 0.2), delta 1e-6:
    mu = 0.19768349476... + 1.38882673360..., plus the same 5.87697000119..."""
    value = composition_at_risk_levels([0.5, 1.0], [0.25, 0.25], [0.5, 0.2], 1e-6)
    assert value == pytest.approx(7.463480229554621, rel=1e-13)


@pytest.mark.parametrize("eps0, k, delta", [(0.1, 1, 1e-5), (0.5, 7, 1e-6), (1.0, 40, 1e-3)])
def test_equal_levels_reduce_to_the_papers_formula(eps0, k, delta):
    """k equal releases: the paper's Theorem 9 (composition_at_risk) exactly, and with gamma 0 advanced composition."""
    eps = eps0 / 2
    gamma = gamma_at_risk(eps, eps0)
    paper = eps0 * math.sqrt(2 * k * math.log(1 / delta)) + k * (
        gamma * eps * (math.exp(eps) - 1) + (1 - gamma) * eps0 * (math.exp(eps0) - 1))
    assert composition_at_risk_levels([eps0] * k, [eps] * k, [gamma] * k, delta) == pytest.approx(paper, rel=1e-12)
    assert composition_at_risk_levels([eps0] * k, [eps] * k, [gamma] * k, delta) == pytest.approx(
        composition_at_risk(eps0, eps, gamma, k, delta), rel=1e-12)
    assert advanced_composition([eps0] * k, delta) == pytest.approx(
        composition_at_risk(eps0, eps, 0.0, k, delta), rel=1e-12)
    assert composition_at_risk_levels([eps0] * k, [eps] * k, [0.0] * k, delta) == pytest.approx(
        advanced_composition([eps0] * k, delta), rel=1e-12)


def test_risk_only_lowers_the_bound_and_order_does_not_matter():
    levels = np.array([0.1, 0.3, 0.7, 2.0])
    eps = np.minimum(levels, 0.2)
    gamma = np.array([gamma_at_risk(e, e0) for e, e0 in zip(eps, levels)])
    at_risk = composition_at_risk_levels(levels, eps, gamma, 1e-6)
    assert at_risk < advanced_composition(levels, 1e-6)
    assert at_risk == pytest.approx(composition_at_risk_levels(levels[::-1], eps[::-1], gamma[::-1], 1e-6), rel=1e-14)


@pytest.mark.parametrize("call", [
    lambda: advanced_composition([], 1e-6),
    lambda: advanced_composition([0.5, 0.0], 1e-6),
    lambda: advanced_composition([0.5], 0.0),
    lambda: advanced_composition([0.5], 1.0),
    lambda: advanced_composition([0.5], [1e-6, 1e-5]),
    lambda: advanced_composition([[0.5]], 1e-6),
    lambda: advanced_composition([float("nan")], 1e-6),
    lambda: composition_at_risk_levels([0.5], [0.6], [0.5], 1e-6),  # eps above eps0
    lambda: composition_at_risk_levels([0.5], [0.2], [1.5], 1e-6),  # gamma not a probability
    lambda: composition_at_risk_levels([0.5, 1.0], [0.2], [0.5], 1e-6),  # lengths differ
    lambda: composition_at_risk_levels([0.5], [0.2], [0.5], "x"),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


def test_ridge_query_solves_the_penalised_least_squares():
    """Against a hand-computed case and against numpy's least squares on the augmented system."""
    from releases.engine.risk import mean_query, ridge_query

    # y = 1, 2, 3 at x = 0, 1, 2 with lam = 1: (Z^T Z + P) = [[3, 3], [3, 6]], Z^T y = (6, 8): b = 2/3, b0 = 4/3
    data = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 2.0]])
    assert ridge_query(1.0)(data) == pytest.approx([4 / 3, 2 / 3], rel=1e-12)
    rng = np.random.default_rng(5)
    x, y, lam = rng.normal(size=(50, 3)), rng.normal(size=50), 2.5
    z = np.column_stack([np.ones(50), x])
    augmented = np.vstack([z, np.sqrt(lam) * np.eye(4)[1:]])
    expected = np.linalg.lstsq(augmented, np.concatenate([y, np.zeros(3)]), rcond=None)[0]
    assert ridge_query(lam)(np.column_stack([y, x])) == pytest.approx(expected, rel=1e-10)
    assert mean_query(np.array([[1.0], [2.0], [6.0]])) == 3.0
    with pytest.raises(ValueError):
        ridge_query(0.0)
