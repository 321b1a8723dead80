"""The lattice checks can fail: five deliberately broken engines, each caught.

Each test runs one check of ``lattice_checks`` (the same function, with the
same arguments and seed, as ``test_lattice.py``) on the real engine, where it
passes, then replaces one piece of ``releases.engine.lattice`` with a mutant (pytest's
``monkeypatch``, undone after the test) and shows that the same check now
rejects. A statistical check rejects when its G-test's p-value is below 1e-4;
the mutants below are rejected by far more than that (their p-values are
reported).

The mutants:

(a) relax stays with probability ``r^{|x|+1}`` instead of
    ``r^{|x|+1} (1-a^2)/(1-b^2)`` (the second coin dropped);
(b) the ``Bernoulli(e^{-gamma})`` coin (and, batched, the geometric) drawn from a float uniform and
    ``math.exp``: statistically invisible, so it is caught by what the engine
    may use (only ``getrandbits``) and by a scan of its source;
(c) relax moves to its ``DLap(r)`` proposal without the acceptance step;
(d) the bridge ignores the upper level (relaxes from the lower one);
(e) tightening stays with probability ``(b/a) (1-a)/(1-b)``, the square
    dropped from ``p0``.
"""

import math
from fractions import Fraction as F

import pytest

import numpy as np

from releases.engine import exact_bounds as eb
from releases.engine import lattice, lattice_batch, lattice_coins

from . import lattice_checks as checks

pytestmark = pytest.mark.statistical


class _Heads:
    """A ``_Ratio`` that always comes up heads (its coin's bracket is exactly 1)."""

    coin = lattice._Coin(lambda bits: eb.Interval(1, 1, 0))

    def __call__(self, rng) -> bool:
        return True


class _GapWithoutSecondStayCoin(lattice._Gap):
    """(a): relax's stay coin ``(1-a^2)/(1-b^2)`` always comes up heads."""

    __slots__ = ()

    def __init__(self, lo, hi):
        super().__init__(lo, hi)
        self.ratio2 = _Heads()


def _float_coin(rng, num, den):
    """(b): ``Bernoulli(e^{-num/den})`` from a float uniform."""
    return rng.random() < math.exp(-num / den)


def _float_geometrics(rng, s, t):
    """(b), batched: each geometric of ratio ``e^{-s/t}`` from a float uniform."""
    return np.array([int(math.log(rng.random()) / (-a / b)) for a, b in zip(s.tolist(), t.tolist())], dtype=np.int64)


def _moves_without_acceptance(src, n, c, rows):
    """(c): the stay as in the engine, then the raw ``DLap(r)`` proposal, never rejected."""
    gaps = np.array([c.gaps[i].gap for i in c.which[rows]], dtype=np.int64).reshape(-1, 2)
    return lattice_batch.dlap(src, gaps[:, 0], gaps[:, 1])


def _bridge_from_below_only(src, x_lo, x_hi, triples, which):
    """(d): the middle relaxed from the lower level, as if the upper one were unknown."""
    return lattice._relax_rows(src, x_lo, [k.lower for k in triples], which)


def _stay_coin_without_square(self):
    """(e): ``p0 = (b/a) (1-a)/(1-b)``: one ratio factor instead of two."""
    gap, ratio = self.gap, self.ratio.coin.bounds
    return lattice._Coin(lambda bits: eb.product(bits, eb.exp_neg(*gap, bits), ratio(bits)))


def _pair_upwards():
    return checks.check_joint([F(1, 2), 1], checks.two_levels_upwards(F(1, 2), 1, 50_000, seed=16))


def _pair_downwards():
    return checks.check_joint([F(1, 2), 1], checks.two_levels_downwards(F(1, 2), 1, 50_000, seed=17))


def _triple_bridged():
    v_lo, _, v_hi, bridged = checks.three_levels_bridged(1, 2, 3, 30_000, seed=18)
    return checks.check_joint([1, 2, 3], (v_lo, bridged, v_hi))


#: name: (how to break the engine, a one-step check, a joint-law check), the checks as in test_lattice.py
MUTANTS = {
    "a: relax without the (1-a^2)/(1-b^2) stay coin": (
        lambda mp: mp.setattr(lattice, "_Gap", _GapWithoutSecondStayCoin),
        lambda: checks.check_relax(-2, F(1, 2), 1, 15_000, seed=12),
        _pair_upwards,
    ),
    "c: relax without the acceptance step": (
        lambda mp: mp.setattr(lattice, "_moves", _moves_without_acceptance),
        lambda: checks.check_relax(-40, 1, 2, 15_000, seed=12),
        _pair_upwards,
    ),
    "d: bridge that ignores the upper level": (
        lambda mp: mp.setattr(lattice, "_bridge", _bridge_from_below_only),
        lambda: checks.check_bridge(-2, 1, 1, 2, 3, 6000, seed=14),
        _triple_bridged,
    ),
    "e: tightening with p0 unsquared": (
        lambda mp: mp.setattr(lattice._Gap, "stay_coin", _stay_coin_without_square),
        lambda: checks.check_tighten(-7, F(1, 2), 1, 15_000, seed=13),
        _pair_downwards,
    ),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_one_step_check_rejects_the_mutant(name, monkeypatch, report):
    mutate, check, _ = MUTANTS[name]
    real = check()
    mutate(monkeypatch)
    broken = check()
    report(f"{name}: real engine {real}; mutant {broken}")
    assert real.passes
    assert not broken.passes


@pytest.mark.parametrize("name", list(MUTANTS))
def test_joint_law_check_rejects_the_mutant(name, monkeypatch, report):
    """The joint laws (which test_lattice.py shows the real engine passes) see each mutant too."""
    mutate, _, check = MUTANTS[name]
    mutate(monkeypatch)
    broken = check()
    report(f"{name}, joint law: mutant {broken}")
    assert not broken.passes


def test_float_coin_is_caught_by_the_bit_source_and_the_source_scan(monkeypatch, report):
    """(b) cannot be seen in the laws (a float coin is right to about 1e-16), so the checks
    are structural: the engine must run on a bit source with ``getrandbits`` alone, and
    its sampling code must contain no float."""
    assert checks.float_problems() == []
    checks.run_every_step(checks.bits_only(5))
    monkeypatch.setattr(lattice, "_bern_exp", _float_coin)
    monkeypatch.setattr(lattice_coins, "_bern_exp", _float_coin)
    monkeypatch.setattr(lattice_batch, "geometric", _float_geometrics)
    problems = checks.float_problems()
    report(f"b: float coin: source scan finds {problems}")
    assert any("rng.random" in p for p in problems)
    assert any("math.exp" in p for p in problems)
    with pytest.raises(AttributeError, match="random"):
        checks.run_every_step(checks.bits_only(5))
