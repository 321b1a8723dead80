"""The float path's delta: the bench's exact computation and the recorded figure.

``bench/float_delta.py`` counts, by bisection, how many uniforms ``k 2^-bits``
land on each grid point. On a toy sampler with a 12- or 14-bit uniform every
``k`` can be evaluated, so the counts and the delta are checked against brute
force. On the real 53-bit sampler the recorded constant must cover what the
script computes.
"""

import math

import pytest

from bench import float_delta as fd
from releases.engine.guarantee import FLOAT_PATH_DELTA, MEASURED_DELTAS, float_path_statement
from releases.engine.postprocess import grid_step


@pytest.mark.parametrize(("bits", "eps", "u"), [(12, 1.0, 0.0), (12, 0.5, 7.0), (14, 2.0, 1000.0)])
def test_bisection_counts_equal_brute_force(bits, eps, u):
    scale = 1.0 / eps
    step = grid_step(scale)
    assert fd.cell_counts(u, scale, step, bits) == fd.brute_counts(u, scale, step, bits)


@pytest.mark.parametrize(("bits", "eps"), [(12, 1.0), (14, 0.5)])
def test_toy_delta_equals_brute_force(bits, eps):
    """The hockey-stick sum, recomputed here in plain floats from every uniform."""
    scale = 1.0 / eps
    step = grid_step(scale)
    total = 2**bits - 1
    p = fd.brute_counts(0.0, scale, step, bits)
    q = fd.brute_counts(1.0, scale, step, bits)

    def hs(x, y):
        return sum(max(0.0, n / total - math.exp(eps) * y.get(k, 0) / total) for k, n in x.items())

    want = max(hs(p, q), hs(q, p))
    got = fd.float_delta(eps, 0.0, ubits=bits)
    assert got == pytest.approx(want, rel=1e-9)
    # a coarse uniform has a near edge: the delta is far from zero
    assert got > 1e-4


def test_fewer_bits_give_a_larger_delta():
    assert fd.float_delta(1.0, 0.0, ubits=12) > fd.float_delta(1.0, 0.0, ubits=20) > fd.float_delta(1.0, 0.0, ubits=28)


def test_replica_is_numpys_sampler():
    fd.check_replica(20_000)


@pytest.mark.parametrize("eps", [1.0, 5.0])
def test_recorded_constant_covers_the_computation(eps):
    d = fd.float_delta(eps, 0.0)
    assert 0 < d <= MEASURED_DELTAS[eps] * (1 + 1e-3)
    assert d > MEASURED_DELTAS[eps] / 2  # the table is a measurement, not a guess
    assert max(MEASURED_DELTAS.values()) <= FLOAT_PATH_DELTA


def test_statement():
    line = float_path_statement()
    assert "δ below 1e-11" in line and "(ε, δ)-differentially private" in line
    assert "δ below 3e-11" in float_path_statement(3)
    assert "δ below 6e-10" in float_path_statement(53)  # 5.3e-10 rounded up, never down to 5e-10
    assert "δ below 1e-09" in float_path_statement(95)
    with pytest.raises(ValueError):
        float_path_statement(0)
