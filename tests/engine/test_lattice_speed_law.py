"""The lattice path's laws after its speed work (issue 13), checked against exact formulas.

The engine's steps are compared with their exact laws by a G-test: the law of
each step is written out here in floating point (tests may use floats; the
engine may not), its mass is cut into about 30 bins of equal probability
(heavy single values keep their own bin), and the counts of ``N`` draws made
with a fixed seed are tested. Each case fails when ``p < 1e-4`` (a false
alarm of 1e-4 per case); a wrong branch probability or a shifted geometric
moves ``G`` by hundreds at these sample sizes.

The exact constants are also checked directly: their integer brackets must
contain the value computed by mpmath at 60 digits, and a coin whose first 64
bits fall inside the bracket must decide by the next 64 bits exactly as the
comparison with the true value does.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from scipy import stats

from releases.engine import lattice
from releases.engine.exact_bounds import exp_neg, one_minus_exp_neg

pytestmark = pytest.mark.statistical

ALARM = 1e-4
N = 40_000


# --------------------------------------------------------------------------
# exact laws (floating point is fine in a test)


def dlap(level, k):
    a = np.exp(-float(level))
    return (1 - a) / (1 + a) * a ** np.abs(k)


def log_increment(lo, hi, w):
    """Log-law of ``W = V_lo - V_hi`` (tightening hi -> lo): 0 with probability p0, else DLap(e^{-lo})."""
    a, b = np.exp(-float(lo)), np.exp(-float(hi))
    p0 = b / a * ((1 - a) / (1 - b)) ** 2
    log_lap = np.log((1 - p0) * (1 - a) / (1 + a)) - float(lo) * np.abs(w)
    return np.where(w == 0, np.log(p0 + np.exp(log_lap)), log_lap)


def from_logs(logs):
    return np.exp(logs - logs.max())


def g_test(draws, support, pmf, bins: int = 30) -> float:
    """p-value of the G-test of ``draws`` against ``pmf`` on the integers ``support`` (ascending)."""
    pmf = pmf / pmf.sum()
    cdf = np.cumsum(pmf)
    cut = np.searchsorted(cdf, np.arange(1, bins) / bins)  # last value of each bin
    edges = np.unique(np.append(cut, len(pmf) - 1))
    expected = np.diff(np.concatenate([[0.0], cdf[edges]])) * len(draws)
    index = np.searchsorted(support[edges], np.asarray(draws, dtype=np.int64))
    assert index.max() < len(edges), "a draw outside the support"
    observed = np.bincount(index, minlength=len(edges))
    keep = expected > 0
    g = 2 * np.sum(np.where(observed > 0, observed * np.log(np.maximum(observed, 1) / expected), 0.0)[keep])
    return float(stats.chi2.sf(g, keep.sum() - 1))


def around(center, level):
    span = int(40 / float(level)) + 10
    return np.arange(center - span, center + span + 1)


# --------------------------------------------------------------------------
# the steps


@pytest.mark.parametrize("level", [F(1), F(1, 10), F(1, 1000), F(7), F(5, 2), F(99, 10), F(7, 10)])
def test_sample_is_discrete_laplace(level):
    draws = lattice.sample(level, N, random.Random(11))
    support = around(0, level)
    assert g_test(draws, support, dlap(level, support)) > ALARM


@pytest.mark.parametrize(
    "lo,hi,y",
    [(F(1), F(2), 0), (F(1), F(2), 7), (F(1, 100), F(1, 10), -40), (F(1), F(1001, 1000), 3), (F(1, 10), F(10), 0)],
)
def test_tighten_adds_the_increment(lo, hi, y):
    draws = lattice.tighten([y] * N, hi, lo, random.Random(12))
    support = around(y, lo)
    assert g_test(draws, support, from_logs(log_increment(lo, hi, support - y))) > ALARM


@pytest.mark.parametrize(
    "lo,hi,x",
    [
        (F(1), F(2), 0),
        (F(1), F(2), -5),
        (F(1), F(1001, 1000), 0),
        (F(1), F(1001, 1000), 9),
        (F(1), F(1001, 1000), -5000),
        (F(1, 10), F(10), 30),
        (F(1, 1000), F(2, 1000), 700),
        (F(1, 1000), F(1, 10), 0),
    ],
)
def test_relax_is_the_conditional_law(lo, hi, x):
    draws = lattice.relax([x] * N, lo, hi, random.Random(13))
    support = around(0, lo) if x == 0 else np.arange(min(0, x) - int(40 / float(lo)), max(0, x) + int(40 / float(lo)))
    a = np.exp(-float(hi))
    log_dlap = np.log((1 - a) / (1 + a)) - float(hi) * np.abs(support)
    pmf = from_logs(log_dlap + log_increment(lo, hi, x - support))
    assert g_test(draws, support, pmf) > ALARM


BRIDGES = [
    (F(1), F(3, 2), F(2)),
    (F(1), F(20005, 20000), F(1001, 1000)),
    (F(1, 10), F(1), F(10)),
    (F(1, 10), F(505, 100), F(10)),
    (F(1, 1000), F(1, 100), F(1, 10)),
    (F(1, 1000), F(3, 2000), F(2, 1000)),
]


@pytest.mark.parametrize("lo,mid,hi", BRIDGES)
@pytest.mark.parametrize("x_lo,x_hi", [(0, 0), (6, 6), (0, 3), (-4, 25), (50, -10**6)])
def test_bridge_is_the_conditional_law(lo, mid, hi, x_lo, x_hi):
    """``V_mid`` given both ends: proportional to P(W1 = v - x_hi) P(W2 = x_lo - v)."""
    draws = lattice.bridge([x_lo] * (N // 4), lo, [x_hi] * (N // 4), hi, mid, random.Random(14))
    span = int(40 / float(lo)) + 10
    support = np.arange(min(x_lo, x_hi) - span, max(x_lo, x_hi) + span + 1)
    pmf = from_logs(log_increment(mid, hi, support - x_hi) + log_increment(lo, mid, x_lo - support))
    assert g_test(draws, support, pmf) > ALARM


# --------------------------------------------------------------------------
# the exact constants


RATIONALS = [F(1), F(1, 10**12), F(10**6), F(3, 7), F(123456789, 1000), F(37, 3000000), F(999999, 10**6), F(2)]


@pytest.mark.parametrize("bits", [64, 200])
def test_bounds_contain_the_exact_values(bits):
    mpmath.mp.dps = 80
    rnd = random.Random(15)
    xs = RATIONALS + [F(rnd.randrange(1, 10**9), rnd.choice([1, 7, 1000, 30000, 10**8])) for _ in range(60)]
    for x in xs:
        v = mpmath.mpf(x.numerator) / x.denominator
        for fn, exact in ((exp_neg, mpmath.exp(-v)), (one_minus_exp_neg, -mpmath.expm1(-v))):
            iv = fn(x.numerator, x.denominator, bits)
            lo, hi = (mpmath.mpf(iv.lo) * mpmath.mpf(2) ** iv.e, mpmath.mpf(iv.hi) * mpmath.mpf(2) ** iv.e)
            assert lo <= exact <= hi, (fn.__name__, x)
            assert hi - lo <= exact * mpmath.mpf(2) ** (4 - bits), (fn.__name__, x)


class _Script:
    """A bit source that returns the given values, one per call."""

    def __init__(self, values):
        self.values = list(values)

    def getrandbits(self, k):
        return self.values.pop(0) % (1 << k)


def test_coin_refines_inside_its_bracket():
    """A first draw inside the coin's first bracket is decided by the next 64 bits, as the true value says."""
    mpmath.mp.dps = 80
    lo, hi, k = F(1, 3), F(1, 2), lattice._FIRST_BITS
    coin = lattice._Ratio(lo, hi)  # (1 - e^{-1/3}) / (1 - e^{-1/2})
    p = mpmath.expm1(-mpmath.mpf(1) / 3) / mpmath.expm1(-mpmath.mpf(1) / 2)
    first = int(mpmath.floor(p * mpmath.mpf(2) ** k))
    exact = int(mpmath.floor(p * mpmath.mpf(2) ** (k + 64))) - (first << 64)  # the next 64 bits of p
    for second in (0, exact - 1, exact + 1, (1 << 64) - 1):
        assert coin(_Script([first, second])) is (second < exact)
    assert coin(_Script([first - 1])) is True and coin(_Script([first + 2])) is False


