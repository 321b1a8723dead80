"""A coalition of buyers learns no more than its closest member (the highest level held).

Buyers at levels e_1 < ... < e_m pool their answers y_i = u + w V_{e_i}, all read
off the listing's one noise path. On the path, Cov(V_a, V_b) = 2 / max(a, b)^2, so
every lower answer is the top answer plus noise independent of it: the best
linear unbiased estimate (BLUE) from all of them puts all its weight on the top
answer. The test checks this exactly, then empirically on real releases, and
shows that the same pooling of independent releases would beat the top buyer.
"""

from decimal import Decimal

from tests.datasets import ready_dataset
import numpy as np
import pytest

from market.catalog.services import listing_create
from market.trading.services import purchase_create
from releases.models import Release

from tests.fixtures.market import HIST_BINS, make_csv

pytestmark = pytest.mark.django_db
LEVELS = ["0.25", "0.5", "0.75", "1", "1.25", "1.5", "1.75", "2"]


def blue_weights(cov: np.ndarray) -> np.ndarray:
    """Weights of the best linear unbiased estimate of a common mean."""
    ones = np.ones(len(cov))
    w = np.linalg.solve(cov, ones)
    return w / w.sum()


@pytest.mark.slow  # tens of seconds even at the quick size: --all and CI run it (docs/testing.md)
def test_the_best_pooled_estimate_is_the_closest_buyers_answer(owner, users, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks, report):
    eps = np.array([float(level) for level in LEVELS])
    path_cov = 2.0 / np.maximum.outer(eps, eps) ** 2
    weights = blue_weights(path_cov)
    assert np.allclose(weights, np.eye(len(eps))[-1], atol=1e-12)  # everything on the top answer

    # real releases: 40 listings (independent paths), 8 buyers each at the 8 levels
    buyers = [users(f"member{i}") for i in range(len(LEVELS))]
    for who in buyers:
        fund(who, 10_000)
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(400), total_budget="100")
    spec = [{"kind": "count"}, {"kind": "histogram", "column": "age", "bins": HIST_BINS}]  # 51 values, equal weights
    errors = []
    for _ in range(40):
        listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="t", statistics=spec, ceiling="2", price_per_epsilon="1")
        for who, level in zip(buyers, LEVELS):
            with django_capture_on_commit_callbacks(execute=True):
                purchase_create(buyer=who, listing_id=listing.pk, epsilon=level)
        truth = listing.true_answer()
        answers = [np.array(Release.objects.get(listing=listing, level=Decimal(level)).values) for level in LEVELS]
        errors.append(np.array(answers) - truth)  # (levels, values)
    e = np.concatenate(errors, axis=1)  # one column per (listing, value): 2040 pooled answers

    top = np.mean(e[-1] ** 2)
    average = np.mean(e.mean(axis=0) ** 2)
    independent_weights = eps**2 / np.sum(eps**2)  # inverse-variance, as if independent
    as_if_independent = np.mean((independent_weights @ e) ** 2)
    # the empirical best linear combination (weights summing to 1, least squares), with the
    # ordinary least-squares standard errors of its weights
    a = (e[:-1] - e[-1]).T
    coef, *_ = np.linalg.lstsq(a, -e[-1], rcond=None)
    empirical = np.append(coef, 1 - coef.sum())
    residual = -e[-1] - a @ coef
    cov = np.mean(residual**2) * np.linalg.inv(a.T @ a)
    se = np.append(np.sqrt(np.diag(cov)), np.sqrt(cov.sum()))
    report(
        f"coalition of {len(LEVELS)} buyers at eps {LEVELS[0]}..{LEVELS[-1]}: MSE of the top answer {top:.3f},",
        f"of the average {average:.3f}, of inverse-variance pooling {as_if_independent:.3f};",
        f"empirical best weights {np.round(empirical, 3).tolist()} (standard errors {np.round(se, 3).tolist()})",
    )
    assert average > 1.5 * top and as_if_independent > 1.05 * top
    # every lower answer's weight is 0 and the top one's 1, within 4.5 standard errors (about 0.04
    # to 0.2 here; 8 weights, so a false alarm below 1e-4); pooling independent releases would put
    # about 0.23 on the answer at 1.75 alone (eps^2 / sum eps^2), many standard errors away
    assert abs(empirical[-1] - 1) < 4.5 * se[-1], (empirical, se)
    assert np.all(np.abs(empirical[:-1]) < 4.5 * se[:-1]), (empirical, se)
    assert np.all(se < 0.25)  # precise enough to tell the two apart

    # the contrast that shows the test can fail: independent releases at the same
    # levels, pooled by inverse variance, are more accurate than the top one alone
    rng = np.random.default_rng(7)
    scale = 2.0  # the weight of each value here: two groups of sensitivity 1
    independent = rng.laplace(0.0, scale / eps[:, None], (len(eps), e.shape[1]))
    assert np.mean((independent_weights @ independent) ** 2) < 0.8 * np.mean(independent[-1] ** 2)
