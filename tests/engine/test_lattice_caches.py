"""The brackets the batched lattice steps keep between calls give each call its own levels' law
(G-tests at the suite's alarm level on fixed seeds):

* ``lattice_batch._brackets32`` (a table of constant coins' 32-bit brackets, kept per table):
  relaxations through ``step`` at one pair of listing levels and then at another each keep
  their law; brackets kept on the wrong key (the number of coins) are caught;
* ``lattice_batch._brackets_of`` (the padded digit brackets of a list of levels, kept per list
  of tables): geometrics at one level then another, and at six levels of several digit counts
  in one call, each keep their law; brackets kept on the wrong key (the number of levels) are
  caught;
* the geometric's top coin, read as one more digit: with a coin of 1/2 in its place, ``G``
  reaches ``2^D`` half the time and never ``2^{D+1}``;
* the lattice mechanism's weights (``mechanisms.exact._lattice_weights_of``, kept per tuple of
  weights): a step with one listing's weights and then another's draws as ``lattice.step``
  does with each; weights kept on the wrong key (their number) are caught.
"""

from __future__ import annotations

import functools
from fractions import Fraction as F

import numpy as np
import pytest

from releases.engine import exact_bounds as eb
from releases.engine import lattice, lattice_batch, lattice_coins
from releases.engine.mechanisms import exact, mechanism

from . import lattice_checks as checks
from . import lattice_laws as laws
from .laws import binomial_close

pytestmark = pytest.mark.statistical

N = 20_000


def _relaxed_through_step(seed: int) -> list[checks.Fit]:
    """Relaxations of ``x = -2`` through ``step`` at listing levels 1/2 -> 1, then 1/2 -> 5, for
    weights 1 and 2 (two gaps a call): the fit of each weight's coordinates to its law."""
    weights = [1, 2] * (N // 2)
    fits = []
    for hi in (F(1), F(5)):
        out, method = lattice.step(hi, weights, checks.bits_only(seed), below=(F(1, 2), np.full(N, -2)))
        assert method == "relax"
        for w, part in ((1, out[0::2]), (2, out[1::2])):
            fits.append(checks.fit(laws.relax_law(-2, F(1, 2) / w, hi / w), part))
    return fits


def test_relaxations_through_step_at_new_levels_keep_their_law():
    fits = _relaxed_through_step(61)
    assert all(fit.passes for fit in fits), fits


def test_coin_brackets_kept_for_other_levels_are_caught(monkeypatch, report):
    """The mutant keeps one table of brackets per number of coins: the second pair of levels flips
    the first pair's coins."""
    real, kept = lattice_batch._brackets32, {}
    monkeypatch.setattr(lattice_batch, "_brackets32", lambda table: kept.setdefault(len(table), real(table)))
    fits = _relaxed_through_step(61)
    report(f"coin brackets kept per number of coins: {fits}")
    assert all(fit.passes for fit in fits[:2]) and not any(fit.passes for fit in fits[2:]), fits


#: Six levels of several digit counts (6 to 21).
SIX = [(1, 30_000), (2, 3), (1, 30), (5, 2), (1, 1000), (3, 7)]


def _geometric_fits(seed: int) -> list[checks.Fit]:
    """Geometrics at ``SIX[0]`` alone, then ``SIX[1]`` alone, then all six in one call shuffled:
    each level's fit."""
    src = checks.bits_only(seed)
    fits = []
    for s, t in SIX[:2]:
        fits.append(checks.geometric_fit(lattice_batch.geometric(src, np.full(N, s), np.full(N, t)), s, t))
    at = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(SIX)), N))  # where each level sits
    s = np.array([a for a, _ in SIX], dtype=np.int64)[at]
    t = np.array([b for _, b in SIX], dtype=np.int64)[at]
    draws = lattice_batch.geometric(src, s, t)
    for k, (a, b) in enumerate(SIX):
        fits.append(checks.geometric_fit(draws[at == k], a, b))
    return fits


def test_geometrics_at_one_level_then_another_and_at_six_in_one_call_keep_each_law():
    fits = _geometric_fits(62)
    assert all(fit.passes for fit in fits), fits


def test_digit_brackets_kept_for_other_levels_are_caught(monkeypatch, report):
    """The mutant keeps one set of digit brackets per number of levels: the second level alone is
    drawn with the first's digits."""
    real, kept = lattice_batch._brackets_of, {}
    monkeypatch.setattr(lattice_batch, "_brackets_of", lambda tables: kept.setdefault(len(tables), real(tables)))
    fits = _geometric_fits(62)
    report(f"digit brackets kept per number of levels: {fits[:2]}")
    assert fits[0].passes and not fits[1].passes, fits


def test_the_top_coin_read_as_a_digit_adds_its_power_of_two(monkeypatch):
    """``P(G >= 2^D)`` (below ``e^{-32}``) is read as one more digit of ``G``; with a coin of 1/2 in
    its place, ``G >> D`` is 0 or 1, each half the time (the geometric beyond is 0 but with
    probability ``e^{-2^D s/t}``, below ``e^{-32}``), and the digits below keep their law."""
    real = lattice_batch._digit_table.__wrapped__

    def table(s, t):
        d = real(s, t)
        d.top = lattice_coins._Coin(lambda bits: eb.exact(1, 2, bits))
        return d

    monkeypatch.setattr(lattice_batch, "_digit_table", functools.lru_cache(maxsize=None)(table))
    s, t = 1, 30
    size = lattice_batch._digit_table(s, t).size
    draws = lattice_batch.geometric(checks.bits_only(63), np.full(N, s), np.full(N, t))
    high = draws >> size
    assert set(np.unique(high).tolist()) <= {0, 1}
    assert binomial_close(int(high.sum()), N, 1 / 2)
    low = draws & ((1 << size) - 1)  # below 2^D: the geometric itself but with probability e^{-32}
    assert checks.geometric_fit(low, s, t).passes


def _steps_match_the_modules(seed: int) -> list[bool]:
    """The lattice mechanism's step with weights ``[1, 3, 3]`` then ``[30, 1, 2]`` (new lists each
    time), a relax for each: whether it draws what ``lattice.step`` draws with those weights."""
    same = []
    for weights in ([1, 3, 3], [30, 1, 2]):
        below = (F(1), np.array([5, -3, 0]))
        got, _ = mechanism("lattice").step(F(2), dim=3, weights=list(weights), rng=checks.bits_only(seed), below=below)
        want, _ = lattice.step(F(2), weights, checks.bits_only(seed), below=below)
        same.append(bool(np.array_equal(got, want)))
    return same


def test_the_mechanisms_kept_weights_are_each_listings_own():
    assert _steps_match_the_modules(64) == [True, True]
    kept = exact._lattice_weights([4, 5])
    assert isinstance(kept, np.ndarray) and not kept.flags.writeable  # shared between releases: read-only


def test_weights_kept_for_another_listing_are_caught(monkeypatch):
    """The mutant keeps one entry per number of weights: the second listing runs at the first's."""
    real, kept = exact._lattice_weights_of, {}
    monkeypatch.setattr(exact, "_lattice_weights_of", lambda weights: kept.setdefault(len(weights), real(weights)))
    assert _steps_match_the_modules(64) == [True, False]
