"""The exact lattice path obeys its laws (releases/engine/lattice.py).

Every statistical test here draws from the engine with a fixed seed (a bit
source with ``getrandbits`` only) and runs a G-test against an exact law of
``lattice_laws`` (computed from the definitions, never from the engine's
samplers), failing when the p-value is below 1e-4: the false-alarm level of
each test. The exact laws are themselves checked first, against facts that do
not involve the engine.

* ``sample`` is ``DLap(e^{-level})`` at small, middling and large levels.
* Each step, from fixed inputs (0, negative, far out; for the bridge equal
  and unequal ends), has the conditional law that Bayes' rule gives from the
  tightening chain, for level ratios from 1.001 to 100 and for levels of
  order 1e-5 (compared on cells of the wide support).
* ``step`` runs one listing whose coordinates have different levels.
* The joint law of two levels, built upwards (sample, relax) and downwards
  (sample, tighten), is the exact joint law, and the two agree; three levels
  with the middle drawn again by the bridge have the exact three-level law
  (this is what proves the bridge).
* No float enters the sampling code, and the engine needs nothing of its bit
  source but ``getrandbits``.
"""

import math
from decimal import Decimal
from fractions import Fraction as F

import numpy as np
import pytest

from . import lattice_checks as checks
from . import lattice_laws as laws

pytestmark = pytest.mark.statistical

TINY = F(1, 10**5)


def _show(report, what, fit):
    report(f"{what}: {fit}")
    assert fit.passes, f"{what}: {fit}"


# --------------------------------------------------------------------------
# the reference laws, checked without the engine


@pytest.mark.parametrize("lo,hi", [(1, 3), (F(1, 2), 1), (1, F(1001, 1000)), (TINY, 100 * TINY), (F(1, 10), 10)])
def test_reference_laws_hold_together(lo, hi):
    """The reference's own consistency, without the engine: every law has total mass 1;
    summing the tightening chain over ``V_hi`` gives back ``DLap(e^{-lo})`` at every ``x``
    (the tightening step keeps the discrete Laplace law, and the relax law's Bayes
    denominator is right); two increments in a row are one increment across both gaps (so is
    the bridge's); the closed-form cell masses equal plain sums of the point probabilities."""
    for law in (laws.dlap(lo), laws.dlap(hi), laws.increment(lo, hi)):
        assert math.exp(law.log_mass()) == pytest.approx(1, abs=1e-12)
    for x in (0, 1, -5, 37, -2500):
        assert laws.relax_weights(x, lo, hi).log_mass() == pytest.approx(float(laws.dlap(lo).log_pmf(x)), abs=1e-11)
        assert math.exp(laws.relax_law(x, lo, hi).log_mass()) == pytest.approx(1, abs=1e-12)
    mid = (F(lo) + F(hi)) / 2
    for x_lo, x_hi in ((0, 0), (4, -3), (-2, -2), (100, 900)):
        whole = float(laws.increment(lo, hi).log_pmf(x_lo - x_hi))
        assert laws.bridge_weights(x_lo, x_hi, lo, mid, hi).log_mass() == pytest.approx(whole, abs=1e-11)
    # closed-form cells against brute force, where the support is small enough to add up
    law = laws.bridge_law(4, -3, lo, mid, hi)
    cuts = [-100, -3, -2, 0, 4, 5, 7]
    cells = law.probabilities(cuts)
    assert cells.sum() == pytest.approx(1, abs=1e-12)
    if F(lo) >= F(1, 10):
        points = np.arange(-2000, 2001)
        brute = np.bincount(np.searchsorted(cuts, points, side="right"), weights=np.exp(law.log_pmf(points)))
        assert cells == pytest.approx(brute, abs=1e-13)


def test_reference_joint_table_has_discrete_laplace_margins():
    axes, table = laws.joint_table([1, 2, 3])
    for i, level in enumerate((1, 2, 3)):
        margin = table.sum(axis=tuple(j for j in range(3) if j != i))
        assert np.abs(margin - np.exp(laws.dlap(level).log_pmf(axes[i]))).max() < laws.MISSING
    # V_1 = V_3 when the increment is 0 or a DLap(e^{-1}) draw is 0
    pair = table.sum(axis=1)
    k0, k2 = axes[0][-1], axes[2][-1]
    equal = sum(pair[k + k0, k + k2] for k in axes[2])
    p0 = laws.stay_probability(1, 3)
    assert equal == pytest.approx(p0 + (1 - p0) * math.tanh(1 / 2), abs=1e-12)


# --------------------------------------------------------------------------
# one step at a time


@pytest.mark.parametrize("level", [F(1, 1000), Decimal("0.5"), 3, TINY])
def test_sample_has_the_discrete_laplace_law(level, report):
    _show(report, f"sample at {level}", checks.check_sample(level, 40_000, seed=11))


RELAX = [  # x, lo, hi
    (0, 1, 3),
    (-2, F(1, 2), 1),
    (5, 1, F(1001, 1000)),  # ratio 1.001
    (-40, 1, 2),  # far out
    (-60, F(1, 100), 1),  # ratio 100
    (0, F(1, 100), 1),
    (1000, F(1, 2), 2),  # far out
    (-150_000, TINY, 2 * TINY),
    (70_000, TINY, F(1001, 1000) * TINY),
    (250_000, TINY, 100 * TINY),
]


