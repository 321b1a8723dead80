"""The tightening step V_e2 -> V_e1 (docs/mathematics.md section 3)."""

import numpy as np
import pytest
from scipy import stats

from releases.engine.mechanism import relax, tighten

from tests import mc

from .laws import binomial_close, corr, laplace_cdf

# Draws: 400,000 at the full size (GRADUAL_MC=full, CI), 100,000 at the quick one. Tolerances were
# set at 400,000 and widen with 1/sqrt(N) (mc.widen), so they stay as many sds wide at either size.
N = mc.size(full=400_000, quick=100_000)
pytestmark = pytest.mark.statistical
PAIRS = [(1.0, 1.01), (0.5, 0.75), (1.0, 2.0), (0.1, 1.0), (0.05, 5.0)]


@pytest.mark.parametrize("e1,e2", PAIRS)
def test_marginal_correlation_and_no_jump(e1, e2, rng):
    y = rng.laplace(0.0, 1.0 / e2, N)
    x = tighten(y, e2, e1, rng)
    assert stats.kstest(x, laplace_cdf(1.0 / e1)).pvalue > 1e-3
    assert corr(x, y) == pytest.approx(e1 / e2, abs=mc.widen(0.012, full=400_000, n=N))
    assert binomial_close(int(np.sum(x == y)), N, (e1 / e2) ** 2)


@pytest.mark.parametrize("e1,e2", [(1.0, 1.01), (0.5, 2.0), (0.1, 1.0)])
def test_tightening_and_relaxing_give_the_same_joint_law(e1, e2, rng):
    """(V_e1, V_e2) built upwards by relax and downwards by tighten agree.

    Compares the jump V_e2 - V_e1 where one happened (two-sample KS), and the
    probability of no jump; the marginals are checked above.
    """
    a1 = rng.laplace(0.0, 1.0 / e1, N)
    a2 = relax(a1, e1, e2, rng)
    b2 = rng.laplace(0.0, 1.0 / e2, N)
    b1 = tighten(b2, e2, e1, rng)
    da, db = a2 - a1, b2 - b1
    assert binomial_close(int(np.sum(db == 0)), N, float(np.mean(da == 0)), sigmas=6)
    assert stats.ks_2samp(da[da != 0], db[db != 0]).pvalue > 1e-3
    # and the joint law seen through the products of signs and sizes
    assert stats.ks_2samp(a1 * a2, b1 * b2).pvalue > 1e-3


def test_equal_levels_are_the_identity(rng):
    y = rng.laplace(0.0, 1.0, 1000)
    assert np.array_equal(tighten(y, 0.7, 0.7, rng), y)


def test_shapes(rng):
    y = rng.laplace(0.0, 1.0, (2, 3))
    assert tighten(y, 2.0, 1.0, rng).shape == (2, 3)
    assert np.ndim(tighten(1.5, 2.0, 1.0, rng)) == 0
