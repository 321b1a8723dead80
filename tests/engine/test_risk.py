"""Privacy at risk and the compensation cost model (docs/mathematics.md section 7, ``releases/engine/risk.py``).

Checked against the privacy-at-risk paper (Dandekar, Basu and Bressan): the
worked example of section 5.3, the points of figures 9-11, Theorem 12 by
numerical integration and Monte Carlo, Theorem 9, and the sampled sensitivity
of section 4.2 on queries whose sensitivity law is known exactly.
"""

import math
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, optimize, special

from releases.engine import risk as risk_module
from releases.engine.risk import (
    SampledSensitivity,
    compensation_at_risk,
    compensation_dp,
    composition_at_risk,
    eps_at_risk,
    gamma_at_risk,
    optimal_eps,
    sampled_sensitivity,
)

from tests import mc

from .laws import binomial_close

ROOT = Path(__file__).resolve().parents[2]


def advanced_composition(eps0, k, delta):
    """Dwork and Roth 2014, Theorem 3.20, in the form of the paper's Theorem 9 with gamma = 0."""
    return eps0 * math.sqrt(2 * k * math.log(1 / delta)) + k * eps0 * (math.exp(eps0) - 1)


def equation_10(eps, eps0):
    """Left minus right side of the paper's equation 10 (k = 1, c = 1, E_min = 0)."""
    return 1 / eps - math.log(1 - (1 - math.exp(eps)) / eps**2) - 1 / eps0


# --------------------------------------------------------------------------
# the worked example of section 5.3 and figures 9-11


def test_section_5_3_budget_under_dp_is_74434_40(report):
    """100 people, E = 5500, eps0 = 0.5: the DP budget 100 * 5500 * e^{-2} is $74434.40 (the paper truncates 74434.4058)."""
    total = 100 * compensation_dp(0.5, 5500)
    report(f"section 5.3 DP budget: {total:.6f}")
    assert total == pytest.approx(100 * 5500 * math.exp(-2.0), rel=1e-14)
    assert abs(total - 74434.40) < 0.01


def test_section_5_3_optimal_privacy_at_risk_and_saving(report):
    """The cheapest level is eps ~ 0.274 with a budget of ~$37805.86, saving ~$36628.53."""
    eps, cost = optimal_eps(0.5, 5500)
    assert isinstance(eps, float) and isinstance(cost, float)
    dp_total, par_total = 100 * compensation_dp(0.5, 5500), 100 * cost
    saving = dp_total - par_total
    report(
        f"section 5.3: eps_min = {eps!r}, gamma = {gamma_at_risk(eps, 0.5)!r}",
        f"section 5.3: budget {par_total:.4f} (paper 37805.86), saving {saving:.4f} (paper 36628.532)",
    )
    assert abs(eps - 0.274) <= 0.001
    assert abs(par_total - 37805.86) < 0.01
    # the paper's saving is the difference of its rounded budgets, give or take a few cents
    assert abs(saving - 36628.53) < 0.05
    assert cost == pytest.approx(compensation_at_risk(eps, 0.5, 5500), rel=1e-14)


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0])
def test_optimum_solves_equation_10(eps0):
    """For k = 1, c = 1, E_min = 0 the minimiser is the root of equation 10 (found independently by brentq)."""
    eps, _ = optimal_eps(eps0, 5500)
    assert abs(equation_10(eps, eps0)) < 1e-6
    root = optimize.brentq(equation_10, 1e-3 * eps0, eps0 * (1 - 1e-12), args=(eps0,), xtol=1e-15)
    assert eps == pytest.approx(root, abs=1e-7)


