"""An empirical privacy audit of the joint release (y1, y2) at levels e1 < e2.

For neighbouring answers u = 0 and u = 1 (unit sensitivity) we sample many
joint releases under each, and for every event "y1 in a tail set and y2 in a
tail set" compute a Clopper-Pearson lower confidence bound on the privacy loss
ln(P(event | u) / P(event | u')), in both directions. The bounds hold jointly
(Bonferroni) at a false-alarm level of 1e-6: a bound above eps means the
release is, with that confidence, not eps-DP.

The gradual release must show no loss above e2; the same audit on two
independent releases must find their true cost e1 + e2 > e2.
"""

import numpy as np
import pytest
from scipy import stats

from releases.engine.mechanism import relax

pytestmark = pytest.mark.statistical

N = 1_000_000
E1, E2 = 0.5, 1.0
FALSE_ALARM = 1e-6
THRESHOLDS = np.array([-4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 5], float)


def tail_counts(y1, y2):
    """Counts of {y1 <= t or y1 > t (or anything)} x {same for y2} for all thresholds."""
    b1 = np.searchsorted(THRESHOLDS, y1)
    b2 = np.searchsorted(THRESHOLDS, y2)
    k = THRESHOLDS.size + 1
    grid = np.bincount(b1 * k + b2, minlength=k * k).reshape(k, k)
    # lower tail "y <= T[i]" is bins 0..i; upper tail "y > T[i]" is bins i+1..
    low = np.cumsum(grid, axis=0)[:-1]
    up = np.cumsum(grid[::-1], axis=0)[::-1][1:]
    rows = np.concatenate([low, up, grid.sum(axis=0, keepdims=True)])
    low2 = np.cumsum(rows, axis=1)[:, :-1]
    up2 = np.cumsum(rows[:, ::-1], axis=1)[:, ::-1][:, 1:]
    return np.concatenate([low2, up2, rows.sum(axis=1, keepdims=True)], axis=1).ravel()


def audit(sample):
    """Largest lower confidence bound on the privacy loss over all events."""
    c0 = tail_counts(*sample(0.0))
    c1 = tail_counts(*sample(1.0))
    tests = 2 * c0.size
    alpha = FALSE_ALARM / tests / 2  # each bound uses one lower and one upper bound
    best_bound, best_estimate = -np.inf, -np.inf
    for num, den in ((c1, c0), (c0, c1)):
        lower = stats.beta.ppf(alpha, num, N - num + 1)  # CP lower for p_num
        upper = stats.beta.ppf(1 - alpha, den + 1, N - den)  # CP upper for p_den
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.log(lower / upper)
            estimate = np.log(num / den)
        bound = bound[np.isfinite(bound)]
        estimate = estimate[np.isfinite(estimate) & (num >= 1000) & (den >= 1000)]
        best_bound = max(best_bound, bound.max())
        best_estimate = max(best_estimate, estimate.max())
    return best_bound, best_estimate


def test_gradual_release_costs_the_largest_level_and_independent_noise_costs_the_sum(
    rng, report
):
    def gradual(u):
        v1 = rng.laplace(0.0, 1.0 / E1, N)
        return u + v1, u + relax(v1, E1, E2, rng)

    def independent(u):
        return u + rng.laplace(0.0, 1.0 / E1, N), u + rng.laplace(0.0, 1.0 / E2, N)

    g_bound, g_est = audit(gradual)
    i_bound, i_est = audit(independent)
    report(
        f"gradual release at {E1} then {E2}: largest loss estimate {g_est:.3f}, "
        f"lower bound {g_bound:.3f} (claim: <= {E2})",
        f"independent releases at {E1} and {E2}: largest loss estimate {i_est:.3f}, "
        f"lower bound {i_bound:.3f} (true cost {E1 + E2})",
    )
    # no event shows a loss above e2 ...
    assert g_bound <= E2
    # ... yet the audit sees more than e1: it is looking at the second release
    assert g_bound > E1
    # the audit is able to fail: independent noise costs e1 + e2 and is caught
    assert i_bound > E2 + 0.25
