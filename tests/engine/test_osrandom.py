"""The operating-system source's transforms are right (releases/engine/osrandom.py).

The OS bits cannot be seeded, so the transforms are tested on a deterministic
bit source (a seeded numpy generator's 64-bit words, fixed seeds): each
distribution against its law (Kolmogorov-Smirnov; chi-square for discrete
ones), with the threshold p > 1e-4. Each test also runs a deliberately broken
copy of the transform and shows the same check rejects it (p < 1e-6).
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from releases.engine.osrandom import OSRandom

from tests import mc

pytestmark = pytest.mark.statistical

N = 200_000


def _source(seed: int, cls=OSRandom) -> OSRandom:
    gen = np.random.Generator(np.random.PCG64(seed))
    return cls(words=lambda n: gen.integers(0, 2**64, n, dtype=np.uint64))


class _ScaledLaplace(OSRandom):
    """Mutation: the Laplace scale off by 5%."""

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return super().laplace(loc, scale * 1.05, size)


class _NaiveShuffle(OSRandom):
    """Mutation: the classic wrong shuffle, j uniform on all n positions instead of 0..i."""

    def permutation(self, n):
        order = list(range(int(n)))
        js = self.below(np.full(int(n), int(n))).tolist()
        for i, j in zip(range(int(n) - 1, -1, -1), js):
            order[i], order[j] = order[j], order[i]
        return np.array(order)


class _ModuloBelow(OSRandom):
    """Mutation: a bounded integer by masking and folding with a modulo (no rejection)."""

    def below(self, bounds):
        b = np.asarray(bounds, dtype=np.uint64)
        return ((self._uint64(b.size) & np.uint64(3)) % b).astype(np.int64)


def test_laplace_follows_its_law_and_a_5_percent_scale_error_is_caught():
    x = _source(1).laplace(0.0, 2.0, N)
    assert stats.kstest(x, stats.laplace(scale=2.0).cdf).pvalue > 1e-4
    assert abs(np.mean(x)) < 0.03 and abs(np.mean(np.abs(x)) - 2.0) < 0.03
    bad = _source(1, _ScaledLaplace).laplace(0.0, 2.0, N)
    assert stats.kstest(bad, stats.laplace(scale=2.0).cdf).pvalue < 1e-6


def test_laplace_is_numpys_formula_bit_for_bit():
    """bench/float_delta.py enumerates numpy's sampler's outputs; the OS source's Laplace is the
    same function of the same 53-bit uniform, so the enumeration holds for it."""
    words = np.random.Generator(np.random.PCG64(2)).integers(0, 2**64, 20_000, dtype=np.uint64)
    got = OSRandom(words=lambda n: words[:n]).laplace(0.0, 1.0, 20_000)
    u = ((words >> np.uint64(11)).astype(np.float64) * 2.0**-53).tolist()
    assert 0.0 not in u
    want = [0.0 - math.log(2.0 - x - x) if x >= 0.5 else 0.0 + math.log(x + x) for x in u]
    assert got.tolist() == want


def test_a_zero_uniform_is_drawn_again():
    words = iter([np.array([0], dtype=np.uint64), np.array([2**63], dtype=np.uint64)])
    assert OSRandom(words=lambda n: next(words)).laplace(0.0, 1.0, 1) == [0.0 - math.log(2.0 - 0.5 - 0.5)]


@pytest.mark.parametrize("seed", [3])
def test_the_continuous_laws(seed):
    src = _source(seed)
    assert stats.kstest(src.random(N), "uniform").pvalue > 1e-4
    assert stats.kstest(src.standard_normal(N), "norm").pvalue > 1e-4
    assert stats.kstest(src.standard_exponential(N), "expon").pvalue > 1e-4
    assert stats.kstest(src.gamma(3, 0.5, N), stats.gamma(3, scale=0.5).cdf).pvalue > 1e-4
    assert src.standard_normal((3, 4)).shape == (3, 4)
    out = np.empty(7)
    assert src.random(out=out) is out and ((0 <= out) & (out < 1)).all()


def test_poisson_follows_its_law():
    k = _source(4).poisson(6.5, N)
    top = 20
    observed = np.bincount(np.minimum(k, top), minlength=top + 1)
    p = stats.poisson(6.5).pmf(np.arange(top + 1))
    p[-1] = stats.poisson(6.5).sf(top - 1)
    assert stats.chisquare(observed, p * N).pvalue > 1e-4
    wrong = stats.poisson(6.7).pmf(np.arange(top + 1))
    wrong[-1] = stats.poisson(6.7).sf(top - 1)
    assert stats.chisquare(observed, wrong * N).pvalue < 1e-6  # the test tells 6.5 from 6.7


def _orders(cls, seed, n=4, draws=None):
    # 48,000 draws at the full size, 12,000 at the quick one (GRADUAL_MC): 500 per order; the naive
    # shuffle's orders are off by up to 40%, a chi-square in the hundreds at either size
    draws = draws or mc.size(full=48_000, quick=12_000)
    src = _source(seed, cls)
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(index))
    for _ in range(draws):
        counts[index[tuple(src.permutation(n).tolist())]] += 1
    return counts


def test_permutation_is_uniform_over_all_orders_and_the_naive_shuffle_is_caught():
    counts = _orders(OSRandom, 5)
    assert stats.chisquare(counts).pvalue > 1e-4  # all 24 orders of 4 equally likely
    assert stats.chisquare(_orders(_NaiveShuffle, 5)).pvalue < 1e-6


def test_bounded_integers_are_unbiased_and_a_modulo_fold_is_caught():
    draws = _source(6).below(np.full(60_000, 3))
    assert set(np.unique(draws)) == {0, 1, 2}
    assert stats.chisquare(np.bincount(draws, minlength=3)).pvalue > 1e-4
    bad = _source(6, _ModuloBelow).below(np.full(60_000, 3))
    assert stats.chisquare(np.bincount(bad, minlength=3)).pvalue < 1e-6


def test_permutation_of_a_large_array_is_a_permutation():
    src = _source(7)
    order = src.permutation(100_000)
    assert np.array_equal(np.sort(order), np.arange(100_000))
    assert src.permutation(np.array([5, 6])).tolist() in ([5, 6], [6, 5])
    assert src.permutation(1).tolist() == [0] and src.permutation(0).tolist() == []
    with pytest.raises(ValueError):
        src.below([0])