@pytest.mark.parametrize(
    "eps0,paper_eps,paper_gamma", [(0.1, 0.08, 0.80), (0.5, 0.27, 0.61), (1.0, 0.42, 0.54)]
)
@pytest.mark.parametrize("E", [1.0, 5500.0])
def test_figures_9_to_11_optimal_eps_and_risk(eps0, paper_eps, paper_gamma, E, report):
    """Figures 9-11: L^1_{eps0} satisfies (eps_min, gamma) privacy at risk, to the paper's two decimals, for any E."""
    eps, _ = optimal_eps(eps0, E)
    gamma = gamma_at_risk(eps, eps0)
    report(f"eps0 = {eps0}: eps_min = {eps!r}, gamma = {gamma!r} (paper ({paper_eps}, {paper_gamma}))")
    assert round(eps, 2) == paper_eps
    assert round(gamma, 2) == paper_gamma


# --------------------------------------------------------------------------
# gamma_at_risk (Theorem 12) and eps_at_risk (equation 4)


def bessel_integral(x, k):
    """int_0^x t^{k-1/2} K_{k-1/2}(t) dt by adaptive quadrature (the unnormalised CDF of T)."""
    value, _ = integrate.quad(
        lambda t: t ** (k - 0.5) * special.kv(k - 0.5, t), 0.0, x, epsabs=0.0, epsrel=1e-13, limit=200
    )
    return value


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_gamma_matches_numerical_integration_of_the_bessel_density(k):
    """The exact finite mixture agrees with quad of t^{k-1/2} K_{k-1/2}(t) (a ratio of integrals) to 1e-8."""
    for eps0 in (0.3, 1.0, 2.5):
        denominator = bessel_integral(eps0, k)
        for frac in (0.01, 0.2, 0.5, 0.9):
            eps = frac * eps0
            expected = bessel_integral(eps, k) / denominator
            assert gamma_at_risk(eps, eps0, k) == pytest.approx(expected, abs=1e-8, rel=1e-8)


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_gamma_matches_monte_carlo_of_a_sum_of_laplace(k):
    """T is |L_1 + ... + L_k| for iid Laplace(1): among 10^6 draws with T <= eps0, the share with T <= eps is gamma."""
    rng = np.random.default_rng(1000 + k)
    t = np.abs(rng.laplace(0.0, 1.0, (1_000_000, k)).sum(axis=1))
    for eps0 in (0.5, 1.0, 3.0):
        inside = t <= eps0
        n = int(inside.sum())
        for frac in (0.1, 0.5, 0.8):
            hits = int((t[inside] <= frac * eps0).sum())
            assert binomial_close(hits, n, gamma_at_risk(frac * eps0, eps0, k), sigmas=5.0)


@pytest.mark.parametrize("k", [50, 200])
def test_gamma_for_large_k_matches_monte_carlo_of_gamma_differences(k):
    """Large k works (weights in log space): T is also |G_1 - G_2| for iid Gamma(k, 1) (Lemma 22)."""
    rng = np.random.default_rng(2000 + k)
    t = np.abs(rng.gamma(k, 1.0, 2_000_000) - rng.gamma(k, 1.0, 2_000_000))
    for eps0 in (1.0, 5.0):
        inside = t <= eps0
        n = int(inside.sum())
        for frac in (0.1, 0.5, 0.9):
            g = gamma_at_risk(frac * eps0, eps0, k)
            assert math.isfinite(g) and 0 < g < 1
            assert binomial_close(int((t[inside] <= frac * eps0).sum()), n, g, sigmas=5.0)


