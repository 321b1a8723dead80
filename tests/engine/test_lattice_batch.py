"""The batched exact samplers (``releases.engine.lattice_batch``) against their exact laws, on
fixed seeds (G-tests at the suite's alarm level, ``lattice_checks.ALARM``, and five-sigma
binomial checks), and deliberate mutations of them that the same checks catch.

What is checked:

* ``geometric`` has ``P(G = g) = (1 - alpha) alpha^g``, ``alpha = e^{-s/t}``, from its binary
  digits, for ratios from 7/10^12 (46 digits) to 3, one level or several in one call;
* ``dlap`` has the discrete Laplace law (zero coin, then ``1 +`` a geometric and a sign);
* ``below`` is uniform (and refuses the right share), ``flips`` flips its constant coin, and the
  rare uniforms on a bracket are finished from more of their bits (scripted words);
* ``first_accepted`` keeps the first accepted trial (a truncated law it must reproduce).

Mutations (each must be rejected by the check that passes on the real sampler): a geometric whose
highest binary digit is never set, and a geometric whose parameter is off by one (``t + 1``: a
rate 3% low).
"""

from __future__ import annotations

import functools
import math
import random
from fractions import Fraction as F

import numpy as np
import pytest

from releases.engine import lattice, lattice_batch

from . import lattice_checks as checks
from . import lattice_laws as laws
from .laws import binomial_close

pytestmark = pytest.mark.statistical

N = 60_000


def _bits(seed):
    return checks.bits_only(seed)


def _geometrics(s: int, t: int, n: int, seed: int) -> np.ndarray:
    return lattice_batch.geometric(_bits(seed), np.full(n, s, dtype=np.int64), np.full(n, t, dtype=np.int64))


@pytest.mark.parametrize("s, t", [(1, 30), (3, 7), (1, 30_000), (2, 3), (5, 2), (3, 1), (1, 3 * 10**8), (7, 10**12)])
def test_geometric_has_the_geometric_law(s, t, report):
    draws = _geometrics(s, t, N, seed=s * 7 + t)
    fit = checks.geometric_fit(draws, s, t)
    report(f"geometric, ratio {s}/{t}: {fit}")
    assert (draws >= 0).all() and fit.passes, fit


