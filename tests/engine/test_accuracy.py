"""Buying in steps is as accurate as buying at once (gradual release, Theorem 12)."""

import numpy as np
import pytest

from releases.engine.mechanism import relax

from tests import mc

# Draws: 400,000 at the full size (GRADUAL_MC=full, CI), 100,000 at the quick one. Tolerances were
# set at 400,000 and widen with 1/sqrt(N) (mc.widen), so they stay as many sds wide at either size.
N = mc.size(full=400_000, quick=100_000)
pytestmark = pytest.mark.statistical
EPS = 1.0
STEPS = 10


def test_ten_relaxation_steps_are_optimal_and_independent_releases_are_not(rng, report):
    levels = EPS * np.arange(1, STEPS + 1) / STEPS
    v = rng.laplace(0.0, 1.0 / levels[0], N)
    chain_mse = [float(np.mean(v**2))]
    for lo, hi in zip(levels[:-1], levels[1:]):
        v = relax(v, lo, hi, rng)
        chain_mse.append(float(np.mean(v**2)))
    # every intermediate answer is as accurate as if its level were bought at once
    for level, mse in zip(levels, chain_mse):
        assert mse == pytest.approx(2.0 / level**2, rel=mc.widen(0.02, full=400_000, n=N))

    # ten independent Laplace releases, each paid with eps/10 (composition: eps
    # in total), combined by their best linear unbiased estimate (equal
    # variances: the mean)
    independent = rng.laplace(0.0, STEPS / EPS, (STEPS, N))
    indep_mse = float(np.mean(independent.mean(axis=0) ** 2))
    ratio = indep_mse / chain_mse[-1]
    report(
        f"MSE after {STEPS} relaxation steps to eps={EPS}: {chain_mse[-1]:.4f} "
        f"(optimal 2/eps^2 = {2 / EPS**2:.4f})",
        f"MSE of {STEPS} independent releases at eps/{STEPS}, averaged: {indep_mse:.4f} "
        f"({ratio:.2f}x worse)",
    )
    assert indep_mse == pytest.approx(2.0 * STEPS / EPS**2, rel=mc.widen(0.02, full=400_000, n=N))
    assert 9.0 < ratio < 11.0