def test_gamma_k1_is_the_closed_form_and_eps_at_risk_inverts_it():
    """k = 1: gamma = (1 - e^-eps)/(1 - e^-eps0) (T ~ Exp(1)), and equation 4 is its inverse both ways."""
    eps0 = np.array([0.1, 0.5, 1.0, 3.0])[:, None]
    eps = eps0 * np.linspace(0.0, 1.0, 11)[None, :]
    gamma = gamma_at_risk(eps, eps0)
    np.testing.assert_allclose(gamma, (1 - np.exp(-eps)) / (1 - np.exp(-eps0)), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(eps_at_risk(gamma, eps0), eps, rtol=1e-12, atol=1e-15)
    g = np.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(gamma_at_risk(eps_at_risk(g, 0.7), 0.7), g, rtol=1e-12, atol=1e-15)
    assert eps_at_risk(1.0, 0.7) == 0.7 and eps_at_risk(0.0, 0.7) == 0.0


@pytest.mark.parametrize("k", [1, 2, 7, 200])
def test_gamma_increases_in_eps_and_is_one_from_eps0(k):
    """gamma rises strictly from 0 at eps = 0 to 1 at eps = eps0, and stays 1 above eps0."""
    eps = np.linspace(0.0, 2.0, 401)
    gamma = gamma_at_risk(eps, 1.0, k)
    below = eps < 1.0
    assert gamma[0] == 0.0
    assert np.all(np.diff(gamma[below]) > 0)
    assert gamma_at_risk(1.0, 1.0, k) == 1.0
    assert np.all(gamma[~below] == 1.0)


def test_larger_k_gives_smaller_gamma_not_larger(report):
    """The paper (section 4.1) says gamma grows with k at fixed (eps, eps0). It does not: it falls towards eps/eps0.

    T has a decreasing density (a sum of Laplace laws is unimodal at 0), so
    gamma >= eps/eps0; as k grows that density flattens on [0, eps0] and gamma
    decreases to eps/eps0. What grows with k is the complement 1 - gamma.
    """
    ks = [1, 2, 3, 5, 10, 50, 200]
    for eps0 in (0.5, 1.0, 2.0):
        for frac in (0.1, 0.5, 0.9):
            gammas = np.array([gamma_at_risk(frac * eps0, eps0, k) for k in ks])
            assert np.all(np.diff(gammas) < 0), (eps0, frac, gammas)
            assert np.all(gammas > frac)
            assert gammas[-1] - frac < 1e-3  # close to the flat limit eps/eps0 at k = 200
    report(
        "gamma(0.5, 1.0; k) for k = 1, 2, 10, 200: "
        + ", ".join(f"{gamma_at_risk(0.5, 1.0, k):.6f}" for k in (1, 2, 10, 200))
    )


def test_gamma_is_vectorised_and_broadcasts():
    """Arrays in, arrays out of the broadcast shape; scalars give Python floats."""
    out = gamma_at_risk(np.array([[0.1], [0.2]]), np.array([0.5, 1.0, 2.0]), k=3)
    assert out.shape == (2, 3)
    assert out[1, 0] == pytest.approx(gamma_at_risk(0.2, 0.5, 3), rel=1e-15)
    assert type(gamma_at_risk(0.1, 0.5, 2)) is float
    assert eps_at_risk(np.array([0.2, 0.6]), 1.0).shape == (2,)


# --------------------------------------------------------------------------
# the cost model (equations 8 and 9)


def test_compensation_dp_is_equation_8():
    """E_min + E e^{-c/eps}: E_min at eps = 0, increasing, below E_min + E."""
    eps = np.array([0.0, 0.1, 0.5, 1.0, 10.0])
    out = compensation_dp(eps, 200.0, c=2.0, E_min=5.0)
    np.testing.assert_allclose(out[1:], 5.0 + 200.0 * np.exp(-2.0 / eps[1:]), rtol=1e-15)
    assert out[0] == 5.0
    assert np.all(np.diff(out) > 0) and np.all(out < 205.0)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("c", [1.0, 2.0, 5.0])
def test_compensation_at_risk_is_convex_where_lemma_16_holds(eps0, c, k):
    """Second differences on a grid over (0, eps0] are >= 0 (c >= eps0 here; see the next test for c < eps0)."""
    eps = np.linspace(eps0 / 500, eps0, 500)
    v = compensation_at_risk(eps, eps0, 1.0, c=c, k=k)
    d2 = v[2:] - 2 * v[1:-1] + v[:-2]
    assert d2.min() >= -1e-14 * v.max()
    assert compensation_at_risk(eps0, eps0, 1.0, c=c, k=k) == compensation_dp(eps0, 1.0, c=c)


@pytest.mark.parametrize("eps0,c", [(1.0, 0.5), (0.5, 0.2), (2.0, 1.0), (5.0, 1.0)])
def test_convexity_fails_for_small_c_but_the_cost_stays_unimodal(eps0, c):
    """Lemma 16 is not true in general: for k = 1 the second derivative at eps0 is

        E e^{-c/eps0} c/eps0^2 [2 e^{-eps0}/(1 - e^{-eps0}) + (c - 2 eps0)/eps0^2],

    negative for these (eps0, c). The cost still falls then rises (one minimum),
    which is what optimal_eps relies on, and it finds that minimum.
    """
    second = 2 * math.exp(-eps0) / -math.expm1(-eps0) + (c - 2 * eps0) / eps0**2
    assert second < 0
    eps = np.linspace(eps0 / 2000, eps0, 2000)
    v = compensation_at_risk(eps, eps0, 1.0, c=c)
    d2 = v[2:] - 2 * v[1:-1] + v[:-2]
    assert d2[-1] < 0  # concave next to eps0: the grid sees it too
    d = np.sign(np.diff(v))
    assert np.sum(d[1:] != d[:-1]) == 1 and d[0] < 0 and d[-1] > 0
    _, cost = optimal_eps(eps0, 1.0, c=c)
    assert cost <= v.min()


@pytest.mark.parametrize("k", [1, 2, 10])
@pytest.mark.parametrize("eps0,c", [(0.1, 1.0), (0.5, 1.0), (1.0, 2.0), (3.0, 0.5), (0.2, 5.0)])
def test_optimal_eps_cost_is_the_minimum(eps0, c, k):
    """optimal_eps returns plain floats, its cost is equation 9 at its eps, and no grid point is cheaper."""
    eps, cost = optimal_eps(eps0, 1000.0, c=c, k=k)
    assert type(eps) is float and type(cost) is float
    assert 0 < eps < eps0
    assert cost == compensation_at_risk(eps, eps0, 1000.0, c=c, k=k)
    grid = np.linspace(eps0 / 3000, eps0, 3000)
    assert cost <= np.min(compensation_at_risk(grid, eps0, 1000.0, c=c, k=k)) * (1 + 1e-12)
    assert cost < compensation_dp(eps0, 1000.0, c=c)


def test_e_min_shifts_the_cost_not_the_argmin():
    """E_min is paid whatever the level: it adds to every cost and leaves eps_min alone."""
    for k in (1, 4):
        eps_a, cost_a = optimal_eps(0.5, 5500, E_min=0.0, k=k)
        eps_b, cost_b = optimal_eps(0.5, 5500, E_min=250.0, k=k)
        assert eps_b == pytest.approx(eps_a, abs=1e-7)
        assert cost_b == pytest.approx(cost_a + 250.0, rel=1e-12)
        grid = np.linspace(0.01, 0.5, 50)
        np.testing.assert_allclose(
            compensation_at_risk(grid, 0.5, 5500, E_min=250.0, k=k),
            compensation_at_risk(grid, 0.5, 5500, k=k) + 250.0,
            rtol=1e-14,
        )


def test_optimal_eps_returns_eps0_when_nothing_is_cheaper():
    """With E = 0 every level costs E_min: the answer is eps0 itself."""
    assert optimal_eps(0.5, 0.0, E_min=3.0) == (0.5, 3.0)


# --------------------------------------------------------------------------
# composition (Theorem 9)


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_composition_with_gamma_zero_is_advanced_composition(eps0, k):
    """gamma = 0 gives eps0 sqrt(2k ln 1/delta) + k eps0 (e^eps0 - 1), whatever eps."""
    for eps in (0.5 * eps0, eps0):
        assert composition_at_risk(eps0, eps, 0.0, k, 1e-5) == pytest.approx(
            advanced_composition(eps0, k, 1e-5), rel=1e-14
        )
    expected = eps0 * math.sqrt(2 * k * math.log(1e6)) + k * (
        0.3 * (eps0 / 2) * math.expm1(eps0 / 2) + 0.7 * eps0 * math.expm1(eps0)
    )
    assert composition_at_risk(eps0, eps0 / 2, 0.3, k, 1e-6) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [10, 100])