def test_units_is_the_count_of_e_minus_one_coins():
    """``P(V = j) = e^{-j} (1 - e^{-1})``; a first draw inside the bracket of ``e^{-1}`` is
    decided by the next 64 bits of the same uniform."""
    rng = random.Random(16)
    draws = [lattice._units(rng) for _ in range(N)]
    support = np.arange(0, 60)
    assert g_test(draws, support, np.exp(-support.astype(float))) > ALARM

    mpmath.mp.dps = 80
    e1 = mpmath.exp(-1)
    first = int(mpmath.floor(e1 * mpmath.mpf(2) ** 64))
    nxt = int(mpmath.floor(e1 * mpmath.mpf(2) ** 128)) - (first << 64)
    assert lattice._units(_Script([first, nxt - 1])) == 1  # U < e^{-1}, and far above e^{-2}
    assert lattice._units(_Script([first, nxt + 1])) == 0


class _OneBit:
    """A source whose first block has the single bit ``i`` set, and all later bits 0."""

    def __init__(self, i):
        self.blocks = [1 << i]

    def getrandbits(self, k):
        return self.blocks.pop(0) if self.blocks else 0


@pytest.mark.parametrize("i", [0, 1, 63, 64, 1000, lattice._Bits.BLOCK - 1])
def test_bit_buffer_hands_out_every_bit_once(i):
    """Requests of mixed sizes over one block deliver its set bit exactly once."""
    bits, sizes, seen, served = lattice._Bits(_OneBit(i)), random.Random(i), 0, 0
    while served < lattice._Bits.BLOCK:
        k = min(sizes.randrange(0, 130), lattice._Bits.BLOCK - served)
        seen += bin(bits.getrandbits(k)).count("1")
        served += k
    assert seen == 1