@pytest.mark.parametrize("x,lo,hi", RELAX)
def test_relax_has_the_bayes_law_of_the_tightening_step(x, lo, hi, report):
    _show(report, f"relax x={x} {lo}->{hi}", checks.check_relax(x, lo, hi, 15_000, seed=12))


TIGHTEN = [  # y, lo, hi
    (0, 1, 3),
    (-7, F(1, 2), 1),
    (4, 1, F(1001, 1000)),
    (100, F(1, 10), 10),
    (-1000, 2, 50),
    (-300_000, TINY, 3 * TINY),
    (12, TINY, 100 * TINY),
]


@pytest.mark.parametrize("y,lo,hi", TIGHTEN)
def test_tighten_adds_the_increment(y, lo, hi, report):
    _show(report, f"tighten y={y} {hi}->{lo}", checks.check_tighten(y, lo, hi, 15_000, seed=13))


BRIDGE = [  # x_lo, x_hi, lo, mid, hi, draws (fewer where the sampler needs many rounds)
    (0, 0, 1, 2, 3, 6000),
    (3, 3, F(1, 2), 1, 2, 4000),
    (-2, 1, 1, 2, 3, 6000),
    (10, -10, F(1, 10), 1, 10, 6000),  # ratio 100
    (-4, -4, F(1, 10), 1, 10, 1000),
    (5, 5, 1, F(1001, 1000), F(1001, 1000) ** 2, 6000),  # ratios 1.001
    (5, 6, 1, F(101, 100), F(101, 100) ** 2, 600),  # ratios 1.01
    (1000, -1000, 1, 2, 3, 6000),  # far out
    (0, 0, F(1, 20), F(1, 10), F(1, 5), 2000),
    (-200_000, -150_000, TINY, 2 * TINY, 4 * TINY, 6000),
    (123_456, 120_000, TINY, 10 * TINY, 100 * TINY, 6000),
]


@pytest.mark.parametrize("x_lo,x_hi,lo,mid,hi,n", BRIDGE)
def test_bridge_has_the_bayes_law_of_the_chain(x_lo, x_hi, lo, mid, hi, n, report):
    fit = checks.check_bridge(x_lo, x_hi, lo, mid, hi, n, seed=14)
    _show(report, f"bridge x_lo={x_lo} x_hi={x_hi} {lo}<{mid}<{hi}", fit)


@pytest.mark.parametrize("kind", ["initial", "relax", "tighten", "bridge"])
def test_step_runs_each_coordinate_at_its_own_level(kind, report):
    """One ``step`` call for a listing of weights 1, 3 and 10 (levels 1, 1/3, 1/10 at listing
    level 1), repeated 3000 times: each coordinate has its own level's law."""
    fits = checks.check_step(kind, [1, 3, 10], [4, -3, 0], [2, -3, 5], 3000, seed=15)
    for weight, fit in zip((1, 3, 10), fits):
        _show(report, f"step {kind}, weight {weight}", fit)


# --------------------------------------------------------------------------
# joint laws


def test_two_levels_upwards_and_downwards_have_the_exact_joint_law(report):
    """Levels 1/2 and 1 (a box of 115 x 57 values): sample + relax and sample + tighten both
    match the exact joint law, and each other (three G-tests, each at 1e-4)."""
    lo, hi = F(1, 2), 1
    up = checks.two_levels_upwards(lo, hi, 50_000, seed=16)
    down = checks.two_levels_downwards(lo, hi, 50_000, seed=17)
    _show(report, "(V_1/2, V_1) by relax", checks.check_joint([lo, hi], up))
    _show(report, "(V_1/2, V_1) by tighten", checks.check_joint([lo, hi], down))
    _show(report, "relax vs tighten", checks.check_same_law(up, down))


def test_redrawn_middle_has_the_exact_three_level_law(report):
    """Levels 1 < 2 < 3: sample, relax, relax, then the middle drawn again by the bridge from
    both ends. The relaxed triple and the bridged triple both match the exact law of the
    tightening chain (G-tests at 1e-4 on the 59 x 29 x 19 box)."""
    v_lo, v_mid, v_hi, bridged = checks.three_levels_bridged(1, 2, 3, 30_000, seed=18)
    _show(report, "(V_1, V_2, V_3) by relax", checks.check_joint([1, 2, 3], (v_lo, v_mid, v_hi)))
    _show(report, "(V_1, bridge, V_3)", checks.check_joint([1, 2, 3], (v_lo, bridged, v_hi)))


# --------------------------------------------------------------------------
# integer coins only


def test_sampling_code_has_no_float():
    """No float literal, ``float()``, ``math``, ``random`` or ``rng`` attribute but
    ``getrandbits`` in any function or class of the engine that draws noise."""
    assert checks.float_problems() == []


def test_engine_needs_only_getrandbits():
    """Every step runs on a bit source with ``getrandbits`` and nothing else, and the same
    seed gives the same noise (the bits decide everything)."""
    first = checks.run_every_step(checks.bits_only(3))
    second = checks.run_every_step(checks.bits_only(3))
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