def test_composition_with_optimal_privacy_at_risk_beats_advanced_composition(eps0, k, report):
    """Figure 12: with the cost-optimal (eps, gamma) the composed level is below advanced composition."""
    eps, _ = optimal_eps(eps0, 1.0)
    gamma = gamma_at_risk(eps, eps0)
    par = composition_at_risk(eps0, eps, gamma, k, 1e-5)
    adv = advanced_composition(eps0, k, 1e-5)
    report(f"eps0 = {eps0}, k = {k}: basic {k * eps0:.3f}, advanced {adv:.3f}, at risk {par:.3f}")
    assert par < adv
    # the gain is k (mu_0 - mu) with mu_0 - mu = gamma (eps0 (e^eps0 - 1) - eps (e^eps - 1)) > 0
    assert adv - par == pytest.approx(
        k * gamma * (eps0 * math.expm1(eps0) - eps * math.expm1(eps)), rel=1e-9
    )


# --------------------------------------------------------------------------
# sampled sensitivity (section 4.2, Definition 14, Theorem 13)


def test_count_query_has_sampled_sensitivity_zero(rng):
    """Neighbours here have the same size (one record replaced), so a count never changes."""
    s = sampled_sensitivity(len, np.arange(30.0), 200, 1.0, rng)
    assert s == 0.0 and np.all(s.samples == 0.0)


