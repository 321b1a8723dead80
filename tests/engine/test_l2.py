"""The l2 process for vectors (docs/mathematics.md sections 5 and 6)."""

import numpy as np
import pytest
from scipy import stats

from releases.engine.mechanism import l2_at, l2_extend, l2_path, tighten

from tests import mc

from .laws import binomial_close, corr

pytestmark = pytest.mark.statistical

# Paths per check: 20,000 (30,000 in two dimensions) at the full size, 10,000 at the quick one. The
# tolerances below hold at either: E||V||^2 within 8% is >= 3.6 sd at 10,000 paths, the variance of
# the jump count within 6% is >= 4 sd, the correlation within 0.03 is >= 3.6 sd at 15,000.
PATHS = mc.size(full=20_000, quick=10_000)
PATHS_2D = mc.size(full=30_000, quick=10_000)

TOP, BOTTOM = 4.0, 0.25
PROBES = [4.0, 2.0, 1.0, 0.5, 0.25]


def many_paths(dim, count, rng, top=TOP, bottom=BOTTOM):
    return [l2_path(dim, top, bottom, rng) for _ in range(count)]


def jumps_between(levels, values, lo, hi):
    """Number of changes of the path for levels in [lo, hi)."""
    changed = np.any(values[1:] != values[:-1], axis=1)
    at = levels[1:][changed]
    return int(np.sum((at >= lo) & (at < hi)))


@pytest.mark.parametrize("dim,count", [(1, PATHS), (2, PATHS_2D), (5, PATHS)], ids=["1", "2", "5"])
def test_norm_at_every_level_is_gamma_and_direction_uniform(dim, count, rng):
    paths = many_paths(dim, count, rng)
    for eps in PROBES:
        v = np.array([l2_at(lv, vv, eps) for lv, vv in paths])
        norms = np.linalg.norm(v, axis=1)
        assert stats.kstest(norms, stats.gamma(dim, scale=1 / eps).cdf).pvalue > 1e-3
        # E||V||^2 = n(n+1)/eps^2 (sd of the estimate is about 2-3%)
        assert np.mean(norms**2) == pytest.approx(dim * (dim + 1) / eps**2, rel=0.08)
        if dim == 2:
            angle = np.arctan2(v[:, 1], v[:, 0])
            assert stats.kstest(angle, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 1e-3


@pytest.mark.parametrize("dim", [1, 3])
def test_number_of_jumps_is_poisson(dim, rng):
    paths = many_paths(dim, PATHS, rng)
    for lo, hi in [(0.25, 4.0), (1.0, 2.0), (0.5, 0.6)]:
        counts = np.array([jumps_between(lv, vv, lo, hi) for lv, vv in paths])
        mean = (dim + 1) * np.log(hi / lo)
        kmax = int(stats.poisson(mean).ppf(1 - 1e-4))
        observed = np.bincount(np.minimum(counts, kmax), minlength=kmax + 1)
        pmf = stats.poisson(mean).pmf(np.arange(kmax + 1))
        pmf[-1] = stats.poisson(mean).sf(kmax - 1)
        expected = pmf * counts.size
        keep = expected >= 5  # pool sparse cells into the tail so chi2 is valid
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(expected[keep], expected[~keep].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        assert stats.chisquare(obs, exp).pvalue > 1e-3
        assert counts.mean() == pytest.approx(mean, abs=5 * np.sqrt(mean / counts.size))


def test_dimension_one_is_the_laplace_path(rng):
    """For n = 1 the l2 path is the l1 path: same joint law as tightening."""
    hi, lo, n = 2.0, 0.5, mc.size(full=30_000, quick=15_000)
    paths = many_paths(1, n, rng, top=hi, bottom=lo)
    top = np.array([vv[0, 0] for _, vv in paths])
    bottom = np.array([vv[-1, 0] for _, vv in paths])
    reference = tighten(top, hi, lo, rng)
    assert binomial_close(int(np.sum(top == bottom)), n, (lo / hi) ** 2)
    assert stats.ks_2samp(bottom, reference).pvalue > 1e-3
    assert corr(top, bottom) == pytest.approx(lo / hi, abs=0.03)


def test_shape_and_reading_convention(rng):
    levels, values = l2_path(3, 2.0, 0.1, rng)
    assert levels[0] == 2.0 and levels[-1] == 0.1
    assert np.all(np.diff(levels) <= 0)
    assert values.shape == (levels.size, 3)
    # the value at a level is values[i] for the largest i with levels[i] >= eps
    for i in range(levels.size):
        assert np.array_equal(l2_at(levels, values, levels[i]), values[np.flatnonzero(levels >= levels[i]).max()])
    between = np.sqrt(levels[:-1] * levels[1:])  # a level strictly inside each gap
    for i, eps in enumerate(between):
        if levels[i + 1] < eps < levels[i]:
            assert np.array_equal(l2_at(levels, values, eps), values[i])
    assert l2_at(levels, values, np.array([2.0, 0.1])).shape == (2, 3)
    # a path that is one point
    lv, vv = l2_path(2, 1.0, 1.0, rng)
    assert lv.tolist() == [1.0] and vv.shape == (1, 2)


def test_extending_keeps_the_known_part_and_the_laws(rng):
    dim, count = 2, PATHS
    base = many_paths(dim, count, rng, top=TOP, bottom=1.0)
    extended = []
    for lv, vv in base:
        lv2, vv2 = l2_extend(lv, vv, 0.5, rng)
        lv3, vv3 = l2_extend(lv2, vv2, BOTTOM, rng)
        # the known part is a prefix, bit for bit
        assert np.array_equal(lv3[: lv.size], lv) and np.array_equal(vv3[: lv.size], vv)
        assert lv3[-1] == BOTTOM
        extended.append((lv3, vv3))
    for eps in (0.5, 0.3, BOTTOM):
        norms = np.linalg.norm([l2_at(lv, vv, eps) for lv, vv in extended], axis=1)
        assert stats.kstest(norms, stats.gamma(dim, scale=1 / eps).cdf).pvalue > 1e-3
    # the jumps below the old bottom: Poisson with mean (n+1) ln(1.0/0.25)
    counts = np.array([jumps_between(lv, vv, BOTTOM, 1.0) for lv, vv in extended])
    mean = (dim + 1) * np.log(1.0 / BOTTOM)
    assert counts.mean() == pytest.approx(mean, abs=5 * np.sqrt(mean / count))
    assert counts.var() == pytest.approx(mean, rel=0.06)
    # extending a path to a level it already covers changes nothing
    lv, vv = extended[0]
    same_lv, same_vv = l2_extend(lv, vv, 1.0, rng)
    assert np.array_equal(same_lv, lv) and np.array_equal(same_vv, vv)
