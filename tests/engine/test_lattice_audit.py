"""A black-box privacy audit of two lattice releases at levels e1 < e2.

Neighbouring datasets give the integer answers u = 0 and u = 1 (unit
sensitivity). A buyer sees ``(u + V_e1, u + V_e2)`` from one path. Under each
answer we draw ``N`` independent joint releases (fixed seeds, a bit source
with ``getrandbits`` only) and, for every event "y1 in A and y2 in B" with A
and B each a lower tail ``{y <= t}``, an upper tail ``{y > t}`` (t = -6..6) or
everything, bound the privacy loss ``ln(P(event | u) / P(event | u'))`` from
below in both directions: a Clopper-Pearson lower bound on the numerator
over an upper bound on the denominator. With Bonferroni's correction over all
events, directions and both bounds, the bounds hold together with
probability at least 1 - 1e-6: a bound above e2 would mean that, with that
confidence, the pair is not e2-DP.

The path (sampled at e1 and relaxed to e2, or sampled at e2 and tightened to
e1) must show no loss above e2, and the audit must see more than e1 (it looks
at the second release). Independent noise at the two levels costs e1 + e2, and
the same audit must catch it above e2.
"""

from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

from releases.engine import lattice

from .lattice_checks import bits_only

pytestmark = pytest.mark.statistical

N = 60_000
E1, E2 = F(1, 2), F(1)
FALSE_ALARM = 1e-6
T = np.arange(-6, 7)


def _event_matrix() -> np.ndarray:
    """Rows: the sets {y <= t}, {y > t} (t in T) and everything, over outputs clipped to
    [T[0] - 1, T[-1] + 1] (clipping changes none of these sets)."""
    values = np.arange(T[0] - 1, T[-1] + 2)
    lower = values[None, :] <= T[:, None]
    return np.vstack([lower, ~lower, np.ones((1, values.size), bool)]).astype(float)


def event_counts(y1, y2) -> np.ndarray:
    """How many of the joint releases fall in each event (A, B), flattened."""
    lo, hi = T[0] - 1, T[-1] + 1
    size = hi - lo + 1
    cells = (np.clip(y1, lo, hi) - lo) * size + (np.clip(y2, lo, hi) - lo)
    grid = np.bincount(cells, minlength=size * size).reshape(size, size)
    events = _event_matrix()
    return (events @ grid @ events.T).ravel()


def audit(release) -> tuple[float, float]:
    """Largest lower confidence bound on the privacy loss over all events, and the largest
    point estimate among events seen at least 1000 times under both answers."""
    c0, c1 = event_counts(*release(0, 1)), event_counts(*release(1, 2))
    alpha = FALSE_ALARM / (2 * c0.size * 2)
    bound, estimate = -np.inf, -np.inf
    for num, den in ((c1, c0), (c0, c1)):
        with np.errstate(divide="ignore", invalid="ignore"):
            low = stats.beta.ppf(alpha, num, N - num + 1)
            high = stats.beta.ppf(1 - alpha, den + 1, N - den)
            b = np.log(low / high)
            e = np.log(num / den)
        bound = max(bound, b[np.isfinite(b)].max())
        estimate = max(estimate, e[(num >= 1000) & (den >= 1000)].max())
    return float(bound), float(estimate)


def upwards(u, seed):
    rng = bits_only(seed)
    v1 = lattice.sample(E1, N, rng)
    return u + v1, u + lattice.relax(v1, E1, E2, rng)


def downwards(u, seed):
    rng = bits_only(seed)
    v2 = lattice.sample(E2, N, rng)
    return u + lattice.tighten(v2, E2, E1, rng), u + v2


def independent(u, seed):
    rng = bits_only(seed)
    return u + lattice.sample(E1, N, rng), u + lattice.sample(E2, N, rng)


@pytest.mark.parametrize("release", [upwards, downwards], ids=["sample e1, relax", "sample e2, tighten"])
def test_a_path_costs_its_largest_level(release, report):
    bound, estimate = audit(release)
    report(f"lattice path {release.__name__} at {E1} and {E2}: largest loss estimate {estimate:.3f}, "
           f"lower bound {bound:.3f} (claim: <= {E2})")
    assert bound <= E2
    assert bound > E1


def test_independent_noise_is_caught_costing_the_sum(report):
    bound, estimate = audit(independent)
    report(f"independent lattice releases at {E1} and {E2}: largest loss estimate {estimate:.3f}, "
           f"lower bound {bound:.3f} (true cost {E1 + E2})")
    assert bound > E2 + F(1, 4)