def test_geometric_of_several_levels_in_one_call_keeps_each_law():
    levels = [(1, 30), (2, 3), (1, 5)] * (N // 3)
    s = np.array([a for a, _ in levels], dtype=np.int64)
    t = np.array([b for _, b in levels], dtype=np.int64)
    draws = lattice_batch.geometric(_bits(41), s, t)
    for a, b in set(levels):
        fit = checks.geometric_fit(draws[(s == a) & (t == b)], a, b)
        assert fit.passes, (a, b, fit)


@pytest.mark.parametrize("level", [F(1, 3), F(1, 30_000), F(1), F(5, 2), F(1, 3 * 10**8), F(7, 10**12)])
def test_dlap_has_the_discrete_laplace_law(level):
    n = N
    draws = lattice_batch.dlap(_bits(43), np.full(n, level.numerator, dtype=np.int64),
                               np.full(n, level.denominator, dtype=np.int64))
    fit = checks.fit(laws.dlap(level), draws)
    assert fit.passes, f"level {level}: {fit}"


def test_below_is_uniform_and_refuses_the_remainder():
    bounds = np.full(N, 7, dtype=np.int64)
    u, ok = lattice_batch.below(_bits(5), bounds)
    counts = np.bincount(u[ok], minlength=7)
    assert counts.size == 7 and all(binomial_close(int(c), int(ok.sum()), 1 / 7) for c in counts)
    assert binomial_close(int((~ok).sum()), N, (2**32 % 7) / 2**32)  # 4 of 2^32 words refused


def test_flips_flip_the_constant_coin():
    coin = lattice._zero(1, 3)  # (1 - e^{-1/3}) / (1 + e^{-1/3})
    p = (1 - math.exp(-1 / 3)) / (1 + math.exp(-1 / 3))
    heads = lattice_batch.flips(_bits(6), [coin], np.zeros(N, dtype=np.int64))
    assert binomial_close(int(heads.sum()), N, p)


class _Words:
    """A bit source whose batched words are scripted (then zeros): ``u64`` as the buffer's; the
    scalar finishers' bits come from ``random.Random(0)``."""

    def __init__(self, words):
        self.words = list(words)
        self.getrandbits = random.Random(0).getrandbits

    def u64(self, n):
        out, self.words = self.words[:n], self.words[n:]
        return np.array(out + [0] * (n - len(out)), dtype=np.uint64)


def test_a_uniform_on_a_bracket_is_finished_from_more_of_its_bits():
    """``flips`` hands a 32-bit uniform inside the coin's bracket to the coin, which reads more
    bits of the same uniform; and a geometric's digit whose 8 bits lie on its bracket is decided
    by 32 more (here: a scripted source whose words are all 0x7f bytes, on the bracket of the
    first digits of a small level, then zeros)."""
    coin = lattice._zero(1, 3)
    lo, hi = coin.brackets(32)
    inside = lo if hi > lo else lo - 1
    assert lattice_batch.flips(_Words([inside]), [coin], np.zeros(1, dtype=np.int64)).tolist() == [
        coin.finish(_Words([]), inside, 32)
    ]
    d = lattice_batch._digit_table(1, 30_000)
    assert int(d.lo8[0]) == 0x7F and int(d.width8[0]) == 1  # p_0 just below 1/2
    g = lattice_batch.geometric(_Words([0x7F7F7F7F7F7F7F7F] * 3), np.array([1]), np.array([30_000]))
    # each digit's 8 bits are 0x7f, on the bracket; the 32 more are 0, so U = 0x7f00000000 / 2^40,
    # below p_i for the digits near 1/2 (set) and above it for the digits whose p_i < 0x7f/2^8
    expected = sum(1 << i for i in range(d.size) if 0x7F << 32 < int(d.lo40[i]))
    assert g.tolist() == [expected]


def test_first_accepted_keeps_the_first_accepted_trial():
    """Trials accepted with probability 1/3 whose values are uniform on 0..5: the kept value must
    be uniform, and the loop must have run every coordinate's trials in order."""
    src = _bits(8)

    def trial(rows):
        value = lattice_batch.below(src, np.full(rows.size, 6, dtype=np.int64))[0]
        accepted = lattice_batch.below(src, np.full(rows.size, 3, dtype=np.int64))[0] == 0
        return accepted, value

    kept = lattice_batch.first_accepted(N, trial)
    counts = np.bincount(kept, minlength=6)
    assert all(binomial_close(int(c), N, 1 / 6) for c in counts), counts


def test_steps_mixing_batched_and_scalar_levels_keep_the_batched_law():
    """One call whose coordinates run at two pairs of levels, one batched and one too fine for
    int64 products (drawn one at a time): the batched coordinates keep their law, and the fine
    ones come out whole (a coin table then holds a gap's coins only for the batched pair)."""
    n, fine = 20_000, 200
    lo, mid, hi = [F(1, 2)] * n + [F(1, 10**9)] * fine, [F(3, 4)] * n + [F(3, 2 * 10**9)] * fine, \
        [F(1)] * n + [F(2, 10**9)] * fine
    relaxed = lattice.relax(np.full(n + fine, -2), lo, hi, _bits(51))
    fit = checks.fit(laws.relax_law(-2, F(1, 2), F(1)), relaxed[:n])
    assert fit.passes, fit
    bridged = lattice.bridge(np.full(n + fine, 1), lo, np.full(n + fine, -1), hi, mid, _bits(52))
    fit = checks.fit(laws.bridge_law(1, -1, F(1, 2), F(3, 4), F(1)), bridged[:n])
    assert fit.passes, fit
    assert relaxed.dtype == bridged.dtype == np.int64


# --------------------------------------------------------------------------
# deliberate mutations, caught by the same checks


def _last_digit_dropped(monkeypatch):
    """The highest of the first ``L`` binary digits is never set (its brackets are 0)."""
    real = lattice_batch._digit_table.__wrapped__

    def table(s, t):
        d = real(s, t)
        i = max(d.size - lattice_batch._MORE - 1, 0)
        d.lo8, d.width8 = d.lo8.copy(), d.width8.copy()
        d.lo8[i] = d.width8[i] = 0
        return d

    monkeypatch.setattr(lattice_batch, "_digit_table", functools.lru_cache(maxsize=None)(table))


def _parameter_off_by_one(monkeypatch):
    """The geometric drawn at ratio ``s/(t+1)`` instead of ``s/t``."""
    real = lattice_batch._digit_table.__wrapped__
    monkeypatch.setattr(lattice_batch, "_digit_table", functools.lru_cache(maxsize=None)(lambda s, t: real(s, t + 1)))


@pytest.mark.parametrize("mutate, s, t", [(_last_digit_dropped, 1, 30), (_last_digit_dropped, 1, 30_000),
                                          (_parameter_off_by_one, 1, 30)])
def test_the_geometric_check_catches_a_mutated_sampler(mutate, s, t, monkeypatch, report):
    n = 200_000  # a 3% error in the rate needs it
    real = checks.geometric_fit(_geometrics(s, t, n, seed=99), s, t)
    mutate(monkeypatch)
    broken = checks.geometric_fit(_geometrics(s, t, n, seed=99), s, t)
    report(f"{mutate.__name__}, ratio {s}/{t}: real {real}; mutant {broken}")
    assert real.passes and not broken.passes


def test_step_checks_each_weights_level_and_takes_empty_listings():
    """``step`` makes one level per distinct weight: each must still lie in the lattice's range
    (a clear ValueError, as ``sample`` gives), and a listing of no values releases nothing."""
    for sides in ({}, {"below": (F(1, 2), [0])}, {"above": (F(2), [0])}):
        with pytest.raises(ValueError, match="between 1e-15 and 1e6"):
            lattice.step(F(1), [2**70], _bits(1), **sides)
    empty = np.zeros(0, dtype=np.int64)
    outs = [lattice.sample(F(1, 3), 0, _bits(2)), lattice.relax(empty, F(1), F(2), _bits(2)),
            lattice.tighten(empty, F(2), F(1), _bits(2)), lattice.bridge(empty, 1, empty, 3, 2, _bits(2)),
            lattice.step(F(1), [], _bits(2))[0], lattice.step(F(1), [], lattice.new_rng(), above=(F(2), empty))[0]]
    assert all(o.dtype == np.int64 and o.size == 0 for o in outs)