def test_clamped_sum_samples_lie_in_unit_interval_and_quantile_one_is_the_max(rng):
    """For data in [0, 1] a clamped sum moves by |x_new - y_new| <= 1; gamma2 = 1 gives the largest sample."""
    data = rng.random(40)
    s = sampled_sensitivity(lambda d: np.clip(d, 0.0, 1.0).sum(), data, 500, 1.0, rng, size=10)
    assert np.all((s.samples >= 0.0) & (s.samples <= 1.0))
    assert float(s) == s.samples.max() and s.samples.max() > 0.5
    assert np.all(np.diff(s.samples) >= 0)


@pytest.mark.statistical
def test_mean_of_uniform_data_has_the_exact_sensitivity_quantiles(report):
    """Mean of 999 records of (a fine grid of) uniform data: S = |U1 - U2| / 999, F(s) = 1 - (1 - 999 s)^2.

    So F^{-1}(g) = (1 - sqrt(1 - g)) / 999. With 20000 pairs (5000 at the quick size of
    GRADUAL_MC) the empirical CDF is within sqrt(9 / (2 pairs)) of F (0.015 at 20000, 0.030 at
    5000) except with probability 2 e^{-9} (DKW); the grid of 1000 points moves the law by at most
    1/1000.
    """
    n, size, pairs = 1000, 999, mc.size(full=20000, quick=5000)
    data = (np.arange(n) + 0.5) / n
    rng = np.random.default_rng(20240605)
    tol_f, tol_grid = math.sqrt(9 / (2 * pairs)), 1.0 / n

    def exact_quantile(g):
        return (1 - math.sqrt(1 - min(max(g, 0.0), 1.0))) / size

    for g in (0.05, 0.25, 0.5, 0.75, 0.9, 0.99):
        s = sampled_sensitivity(np.mean, data, pairs, g, np.random.default_rng(rng.integers(2**32)))
        lo = exact_quantile(g - tol_f) - tol_grid / size
        hi = exact_quantile(g + tol_f) + tol_grid / size
        assert lo <= s <= hi, (g, float(s), exact_quantile(g))
        if g == 0.5:
            cdf = 1 - (1 - np.minimum(s.samples * size, 1.0)) ** 2
            ecdf = np.arange(1, pairs + 1) / pairs
            ks = float(np.max(np.abs(ecdf - cdf)))
            report(f"mean of uniform: median sampled sensitivity {float(s):.3e} vs exact {exact_quantile(0.5):.3e}, KS {ks:.4f}")
            assert ks <= tol_f + tol_grid


