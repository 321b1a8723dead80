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


def _finished_by_the_scalar_loops(monkeypatch) -> list:
    """Every batched rejection loop's first round refused whole, and whatever is left finished by
    its ``rest`` (the scalar loops): a refused trial leaves nothing behind, so the law must hold
    however many rounds refuse. Returns a list that counts the coordinates so finished."""
    real, finished = lattice_batch.first_accepted, []

    def refusing_first(m, trial, rest=None):
        rounds = []

        def trial_refused_once(rows):
            accepted, value = trial(rows)
            if not rounds:
                rounds.append(rows.size)
                accepted = np.zeros_like(accepted)
            return accepted, value

        def counted(rows):
            finished.append(len(rows))
            return rest(rows)

        return real(m, trial_refused_once, counted if rest is not None else None)

    monkeypatch.setattr(lattice_batch, "FEW", 10**9)
    monkeypatch.setattr(lattice_batch, "first_accepted", refusing_first)
    return finished


@pytest.mark.parametrize("x, lo, hi", [(-40, F(1), F(2)), (1, F(1), F(2)), (-7, F(1, 10), F(1, 5))])
def test_the_scalar_loops_that_finish_a_relaxation_keep_its_law(x, lo, hi, monkeypatch):
    """The relaxation's moves left after a round of batched trials are finished by the scalar loops
    (``_move_far`` from ``|x| >= cap``, ``_move_near`` below): here all of them, with the law of
    Bayes' rule over the tightening step. Mutant: the far and near moves' proposals never refused."""
    finished = _finished_by_the_scalar_loops(monkeypatch)
    fit = checks.check_relax(x, lo, hi, 20_000, seed=31)
    assert sum(finished) > 5_000, "the scalar loops finished too few coordinates to test them"
    assert fit.passes, f"relax {lo} -> {hi} from {x}, finished one by one: {fit}"

    monkeypatch.setattr(lattice, "_move_far", lambda rng, n, g, k: lattice._geometric(rng, *g.gap))
    monkeypatch.setattr(lattice, "_move_near", lambda rng, n, g, k: lattice._below(rng, n + 1))
    mutant = checks.check_relax(x, lo, hi, 20_000, seed=31)
    assert not mutant.passes, f"the unrefused proposals went unnoticed: {mutant}"


def test_the_scalar_loops_finish_each_coordinate_from_its_own_value(monkeypatch):
    """Coordinates from different values (far and near, of both signs) finished one by one each
    keep their own law: the loops are run for the right coordinate."""
    finished = _finished_by_the_scalar_loops(monkeypatch)
    starts = np.tile([-40, 1, 9, -2], 10_000)
    draws = lattice.relax(starts, F(1), F(2), checks.bits_only(37))
    assert sum(finished) > 10_000
    for k, x in enumerate([-40, 1, 9, -2]):
        fit = checks.fit(laws.relax_law(x, F(1), F(2)), draws[k::4])
        assert fit.passes, f"relax 1 -> 2 from {x}, finished one by one: {fit}"
