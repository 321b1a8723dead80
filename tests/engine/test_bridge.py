"""The bridge step: a level between two released ones (docs/mathematics.md section 4)."""

import numpy as np
import pytest
from scipy import stats

from releases.engine.mechanism import bridge, relax

from tests import mc

from .laws import binomial_close, corr, laplace_cdf

# Draws: 400,000 at the full size (GRADUAL_MC=full, CI), 100,000 at the quick one. Tolerances were
# set at 400,000 and widen with 1/sqrt(N) (mc.widen), so they stay as many sds wide at either size.
N = mc.size(full=400_000, quick=100_000)
pytestmark = pytest.mark.statistical
TRIPLES = [
    (0.5, 1.0, 3.0),
    (0.1, 1.0, 10.0),  # far apart
    (0.02, 0.5, 4.0),  # very far apart
    (1.0, 1.01, 1.0201),  # near
    (0.2, 0.25, 2.0),
]


@pytest.mark.parametrize("ea,ec,eb", TRIPLES)
def test_redrawn_middle_has_the_joint_law_of_two_relaxations(ea, ec, eb, rng):
    va = rng.laplace(0.0, 1.0 / ea, N)
    vc = relax(va, ea, ec, rng)
    vb = relax(vc, ec, eb, rng)
    wc = bridge(va, ea, vb, eb, ec, rng)

    # the marginal: Laplace(1/ec)
    assert stats.kstest(wc, laplace_cdf(1.0 / ec)).pvalue > 1e-3
    # the correlations with both neighbours, as the original middle level
    assert corr(va, wc) == pytest.approx(ea / ec, abs=mc.widen(0.012, full=400_000, n=N))
    assert corr(wc, vb) == pytest.approx(ec / eb, abs=mc.widen(0.012, full=400_000, n=N))
    assert corr(va, wc) == pytest.approx(corr(va, vc), abs=mc.widen(0.015, full=400_000, n=N))
    assert corr(wc, vb) == pytest.approx(corr(vc, vb), abs=mc.widen(0.015, full=400_000, n=N))
    # the probabilities of sharing a value with either neighbour
    assert binomial_close(int(np.sum(wc == va)), N, (ea / ec) ** 2)
    assert binomial_close(int(np.sum(wc == vb)), N, (ec / eb) ** 2)
    # and the increments on both sides, where they are not zero
    for new, old in ((wc - va, vc - va), (vb - wc, vb - vc)):
        assert stats.ks_2samp(new[new != 0], old[old != 0]).pvalue > 1e-3


def test_no_jump_between_means_no_jump_in_the_middle(rng):
    x = rng.laplace(0.0, 1.0, 10_000)
    assert np.array_equal(bridge(x, 0.5, x, 2.0, 1.0, rng), x)


def test_middle_between_two_fixed_values(rng):
    """Given V_a = 0 and V_b = 1: the two atoms have the weights of section 4."""
    ea, ec, eb, d = 0.5, 1.0, 2.0, 1.0
    n = mc.size(full=400_000, quick=100_000)
    v = bridge(np.zeros(n), ea, np.ones(n), eb, ec, rng)
    p, q = (ec / eb) ** 2, (ea / ec) ** 2
    k = (1 - p) * (1 - q) * ea * ec / 4
    w = {
        "b": p * (1 - q) * ea / 2 * np.exp(-ea * d),
        "a": (1 - p) * q * ec / 2 * np.exp(-ec * d),
        "beyond_b": k * np.exp(-ea * d) / (ea + ec),
        "beyond_a": k * np.exp(-ec * d) / (ea + ec),
        "between": k * (np.exp(-ea * d) - np.exp(-ec * d)) / (ec - ea),
    }
    total = sum(w.values())
    assert binomial_close(int(np.sum(v == 1.0)), n, w["b"] / total)
    assert binomial_close(int(np.sum(v == 0.0)), n, w["a"] / total)
    assert binomial_close(int(np.sum(v > 1.0)), n, w["beyond_b"] / total)
    assert binomial_close(int(np.sum(v < 0.0)), n, w["beyond_a"] / total)
    inner = v[(v > 0) & (v < 1)]
    assert binomial_close(inner.size, n, w["between"] / total)
    # between, density proportional to e^{(ec - ea) t} on [0, 1]
    g = ec - ea
    assert stats.kstest(inner, lambda t: np.expm1(g * t) / np.expm1(g * d)).pvalue > 1e-3
    # beyond either end, an exponential of rate ea + ec
    assert stats.kstest(v[v > 1] - 1, stats.expon(scale=1 / (ea + ec)).cdf).pvalue > 1e-3
    assert stats.kstest(-v[v < 0], stats.expon(scale=1 / (ea + ec)).cdf).pvalue > 1e-3


def test_far_apart_values_do_not_underflow(rng):
    """Weights depend on (ec - ea) d only: a gap of 10^4 scales still samples."""
    v = bridge(np.full(1000, -5e3), 1.0, np.full(1000, 5e3), 3.0, 2.0, rng)
    assert np.isfinite(v).all()
