"""The Skellam path as a mechanism (``releases.engine.mechanisms.skellam``): its ladder and
calibration, its codec, and its steps' laws through ``step`` as the release service calls it.

The laws: a level reached from any released neighbours is the counting processes at the level's
time; here, checked by the counts' means and variances, ``N(mu w^2)`` being Poisson of that mean
for each weight, and thinning never raising a count (the less noisy level's counts are a thinning
of the noisier one's). The engine's exact laws in every order are in tests/engine/test_skellam.py.
"""

from __future__ import annotations

import random
from decimal import Decimal as D
from fractions import Fraction as F

import numpy as np
import pytest

from releases.engine import skellam_privacy as sp
from releases.engine.mechanisms import Mechanism, mechanism
from releases.engine.mechanisms.skellam import PAIRS, Skellam, calibration, ladder_levels, shift_cases

CASES = ((( 0, 1), (1, 1), (2, 2)),)  # one worst case: two values by a step, one by two
WEIGHTS = (1, 1, 2)


def _bound() -> Skellam:
    plan = {"calibration": calibration(ceiling="1", delta="1e-6", cases=shift_cases(CASES, WEIGHTS)),
            "weights": list(WEIGHTS), "layout": {"unit_cases": [list(map(list, c)) for c in CASES]}}
    return mechanism("skellam").bound(plan)


def test_it_follows_the_protocol_and_its_ladder_is_calibrated_from_the_top_down():
    found = _bound()
    assert isinstance(found, Mechanism) and found.states_delta and not found.shares_budget
    assert ladder_levels("1") == [D("0.0625"), D("0.0937"), D("0.125"), D("0.1875"), D("0.25"), D("0.375"), D("0.5"),
                                  D("0.75"), D("1")]
    cases = shift_cases(CASES, WEIGHTS)
    assert cases == [((1, 1, 2), (2, 2, 1))]
    for level in found.ladder():
        mu = found.time(level)
        assert sp.profile(mu, cases, [float(level)])[0] <= 1e-6  # meets delta at its level
    assert found.refusal(D("0.3"), released=None, ladder=None).message.startswith("this listing sells the levels 0.0625")
    assert found.refusal(D("0.375"), released=None, ladder=None) is None
    assert found.level_sold(D("0.3"), ladder=None, ceiling=D("1")) == D("0.375")
    assert found.next_level(D("0.375"), D("1"), ladder=None) == D("0.5")
    with pytest.raises(ValueError, match="not on this Skellam listing's ladder"):
        found.time("0.3")
    assert mechanism("lattice").bound({"calibration": {}}) is mechanism("lattice")


def test_the_codec_keeps_pairs_of_counts():
    pairs = np.array([[3, 0], [2**40, 7]])
    assert np.array_equal(PAIRS.decode(PAIRS.encode(pairs)), pairs)
    with pytest.raises(ValueError):
        PAIRS.decode(b"\x00" * 8)
    with pytest.raises(ValueError):
        PAIRS.encode(np.array([1, 2, 3]))


def test_steps_in_any_order_give_each_weight_its_time_and_thin_down_the_levels():
    """First draw at 0.25, then 1 (thinning), then 0.5 (a bridge), on 3000 coordinates of each
    weight: each level's counts have the Poisson mean ``mu w^2`` (within 5 standard errors), and a
    higher level's counts never exceed a lower one's."""
    found = _bound()
    n = 3000
    weights = [1] * n + [2] * n
    rng = random.Random(7)
    low = found.step(D("0.25"), dim=2 * n, weights=weights, rng=rng)[0]
    high, how = found.step(D("1"), dim=2 * n, weights=weights, rng=rng, below=(D("0.25"), low))
    assert how == "relax"
    mid, how = found.step(D("0.5"), dim=2 * n, weights=weights, rng=rng, below=(D("0.25"), low), above=(D("1"), high))
    assert how == "bridge"
    assert (high <= mid).all() and (mid <= low).all()
    for level, counts in ((D("0.25"), low), (D("0.5"), mid), (D("1"), high)):
        for w, part in ((1, counts[:n]), (2, counts[n:])):
            mean = float(found.time(level)) * w * w
            assert abs(part.mean() - mean) < 5 * np.sqrt(mean / part.size), (level, w)
    top, how = found.step(D("0.75"), dim=2 * n, weights=weights, rng=rng, above=(D("1"), high))
    assert how == "tighten" and (top >= high).all()


def test_values_are_the_answer_plus_the_count_difference_clamped_on_the_grid():
    found = _bound()
    noise = np.array([[5, 2], [0, 9], [4, 4]])
    assert found.values(np.array([10, 1, 3]), noise, level=D("1"), weights=WEIGHTS, lower=[0, 0, 0],
                        upper=[100, 100, 100], grids=["1", "1", "0.5"]) == [13, 0, 1.5]


def test_a_mutated_calibration_would_be_caught():
    """The mutation: a time a tenth smaller than calibrated (less noise) no longer meets delta."""
    found = _bound()
    cases = shift_cases(CASES, WEIGHTS)
    mu = found.time(D("1"))
    assert sp.profile(mu * F(9, 10), cases, [1.0])[0] > 1e-6


def test_each_value_states_its_noise_variance_and_mean_error_by_the_exact_laws():
    """``value_variance``: ``2 mu w^2`` steps squared times the grid squared on the Skellam path (the
    variance of a difference of two Poisson counts of mean ``mu w^2``), ``2a / (1 - a)^2`` for the
    lattice's discrete Laplace ``DLap(a)``; each checked against the law summed term by term."""
    from types import SimpleNamespace

    from scipy import stats

    layout = SimpleNamespace(unit_weights=WEIGHTS, grids=(D("1"), D("0.5"), D("2")))
    found = _bound()
    level = found.ladder()[4]
    mu = float(found.time(level))
    for i, w in enumerate(WEIGHTS):
        law = stats.skellam(mu * w * w, mu * w * w)
        assert found.value_variance(layout, i, level) == pytest.approx(law.var() * float(layout.grids[i]) ** 2)
    lattice = mechanism("lattice")
    z = np.arange(-4000, 4001)
    for i, w in enumerate(WEIGHTS):
        a = np.exp(-0.5 / w)
        pmf = (1 - a) / (1 + a) * a ** np.abs(z)
        grid = float(layout.grids[i])
        assert lattice.value_variance(layout, i, D("0.5")) == pytest.approx(float((pmf * z * z).sum()) * grid ** 2)
        assert lattice.value_mean_error(layout, i, D("0.5")) == pytest.approx(float((pmf * np.abs(z)).sum()) * grid)
    assert mechanism("laplace").value_variance(layout, 0, D("1")) is None
