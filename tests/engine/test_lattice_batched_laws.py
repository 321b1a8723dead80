"""The lattice path's batched draws (``releases.engine.lattice_batch``) keep the scalar sampler's
law, on fixed seeds (G-tests at the suite's alarm level, ``tests.engine.lattice_checks.ALARM``):
``lattice.sample`` has the ``DLap`` law at small levels, alone and mixed in one call with levels
drawn one by one; ``lattice.tighten`` has the tightening law; a bit buffer's words are never
handed out twice.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest

from releases.engine import lattice, lattice_batch

from . import lattice_checks as checks
from . import lattice_laws as laws


def _bits(seed):
    return checks.bits_only(seed)


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
    first, second = lattice_batch.words(bits, 100), lattice_batch.words(bits, 600)  # the second needs a new block
    both = np.concatenate([first, second])
    assert both.size == 700 and np.unique(both).size == 700
