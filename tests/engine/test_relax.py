"""The relaxation step V_e1 -> V_e2 (docs/mathematics.md section 2)."""

import numpy as np
import pytest
from scipy import stats

from releases.engine.mechanism import relax

from tests import mc

from .laws import binomial_close, corr, laplace_cdf, relax_continuous_cdf

# Draws: 400,000 at the full size (GRADUAL_MC=full, CI), 100,000 at the quick one. Tolerances were
# set at 400,000 and widen with 1/sqrt(N) (mc.widen), so they stay as many sds wide at either size.
N = mc.size(full=400_000, quick=100_000)
pytestmark = pytest.mark.statistical
# near (ratio 1.01), moderate, and far apart (ratio 10 and 100)
PAIRS = [(1.0, 1.01), (3.0, 3.03), (0.5, 0.75), (1.0, 2.0), (0.1, 1.0), (0.05, 5.0)]


@pytest.mark.parametrize("e1,e2", PAIRS)
def test_marginal_correlation_and_no_jump(e1, e2, rng):
    x = rng.laplace(0.0, 1.0 / e1, N)
    y = relax(x, e1, e2, rng)
    # V_e2 is Laplace(1/e2)
    assert stats.kstest(y, laplace_cdf(1.0 / e2)).pvalue > 1e-3
    # corr(V_e1, V_e2) = e1/e2 (heavy tails: the estimate's sd is about 0.003 here)
    assert corr(x, y) == pytest.approx(e1 / e2, abs=mc.widen(0.012, full=400_000, n=N))
    # P(V_e2 = V_e1) = (e1/e2)^2, exactly equal floats
    assert binomial_close(int(np.sum(y == x)), N, (e1 / e2) ** 2)


@pytest.mark.parametrize("e1,e2", [(1.0, 1.01), (1.0, 2.0), (0.2, 3.0)])
@pytest.mark.parametrize("x0", [0.0, 0.3, -1.7, 4.0])
def test_conditional_law_given_a_fixed_point(x0, e1, e2, rng):
    """Given V_e1 = x0, the step has the exact law of the four cases of docs/mathematics.md section 2."""
    n = mc.size(full=200_000, quick=50_000)
    y = relax(np.full(n, x0), e1, e2, rng)
    stay = y == x0
    assert binomial_close(int(stay.sum()), n, (e1 / e2) * np.exp(-(e2 - e1) * abs(x0)))
    moved = y[~stay] * (1.0 if x0 >= 0 else -1.0)  # reflect to x0 >= 0
    if moved.size > 1000:
        assert stats.kstest(moved, relax_continuous_cdf(x0, e1, e2)).pvalue > 1e-3


def test_equal_levels_are_the_identity(rng):
    x = rng.laplace(0.0, 1.0, 1000)
    assert np.array_equal(relax(x, 0.7, 0.7, rng), x)


def test_shapes_scalars_and_broadcast_levels(rng):
    x = rng.laplace(0.0, 1.0, (3, 4, 5))
    assert relax(x, 1.0, 2.0, rng).shape == (3, 4, 5)
    y = relax(0.25, 1.0, 2.0, rng)
    assert np.ndim(y) == 0 and np.isfinite(y)
    # per-coordinate levels: column 0 goes 1 -> 1 (identity), column 1 goes 1 -> 4
    n = mc.size(full=200_000, quick=50_000)
    x = rng.laplace(0.0, 1.0, (n, 2))
    y = relax(x, 1.0, np.array([1.0, 4.0]), rng)
    assert np.array_equal(y[:, 0], x[:, 0])
    assert stats.kstest(y[:, 1], laplace_cdf(0.25)).pvalue > 1e-3
    assert binomial_close(int(np.sum(y[:, 1] == x[:, 1])), n, 1 / 16)


def test_chunk_boundaries_do_not_change_the_law(rng):
    """An array longer than one processing chunk: every part follows the law."""
    n = 3 * (1 << 14) + 17
    x = rng.laplace(0.0, 1.0, (40, n))
    y = relax(x, 1.0, 1.5, rng)
    same = (y == x).mean(axis=0)  # P(no jump) per position, over 40 rows
    assert abs(same.mean() - (1 / 1.5) ** 2) < 0.005
    assert stats.kstest(y.ravel(), laplace_cdf(1 / 1.5)).pvalue > 1e-3


def test_same_seed_same_path():
    x = np.linspace(-3, 3, 101)
    a = relax(x, 1.0, 2.0, np.random.default_rng(5))
    b = relax(x, 1.0, 2.0, np.random.default_rng(5))
    assert np.array_equal(a, b)