def test_quantile_is_the_smallest_sample_with_ecdf_at_least_gamma2():
    """Definition 14: F_n^{-1}(gamma2) = the (ceil(gamma2 n))-th smallest sample, exactly.

    With n = 25, 0.28 * 25 and 0.56 * 25 round to just above 7 and 14 in floating
    point: a bare ceil would pick the next sample.
    """
    data = np.random.default_rng(5).random(500)  # continuous values: distinct sensitivities
    cases = [(0.28, 7), (0.56, 14), (0.3, 8), (0.04, 1), (0.01, 1), (0.5, 13), (0.96, 24), (0.97, 25), (1.0, 25)]
    for g, rank in cases:
        s = sampled_sensitivity(np.sum, data, 25, g, np.random.default_rng(11), size=5)
        assert np.unique(s.samples).size == 25
        assert float(s) == s.samples[rank - 1], (g, rank)
        assert np.mean(s.samples <= float(s)) >= g > np.mean(s.samples < float(s))


def test_pairs_are_neighbouring_datasets_drawn_without_replacement():
    """Each pair: size - 1 shared records plus one distinct record each, no record twice, rows kept whole."""
    data = np.stack([np.arange(12.0), 100 + np.arange(12.0)], axis=1)  # records are rows
    seen = []

    def query(d):
        assert d.shape == (7, 2) and np.all(d[:, 1] - d[:, 0] == 100)
        seen.append(d[:, 0].copy())
        return d[:, 0].sum()

    s = sampled_sensitivity(query, data, 300, 0.5, np.random.default_rng(3), size=7)
    assert len(seen) == 600
    for x, y in zip(seen[::2], seen[1::2]):
        assert np.unique(x).size == 7 and np.unique(y).size == 7
        only_x, only_y = np.setdiff1d(x, y), np.setdiff1d(y, x)
        assert only_x.size == 1 and only_y.size == 1 and only_x[0] != only_y[0]
    assert np.all(s.samples >= 1.0)  # two distinct integer records differ by at least 1


def test_vector_query_uses_the_l1_norm():
    """A 4-bin histogram: replacing one record moves one count down and one up, so S is 0 or 2."""
    data = np.random.default_rng(8).integers(0, 4, 60)
    s = sampled_sensitivity(
        lambda d: np.bincount(d, minlength=4), data, 400, 1.0, np.random.default_rng(9)
    )
    assert set(np.unique(s.samples)) == {0.0, 2.0}
    assert s == 2.0


def test_confidence_is_the_dkw_bound_and_result_is_a_float():
    """Theorem 13 / equation 13: rho = 0.01, n = 15000 gives 1 - 2 e^{-3} = 0.90 (section 6.2)."""
    s = sampled_sensitivity(np.sum, np.arange(20.0), 15000, 0.85, np.random.default_rng(4), size=5)
    assert isinstance(s, float) and isinstance(s, SampledSensitivity)
    assert s.pairs == 15000 and s.gamma2 == 0.85 and s.rho == 0.01
    assert s.confidence == pytest.approx(1 - 2 * math.exp(-3.0), rel=1e-15)
    assert round(s.confidence, 2) == 0.90
    assert s.empirical_risk == pytest.approx(0.85 * s.confidence, rel=1e-15)
    assert s.samples.shape == (15000,)
    # usable in arithmetic as a plain float, and survives pickling
    assert 2 * s == 2 * float(s) and s / 4 + 1 == float(s) / 4 + 1 and type(s + 0) is float
    assert math.isclose(np.sqrt(s), math.sqrt(float(s)))
    back = pickle.loads(pickle.dumps(s))
    assert back == s and back.confidence == s.confidence and np.array_equal(back.samples, s.samples)
    # few pairs: the DKW bound is vacuous and clamps to 0
    tiny = sampled_sensitivity(np.sum, np.arange(5.0), 10, 0.5, np.random.default_rng(0), rho=0.01)
    assert tiny.confidence == 0.0 and tiny.empirical_risk == 0.0


