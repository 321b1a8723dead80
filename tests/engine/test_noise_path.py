"""NoisePath: one stored path, read in any order, never re-sampled."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from releases.engine.path import NoisePath

from tests import mc

from .laws import binomial_close, corr, laplace_cdf


class NoRandomness:
    """Stands in for a generator that must not be used."""

    def __getattr__(self, name):
        raise AssertionError(f"a known level was sampled again (rng.{name})")


def test_each_request_takes_the_step_that_fits(rng):
    path = NoisePath(3)
    assert path.draw(1.0, rng).method == "initial"
    assert path.draw(2.0, rng).method == "relax"
    assert path.draw(0.5, rng).method == "tighten"
    assert path.draw(1.5, rng).method == "bridge"
    first = path.noise_at(1.5, NoRandomness())
    assert path.draw(1.5, NoRandomness()).method == "reuse"
    assert np.array_equal(path.noise_at(1.5, NoRandomness()), first)
    assert path.levels.tolist() == [0.5, 1.0, 1.5, 2.0]
    assert path.max_level == 2.0 and len(path) == 4
    assert path.plan(3.0) == "relax" and len(path) == 4  # planning samples nothing


@settings(max_examples=200, deadline=None)
@given(
    requests=st.lists(
        st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 8.0]), min_size=1, max_size=30
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_known_level_is_never_sampled_again_whatever_the_order(requests, seed):
    rng = np.random.default_rng(seed)
    path = NoisePath(2)
    first_seen = {}
    for eps in requests:
        if eps in first_seen:
            noise = path.noise_at(eps, NoRandomness())
            assert np.array_equal(noise, first_seen[eps])
        else:
            first_seen[eps] = path.noise_at(eps, rng)
    assert sorted(first_seen) == path.levels.tolist()
    for eps, noise in first_seen.items():
        assert np.array_equal(path.noise_at(eps, NoRandomness()), noise)
    # and it survives storage bit for bit
    assert NoisePath.from_bytes(path.to_bytes()) == path


@pytest.mark.statistical
def test_any_order_of_requests_gives_the_joint_law_of_the_path(rng):
    """Levels asked for as 2.0, then 0.5, then 1.0 (initial, tighten, bridge)
    have the joint law of a path built upwards. Each coordinate is an
    independent path, so one NoisePath of dimension n holds n sample paths. 300,000 paths at the full
    size, 75,000 at the quick one (GRADUAL_MC); the correlation tolerance (0.012 at 300,000, about 4 sd)
    widens with 1/sqrt(n)."""
    n = mc.size(full=300_000, quick=75_000)
    tol = mc.widen(0.012, full=300_000, n=n)
    path = NoisePath(n)
    v2 = path.noise_at(2.0, rng)
    v05 = path.noise_at(0.5, rng)
    v1 = path.noise_at(1.0, rng)
    for v, eps in ((v2, 2.0), (v05, 0.5), (v1, 1.0)):
        assert stats.kstest(v, laplace_cdf(1 / eps)).pvalue > 1e-3
    assert corr(v05, v1) == pytest.approx(0.5, abs=tol)
    assert corr(v1, v2) == pytest.approx(0.5, abs=tol)
    assert corr(v05, v2) == pytest.approx(0.25, abs=tol)
    assert binomial_close(int(np.sum(v05 == v1)), n, 0.25)
    assert binomial_close(int(np.sum(v1 == v2)), n, 0.25)


def test_storage_round_trip_is_exact(rng):
    path = NoisePath(4)
    for eps in (0.3, 1.7, 0.9, 5.0):
        path.noise_at(eps, rng)
    blob = path.to_bytes()
    back = NoisePath.from_bytes(blob)
    assert back.to_bytes() == blob
    assert np.array_equal(back.levels, path.levels)
    assert np.array_equal(back.values, path.values)
    assert NoisePath.from_bytes(NoisePath(7).to_bytes()) == NoisePath(7)
    # the stored size is the released levels, nothing per request
    for _ in range(100):
        path.noise_at(1.7, rng)
    assert path.to_bytes() == blob


@pytest.mark.parametrize(
    "mangle,message",
    [
        (lambda b: b[:10], "too short"),
        (lambda b: b"XXXX" + b[4:], "not a stored"),
        (lambda b: b[:4] + b"\x09" + b[5:], "version"),
        (lambda b: b[:-8], "bytes, expected"),
        (lambda b: b[:16] + np.float64(np.nan).tobytes() + b[24:], "positive and finite"),
        (lambda b: b[:16] + np.float64(9.0).tobytes() + b[24:], "strictly increasing"),
    ],
)
def test_corrupt_storage_is_refused(mangle, message, rng):
    path = NoisePath(2)
    path.noise_at(1.0, rng)
    path.noise_at(2.0, rng)
    with pytest.raises(ValueError, match=message):
        NoisePath.from_bytes(mangle(path.to_bytes()))


def test_bad_requests_change_nothing(rng):
    path = NoisePath(2)
    path.noise_at(1.0, rng)
    before = path.to_bytes()
    for bad in (0, -1.0, float("nan"), float("inf"), "abc", None):
        with pytest.raises(ValueError):
            path.noise_at(bad, rng)
    assert path.to_bytes() == before
    with pytest.raises(ValueError):
        NoisePath(0)
    with pytest.raises(ValueError):
        NoisePath(2, [2.0, 1.0], np.zeros((2, 2)))