def test_bit_source_buffers_only_slow_sources():
    fast = random.Random(1)
    assert lattice._bit_source(fast) is fast
    assert isinstance(lattice._bit_source(lattice.new_rng()), lattice._Bits)


def test_every_step_reads_the_system_through_a_buffer_of_its_own():
    """No buffered bits outlive a call: each call wraps the system generator in a new buffer, so
    nothing read before a fork (or by another call) can be handed out again."""
    system = lattice.new_rng()
    one, two = lattice._bit_source(system), lattice._bit_source(system)
    assert one is not two and one.words == [] and two.words == [] and one.left == two.left == 0


def test_a_forked_child_and_its_parent_draw_different_noise():
    """Draw, fork, and draw again in both processes: no buffer holds bits the child inherits, so
    the two draws of 20 coordinates differ (equal with probability below 0.09^20, about 2^-69).
    A buffer kept across calls would serve both from the bits it read before the fork: the draw
    before it is one coordinate, the draws after it fit in what such a buffer would have left."""
    import os

    level, rng = F(1, 3), lattice.new_rng()
    lattice.sample(level, 1, rng)  # a call before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its draw to the parent, then out without running the parent's cleanup
        try:
            os.write(write, lattice.sample(level, 20, rng).astype("<i8").tobytes())
        finally:
            os._exit(0)
    os.close(write)
    parent = lattice.sample(level, 20, rng)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    child = np.frombuffer(b"".join(chunks), dtype="<i8")
    assert child.size == 20
    assert not np.array_equal(child, parent)


def _contains(interval, value) -> bool:
    two = mpmath.mpf(2) ** interval.e
    return interval.lo * two <= value <= interval.hi * two and (interval.hi - interval.lo) * two <= value * 2**-70


LEVEL_TRIPLES = [
    (F(1), F(3, 2), F(2)),
    (F(1, 10), F(505, 100), F(10)),
    (F(1, 10**5), F(10001, 10**9), F(10002, 10**9)),
    (F(1, 10**12), F(3, 10**12), F(10**5)),
    (F(999, 1000), F(1), F(10**6)),
]


@pytest.mark.parametrize("lo,mid,hi", LEVEL_TRIPLES)
def test_constants_match_their_closed_forms(lo, mid, hi):
    """The coins' brackets against other closed forms at 60 digits:
    ``p0 = sinh^2(lo/2) / sinh^2(hi/2)``, ``beta = (cosh mid - cosh lo) / (cosh hi - cosh lo)``,
    ``gamma = 2 (cosh hi - cosh mid)(cosh mid - cosh lo) ml / ((1 - ml) sinh(mid) (cosh hi - e^{-lo}))``."""
    mpmath.mp.dps = 60
    lam, mu, eta = (mpmath.mpf(x.numerator) / x.denominator for x in (lo, mid, hi))
    ml = mpmath.exp(-(lam + mu))
    c = mpmath.cosh
    p0 = mpmath.sinh(lam / 2) ** 2 / mpmath.sinh(eta / 2) ** 2
    beta = (c(mu) - c(lam)) / (c(eta) - c(lam))
    gamma = 2 * (c(eta) - c(mu)) * (c(mu) - c(lam)) * ml / ((1 - ml) * mpmath.sinh(mu) * (c(eta) - mpmath.exp(-lam)))
    gap, triple = lattice._Gap(lo, hi), lattice._Triple(lo, mid, hi)
    gap.stay(random.Random(1))  # makes the coin
    assert _contains(gap._p0.bounds(80), p0)
    assert _contains(triple.holds.bounds(80), beta)
    assert _contains(triple.moves.bounds(80), gamma)
    moves = gap.moves()
    r, q = mpmath.exp(-(eta - lam)), mpmath.exp(-(eta + lam))
    assert 256 / (1 - r) <= moves.span <= 256 / (1 - r) + 8 and moves.cap >= 1 / (1 - r)
    assert 256 * q / (1 - q) <= moves.tails <= 256 * q / (1 - q) + 8