# --------------------------------------------------------------------------
# validation and isolation


R = np.random.default_rng(0)

BAD = [
    (lambda: gamma_at_risk(0.1, 0.0), "eps0 must be a positive"),
    (lambda: gamma_at_risk(0.1, -1.0), "eps0 must be a positive"),
    (lambda: gamma_at_risk(-0.1, 1.0), "eps must be a non-negative"),
    (lambda: gamma_at_risk(np.nan, 1.0), "NaN or infinity"),
    (lambda: gamma_at_risk(0.1, np.inf), "NaN or infinity"),
    (lambda: gamma_at_risk([0.1, np.nan], 1.0), "NaN or infinity"),
    (lambda: gamma_at_risk(0.1, 1.0, k=0), "k must be a positive integer"),
    (lambda: gamma_at_risk(0.1, 1.0, k=1.5), "k must be a positive integer"),
    (lambda: gamma_at_risk(0.1, 1.0, k=True), "k must be a positive integer"),
    (lambda: gamma_at_risk("a", 1.0), "eps must be"),
    (lambda: gamma_at_risk(np.ones(2), np.ones(3)), "do not broadcast"),
    (lambda: eps_at_risk(1.1, 1.0), "gamma must be a probability"),
    (lambda: eps_at_risk(-0.1, 1.0), "gamma must be a probability"),
    (lambda: eps_at_risk(np.nan, 1.0), "gamma must be a probability"),
    (lambda: eps_at_risk(0.5, 0.0), "eps0 must be a positive"),
    (lambda: compensation_dp(-0.1, 1.0), "eps must be a non-negative"),
    (lambda: compensation_dp(0.1, -1.0), "E must be a non-negative"),
    (lambda: compensation_dp(0.1, 1.0, c=0.0), "c must be a positive"),
    (lambda: compensation_dp(0.1, 1.0, E_min=-1.0), "E_min must be a non-negative"),
    (lambda: compensation_at_risk(0.6, 0.5, 1.0), "0 < eps <= eps0"),
    (lambda: compensation_at_risk(0.0, 0.5, 1.0), "eps must be a positive"),
    (lambda: compensation_at_risk(0.1, 0.5, 1.0, k=1.5), "k must be a positive integer"),
    (lambda: optimal_eps(0.0, 1.0), "eps0 must be a positive"),
    (lambda: optimal_eps(np.nan, 1.0), "eps0 must be a positive"),
    (lambda: optimal_eps(0.5, 1.0, c=-1.0), "c must be a positive"),
    (lambda: optimal_eps(0.5, 1.0, k=0), "k must be a positive integer"),
    (lambda: composition_at_risk(0.5, 0.2, 0.5, 10, 0.0), r"delta must be in \(0, 1\)"),
    (lambda: composition_at_risk(0.5, 0.2, 0.5, 10, 1.0), r"delta must be in \(0, 1\)"),
    (lambda: composition_at_risk(0.5, 0.2, 0.5, 10, np.nan), "delta must be"),
    (lambda: composition_at_risk(0.5, 0.2, 1.5, 10, 1e-5), "gamma must be a probability"),
    (lambda: composition_at_risk(0.5, 0.2, 0.5, 0, 1e-5), "k must be a positive integer"),
    (lambda: composition_at_risk(0.5, 0.2, 0.5, 1.5, 1e-5), "k must be a positive integer"),
    (lambda: composition_at_risk(0.5, 0.7, 0.5, 10, 1e-5), "0 < eps <= eps0"),
    (lambda: composition_at_risk(0.0, 0.0, 0.5, 10, 1e-5), "eps0 must be a positive"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 0, 0.5, R), "pairs must be a positive integer"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 10, 0.0, R), r"gamma2 must be in \(0, 1\]"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 10, 1.2, R), "gamma2 must be a probability"),
    (lambda: sampled_sensitivity(np.sum, np.arange(1.0), 10, 0.5, R), "at least 2 records"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 10, 0.5, R, size=5), "size \\+ 1 must be at most"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 10, 0.5, R, rho=0.0), "rho must be a positive"),
    (lambda: sampled_sensitivity(np.sum, np.arange(5.0), 10, 0.5, 7), "rng must be a numpy.random.Generator"),
    (lambda: sampled_sensitivity(None, np.arange(5.0), 10, 0.5, R), "query must be a callable"),
    (lambda: sampled_sensitivity(lambda d: np.nan, np.arange(5.0), 10, 0.5, R), "not finite"),
]


