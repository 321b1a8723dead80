"""The batched discrete Laplace draws (``releases.engine.lattice_vector``) keep the scalar
sampler's law: each piece against its exact law, on fixed seeds (G-tests at the suite's alarm
level, ``tests.engine.lattice_checks.ALARM``, and five-sigma binomial checks).

What is checked: ``below`` is uniform; ``bern_exp`` is heads with probability ``e^{-num/den}``;
``units`` has ``P(V = j) = e^{-j} (1 - e^{-1})`` and hands a uniform that falls inside a bracket
to the finisher with the right index; ``lattice.sample`` (which batches every level below 1/2)
has the ``DLap`` law at small levels, alone and mixed in one call with levels drawn one by one;
``lattice.tighten`` (whose moves are batched) has the tightening law.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import numpy as np
import pytest

from releases.engine import lattice, lattice_vector

from . import lattice_checks as checks
from . import lattice_laws as laws
from .laws import binomial_close


def _bits(seed):
    return checks.bits_only(seed)


def test_below_is_uniform_for_each_bound():
    rng = _bits(1)
    bounds = np.array([1, 2, 3, 5, 7, 1000, 3 * 10**5], dtype=np.int64)
    draws = np.stack([lattice_vector.below(rng, bounds) for _ in range(20_000)])
    assert (draws >= 0).all() and (draws < bounds).all()
    for column, b in enumerate(bounds.tolist()[:5]):  # every value of the small bounds equally often
        counts = np.bincount(draws[:, column], minlength=b)
        assert all(binomial_close(int(c), draws.shape[0], 1 / b) for c in counts), (b, counts)
    big = draws[:, -1]
    assert binomial_close(int((big < 10**5).sum()), big.size, 1 / 3)


@pytest.mark.parametrize("num, den", [(0, 1), (1, 1), (1, 3), (2, 3), (1, 30_000), (29_999, 30_000), (7, 10)])
def test_bern_exp_is_heads_with_probability_e_to_the_minus_num_over_den(num, den):
    n = 40_000
    heads = lattice_vector.bern_exp(_bits(num * 7 + den), np.full(n, num, np.int64), np.full(n, den, np.int64))
    assert binomial_close(int(heads.sum()), n, math.exp(-num / den))


def test_units_has_the_law_e_to_the_minus_j():
    n = 100_000
    v = lattice_vector.units(_bits(3), n, lattice._unit_brackets(), lambda u, j: pytest.fail("no bracket hit"))
    counts = np.bincount(v, minlength=12)
    for j in range(8):
        assert binomial_close(int(counts[j]), n, math.exp(-j) * (1 - math.exp(-1))), (j, counts[:8])


def test_units_hands_a_uniform_inside_a_bracket_to_the_finisher():
    brackets = lattice._unit_brackets()
    lo, hi = brackets[2]  # a uniform inside e^{-2}'s bracket: below e^{-1}, undecided at e^{-2}
    inside = lo if lo < hi else None
    assert inside is not None
    words = iter([inside])
    source = type("Words", (), {"u64": lambda self, n: np.array([next(words)], dtype=np.uint64)})()
    seen = []
    got = lattice_vector.units(source, 1, brackets, lambda u, j: seen.append((u, j)) or 99)
    assert seen == [(inside, 2)] and got.tolist() == [99]


@pytest.mark.parametrize("level", [F(1, 3), F(2, 5), F(1, 100), F(1, 30_000), F(49, 100)])
def test_batched_sample_has_the_discrete_laplace_law(level):
    fit = checks.fit(laws.dlap(level), lattice.sample(level, 40_000, _bits(17)))
    assert fit.passes, f"sample at {level}: {fit}"


def test_a_call_mixing_batched_and_scalar_levels_keeps_both_laws():
    small, large = F(1, 6), F(2)  # 1/6 is batched, 2 is drawn one by one
    levels = [small, large] * 20_000
    draws = lattice.sample(levels, len(levels), _bits(23))
    for level, part in ((small, draws[0::2]), (large, draws[1::2])):
        fit = checks.fit(laws.dlap(level), part)
        assert fit.passes, f"{level}: {fit}"


@pytest.mark.parametrize("y, lo, hi", [(0, F(1, 6), F(1, 3)), (4, F(1, 60_000), F(1, 30_000)), (-3, F(1, 10), 2)])
def test_batched_tighten_has_the_tightening_law(y, lo, hi):
    fit = checks.check_tighten(y, lo, hi, 40_000, seed=29)
    assert fit.passes, f"tighten {hi} -> {lo} from {y}: {fit}"


def test_words_use_a_buffers_own_block_and_never_hand_a_word_out_twice():
    bits = lattice._Bits(random.Random(5))
    first, second = lattice_vector.words(bits, 100), lattice_vector.words(bits, 600)  # the second needs a new block
    both = np.concatenate([first, second])
    assert both.size == 700 and np.unique(both).size == 700