@pytest.mark.parametrize("call,message", BAD)
def test_bad_input_raises_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_risk_module_does_not_import_django():
    """releases.engine.risk is plain numpy/scipy, importable and testable without Django."""
    code = (
        "import sys, releases.engine.risk;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'django');"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _t_cdf_one_component_at_a_time(t, k):
    """The distribution function of T as it was first written: one gammainc call per component,
    added in the order j = 0, 1, ..."""
    weights = np.exp(risk_module._log_mixture_weights(k))
    out = np.zeros(np.shape(t))
    for j in range(k):
        if weights[j] > 0.0:
            out += weights[j] * special.gammainc(k - j, t)
    return out


@pytest.mark.parametrize("k", [2, 3, 40, 1041, 2500])
@pytest.mark.parametrize("terms", [1 << 20, 7])  # 7: the table of terms made a few columns at a time
def test_the_distribution_of_t_in_one_call_is_the_component_loop_bit_for_bit(k, terms, monkeypatch):
    monkeypatch.setattr(risk_module, "_TERMS", terms)
    rng = np.random.default_rng(32)
    for t in (0.5, np.float64(3.0), rng.uniform(0, 20, 17), rng.uniform(0, 3000, (3, 4)), np.array([]), 1e-9):
        got, want = risk_module._t_cdf(t, k), _t_cdf_one_component_at_a_time(t, k)
        assert np.shape(got) == np.shape(want)
        assert np.array_equal(got, want), (k, t)


def _optimal_eps_by_equation_9(eps0, E, c, E_min, k):
    """optimal_eps's search, every cost computed by compensation_at_risk (as it was before its cost was
    folded for speed): the reference the faster search must match float for float."""
    def cost(x):
        return compensation_at_risk(x, eps0, E, c, E_min, k)

    grid = eps0 * np.logspace(-6.0, 0.0, 241)
    grid[-1] = eps0
    values = np.asarray(cost(grid))
    best = (eps0, float(values[-1]))
    i = int(np.argmin(values))
    if values[i] < best[1]:
        best = (float(grid[i]), float(values[i]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(lambda x: float(cost(min(max(x, lo), eps0))), bounds=(lo, hi),
                                       method="bounded", options={"xatol": 1e-12 * eps0, "maxiter": 500})
        x = float(min(max(res.x, lo), eps0))
        if float(cost(x)) < best[1]:
            best = (x, float(cost(x)))
    return best


@pytest.mark.parametrize("k", [1, 3, 40])
@pytest.mark.parametrize("eps0,E,c,E_min", [(0.1, 1000.0, 1.0, 0.0), (0.5, 5500.0, 1.0, 10.0), (2.0, 1.0, 0.5, 0.0),
                                            (0.0137, 300.0, 2.0, 1.5), (1.0, 0.0, 1.0, 0.0)])
def test_optimal_eps_is_the_search_over_equation_9_exactly(eps0, E, c, E_min, k):
    """The search's cost (computed once per listing level, per release, by the worker) is equation 9 to
    the last bit: the same argmin and cost as the search computing each cost with compensation_at_risk."""
    assert optimal_eps(eps0, E, c=c, E_min=E_min, k=k) == _optimal_eps_by_equation_9(eps0, E, c, E_min, k)
