"""Bit-report microdata (``releases.engine.bitreport``): the vectorized exact sampler, its
reports, their decoding, their privacy along a ladder, and their storage.

The statistical checks follow the lattice path's (``lattice_checks``): fixed
seeds, a G-test against an exact law (``lattice_laws``, written from the
definitions alone) rejected below ``ALARM`` = 1e-4, or a count within 5
standard deviations of its exact expectation. Each test's docstring says what
it checks and which broken engine (mutation) it catches; ``Mutant`` tests
apply a mutation with ``monkeypatch`` and show the same check rejecting it.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction as F
from itertools import pairwise

import mpmath
import numpy as np
import pytest
from scipy import stats

from releases.engine import bitreport as br
from releases.engine import lattice

from . import lattice_checks as checks
from . import lattice_laws as laws
from .laws import binomial_close

pytestmark = pytest.mark.statistical

N = 250_000


def src(seed: int) -> br.WordSource:
    return br.WordSource.from_generator(np.random.default_rng(seed))


def exact_rates(level) -> tuple[float, float]:
    """``(p, q)`` from the definition of the report: ``P(y + V >= 1)`` summed over ``DLap``."""
    law = laws.dlap(level)
    return 1 - math.exp(law.log_mass(e=-1)), 1 - math.exp(law.log_mass(e=0))


# --------------------------------------------------------------------------
# the law of sample and tighten


@pytest.mark.parametrize("level", [F(1, 100), F(1, 8), F(1), F(3)])
def test_sample_follows_dlap(level):
    """``sample`` is ``DLap(e^{-level})`` (G-test, 250k draws), at a small, a middle and a large level.

    Catches thresholds ``alpha^j`` in place of ``2 alpha^j / (1 + alpha)`` (the geometric without
    its zero coin)."""
    fit = checks.fit(laws.dlap(level), br.sample(level, N, src(11)))
    assert fit.passes, fit


def test_sample_shape_and_dtype():
    """Any shape, int64; an empty shape gives an empty array. Catches a flat or float result."""
    v = br.sample(F(1, 2), (7, 3), src(1))
    assert v.shape == (7, 3) and v.dtype == np.int64
    assert br.sample(F(1, 2), (0, 20), src(1)).shape == (0, 20)


def test_sample_over_chunks_is_one_law(monkeypatch):
    """Chunked sampling (a small ``CHUNK``) is still ``DLap``, and the chunks differ (a chunk
    reusing another's words would repeat its draws)."""
    monkeypatch.setattr(br, "CHUNK", 1000)
    v = br.sample(F(1, 4), 20_000, src(5))
    assert not np.array_equal(v[:1000], v[1000:2000])
    fit = checks.fit(laws.dlap(F(1, 4)), v)
    assert fit.passes, fit


@pytest.mark.parametrize("lo,hi", [(F(1, 16), F(1, 8)), (F(1), F(2)), (F(1, 100), F(3)), (F(1), F(1001, 1000))])
@pytest.mark.parametrize("y", [0, 3])
def test_tighten_from_a_fixed_value(y, lo, hi):
    """``V_lo`` given ``V_hi = y`` is ``y + W``, ``W = 0`` with ``p0``, else ``DLap(a)`` (G-test, 250k).

    Catches ``p0`` without its square, ``W`` drawn at the upper level, and a stay coin read the
    wrong way round (``U >= p0`` means stay)."""
    fit = checks.fit(laws.tighten_law(y, lo, hi), br.tighten(np.full(N, y), hi, lo, src(21)))
    assert fit.passes, fit


@pytest.mark.parametrize("lo,hi", [(F(1, 8), F(1, 4)), (F(1, 2), F(1)), (F(1), F(3))])
def test_the_pair_follows_the_path(lo, hi):
    """Sample at ``hi`` and tighten to ``lo``: the joint law of ``(V_lo, V_hi)`` (G-test on the exact
    table), ``P(V_lo = V_hi) = p0 + (1 - p0) tanh(lo/2)``, and ``V_lo`` alone is ``DLap(e^{-lo})``.

    Catches a tightening that draws ``V_lo`` afresh (independent of ``V_hi``: the joint law and the
    equality rate fail) and one that never moves (the marginal fails)."""
    s = src(31)
    v_hi = br.sample(hi, N, s)
    v_lo = br.tighten(v_hi, hi, lo, s)
    fit = checks.check_joint([lo, hi], [v_lo, v_hi])
    assert fit.passes, fit
    p0 = laws.stay_probability(lo, hi)
    assert binomial_close(int(np.sum(v_lo == v_hi)), N, p0 + (1 - p0) * math.tanh(float(lo) / 2))
    marginal = checks.fit(laws.dlap(lo), v_lo)
    assert marginal.passes, marginal


def test_descend_is_the_scalar_path():
    """Three ladder levels by ``descend`` against ``lattice.sample`` + ``lattice.tighten`` (the scalar
    engine), two-sample G-test on the triples; and ``descend`` from a given top keeps it.

    Catches a ladder whose steps are tightened from the top each time (not step by step: the
    triples' law differs) and a ``top`` ignored."""
    levels = [F(1), F(1, 2), F(1, 4)]
    n = 40_000
    ours = br.descend(levels, n, src(41))
    rng = checks.bits_only(41)
    theirs = [lattice.sample(levels[0], n, rng)]
    for hi, lo in pairwise(levels):
        theirs.append(lattice.tighten(theirs[-1], hi, lo, rng))
    fit = checks.check_same_law(ours, theirs)
    assert fit.passes, fit
    top = ours[0][:10].copy()
    again = br.descend(levels, 10, src(1), top=top)
    assert np.array_equal(again[0], top) and len(again) == 3


def test_tighten_leaves_its_input_alone_and_checks_levels():
    """``tighten`` copies (the stored noise of the upper level is never changed in place) and
    refuses levels out of order or float noise."""
    v = br.sample(F(1), 1000, src(2))
    keep = v.copy()
    br.tighten(v, F(1), F(1, 2), src(3))
    assert np.array_equal(v, keep)
    with pytest.raises(ValueError):
        br.tighten(v, F(1, 2), F(1), src(3))
    with pytest.raises(ValueError):
        br.tighten(v.astype(float), F(1), F(1, 2), src(3))
    with pytest.raises(ValueError):
        br.descend([F(1, 2), F(1)], 10, src(3))


# --------------------------------------------------------------------------
# reports


@pytest.mark.parametrize("level", [F(1, 100), F(1, 4), F(1), F(3)])
def test_report_rates(level):
    """A reported bit is 1 with ``p = 1/(1+alpha)`` for a true 1 and ``q = alpha/(1+alpha)`` for a
    true 0 (200k of each, within 5 sd), and ``rates`` says so.

    Catches the threshold at 0 for both (``y + V >= 0``: then ``q`` would be ``p``) and ``rates``
    with ``p`` and ``q`` swapped."""
    n = 200_000
    p, q = exact_rates(level)
    assert br.rates(level) == pytest.approx((p, q), rel=1e-12)
    truth = np.zeros((n, 2), dtype=bool)
    truth[:, 0] = True
    z = br.report(truth, br.sample(level, (n, 2), src(51)))
    assert binomial_close(int(z[:, 0].sum()), n, p)
    assert binomial_close(int(z[:, 1].sum()), n, q)
    assert math.log(p / q) == pytest.approx(float(level), rel=1e-12)


def test_report_is_the_threshold():
    """``report`` is exactly ``[y + V >= 1]`` and refuses truths other than 0/1 or a shape mismatch."""
    v = np.array([[-1, 0, 1], [-1, 0, 1]])
    y = np.array([[0, 0, 0], [1, 1, 1]], dtype=np.uint8)
    assert report_list(y, v) == [[False, False, True], [False, True, True]]
    with pytest.raises(ValueError):
        br.report(np.full((2, 3), 2), v)
    with pytest.raises(ValueError):
        br.report(y[:1], v)


def report_list(y, v):
    return br.report(y, v).tolist()


# --------------------------------------------------------------------------
# decoding

REPS, RECORDS, TRUE_ONES = 4000, 500, 150


def decoded_repetitions(level, seed: int) -> dict:
    """``REPS`` independent releases of one column of ``RECORDS`` records, ``TRUE_ONES`` of them 1."""
    truth = np.zeros((REPS, RECORDS), dtype=bool)
    truth[:, :TRUE_ONES] = True
    ones = br.report(truth, br.sample(level, truth.shape, src(seed))).sum(axis=1)
    return br.decode(ones, RECORDS, level)


@pytest.mark.parametrize("level", [F(1, 4), F(1)])
def test_decode_is_unbiased_and_covers(level):
    """Over 4000 releases the mean estimate is within 5 of its standard errors of the truth
    (``sd / sqrt(REPS)``, with ``sd`` the exact standard deviation of the estimate), the reported
    standard error matches the spread of the estimates within 10%, and the 95% interval covers the
    truth in 95% of releases (within 5 sd of a binomial count).

    Catches an estimate ``(ones - n q)/p`` (biased), a standard error without its ``(p - q)``
    (coverage far off) and intervals at the wrong quantile."""
    d = decoded_repetitions(level, 61)
    p, q = exact_rates(level)
    sd = math.sqrt(TRUE_ONES * p * (1 - p) + (RECORDS - TRUE_ONES) * q * (1 - q)) / (p - q)
    assert abs(float(np.mean(d["estimate"])) - TRUE_ONES) <= 5 * sd / math.sqrt(REPS)
    assert float(np.median(d["stderr"])) == pytest.approx(sd, rel=0.1)
    assert float(np.std(d["estimate"])) == pytest.approx(sd, rel=0.1)
    covered = int(np.sum((d["low"] <= TRUE_ONES) & (TRUE_ONES <= d["high"])))
    assert binomial_close(covered, REPS, 0.95)


def test_decode_clips_its_interval():
    """Intervals stay inside ``[0, n]`` even where the estimate leaves it."""
    d = br.decode(np.array([0, 1000]), 1000, F(1))
    assert d["estimate"][0] < 0 == d["low"][0] <= d["high"][0]
    assert np.all((d["low"] >= 0) & (d["high"] <= 1000))


# --------------------------------------------------------------------------
# privacy: a coalition along the ladder, exactly


def coalition_law(levels, y: int, independent: bool = False) -> dict:
    """The exact law of the reports ``(z_l1, ..., z_lk)`` (levels increasing) for a true bit ``y``.

    ``V`` at the top is enumerated on the box of the lowest level (``laws.box``: the mass left
    out is below 1e-12) and each lower level adds its independent tightening increment (its
    exact law, convolved in float64: relative error about 1e-13 on outcomes of probability
    above 1e-3). With ``independent``, each level's noise is a fresh ``DLap`` instead (the
    mutation). Returns ``{(z_l1, ..., z_lk): probability}``.
    """
    box = laws.box(levels[0])
    ks = np.arange(-box, box + 1)
    reported = y + ks >= 1

    def dlap_pmf(level):
        return np.exp(laws.dlap(level).log_pmf(ks))

    if independent:
        out = {(): 1.0}
        for level in levels:
            z1 = float(dlap_pmf(level)[reported].sum())
            out = {o + (z,): pr * (z1 if z else 1 - z1) for o, pr in out.items() for z in (0, 1)}
        return out
    paths = {(): dlap_pmf(levels[-1])}  # reports so far (top first) -> law of the noise now
    for i in range(len(levels) - 1, -1, -1):
        if i < len(levels) - 1:
            inc = np.exp(laws.increment(levels[i], levels[i + 1]).log_pmf(np.arange(-2 * box, 2 * box + 1)))
            paths = {zs: np.convolve(v, inc)[2 * box : 4 * box + 1] for zs, v in paths.items()}
        paths = {(z,) + zs: np.where(reported == z, v, 0.0) for zs, v in paths.items() for z in (0, 1)}
    return {zs: float(v.sum()) for zs, v in paths.items()}


def largest_loss(levels, independent: bool = False) -> float:
    one, zero = coalition_law(levels, 1, independent), coalition_law(levels, 0, independent)
    assert sum(one.values()) == pytest.approx(1, abs=1e-11)
    return max(abs(math.log(one[o] / zero[o])) for o in one)


@pytest.mark.parametrize("levels", [[F(1, 8), F(1, 4)], [F(1, 4), F(1, 2), F(1)], [F(1, 2), F(3)]])
def test_a_coalition_learns_the_highest_level_exactly(levels):
    """Buyers of every level of a ladder pool their reports of one bit: the largest privacy loss
    over the joint outcomes, computed exactly, is the highest per-bit level (no more, and
    exactly that), while independent draws at each level would cost the sum of the levels.

    The mutation, a release that draws each ladder level independently, is computed here too and
    exceeds the highest level."""
    assert largest_loss(levels) == pytest.approx(float(levels[-1]), abs=1e-9)
    assert largest_loss(levels, independent=True) == pytest.approx(float(sum(levels)), abs=1e-9)


def test_the_engine_draws_the_coalition_law():
    """The reports ``(z_lo, z_hi)`` the engine draws (sample at ``hi``, tighten to ``lo``) follow the
    exact coalition law above, for ``y = 0`` and ``y = 1`` (G-test, 250k each): so that law's loss
    is the engine's. Catches an independent draw at the lower level (p-value ~ 0)."""
    lo, hi = F(1, 4), F(1, 2)
    for y in (0, 1):
        fit = coalition_fit(lo, hi, y, br.tighten)
        assert fit.passes, (y, fit)


def coalition_fit(lo, hi, y, tighten) -> checks.Fit:
    s = src(71 + y)
    v_hi = br.sample(hi, N, s)
    v_lo = tighten(v_hi, hi, lo, s)
    cells = 2 * (y + v_lo >= 1) + (y + v_hi >= 1)
    law = coalition_law([lo, hi], y)
    probabilities = [float(law[(a, b)]) for a in (0, 1) for b in (0, 1)]
    return checks.g_test(np.bincount(cells, minlength=4), probabilities)


def test_mutant_independent_lower_level_is_caught():
    """Mutant: the lower level drawn afresh (``sample`` at ``lo``, ignoring ``V_hi``). The engine
    check above rejects it."""
    def independent(v_hi, hi, lo, s):
        return br.sample(lo, v_hi.shape, s)

    fit = coalition_fit(F(1, 4), F(1, 2), 1, independent)
    assert not fit.passes, fit


# --------------------------------------------------------------------------
# privacy: a black-box audit of two neighbouring records

AUDIT_N = 300_000
AUDIT_ALPHA = 1e-6  # each Clopper-Pearson bound fails with at most this probability


def audit(eps, per_bit, seed: int) -> tuple[float, float]:
    """Neighbours A and B of a one-hot column of 4 categories (A sets bit 0, B bit 1). Each is
    released ``AUDIT_N`` times at record level ``eps`` through the ladder (sample at twice the
    level, tighten down), with per-bit level ``per_bit(eps, 2)``. Returns the largest lower
    Clopper-Pearson bound of ``ln P_A(o)/P_B(o)`` over the patterns ``o`` of bits 0 and 1 (both
    directions), and the point estimate."""
    top, level = per_bit(2 * eps, 2), per_bit(eps, 2)
    s = src(seed)
    counts = {}
    for name, hot in (("A", 0), ("B", 1)):
        truth = np.zeros((AUDIT_N, 4), dtype=bool)
        truth[:, hot] = True
        noise = br.tighten(br.sample(top, truth.shape, s), top, level, s)
        z = br.report(truth, noise)
        counts[name] = np.bincount(2 * z[:, 0] + z[:, 1], minlength=4)
    worst_lower, worst_point = -math.inf, -math.inf
    for first, second in (("A", "B"), ("B", "A")):
        for o in range(4):
            a, b = int(counts[first][o]), int(counts[second][o])
            a_low = stats.beta.ppf(AUDIT_ALPHA, a, AUDIT_N - a + 1) if a else 0.0
            b_high = stats.beta.ppf(1 - AUDIT_ALPHA, b + 1, AUDIT_N - b) if b < AUDIT_N else 1.0
            if a_low > 0:
                worst_lower = max(worst_lower, math.log(a_low / b_high))
            if a and b:
                worst_point = max(worst_point, math.log(a / b))
    return worst_lower, worst_point


def test_audit_of_neighbouring_records():
    """Black box: the lower confidence bound of the empirical loss of the two differing bits stays
    at or below the record level ``eps`` = 1 (the point estimate is near it: the pattern (1, 0)
    costs exactly ``2 lam = eps``). Catches per-bit level ``eps`` instead of ``eps / 2`` (next test)."""
    lower, point = audit(F(1), br.bit_level, 81)
    assert lower <= 1.0
    assert point == pytest.approx(1.0, abs=0.05)


def test_mutant_per_bit_level_without_weight_is_caught():
    """Mutant: every bit at the record level (the weight 2 forgotten): the audit's lower bound
    exceeds ``eps`` (the true loss is ``2 eps``)."""
    lower, _ = audit(F(1), lambda eps, weight: lattice.as_level(eps), 81)
    assert lower > 1.0


def test_bit_level():
    """``bit_level`` is ``eps / weight`` exactly, refuses floats, non-integer weights and levels
    below ``MIN_BIT_LEVEL``."""
    assert br.bit_level("0.5", 4) == F(1, 8)
    assert br.bit_level(F(4), 4) == 1
    for bad in [(0.5, 4), ("1", 0), ("1", 2.0), ("1", True), ("0.001", 2)]:
        with pytest.raises(ValueError):
            br.bit_level(*bad)
    assert br.bit_level("0.004", 4) == br.MIN_BIT_LEVEL


# --------------------------------------------------------------------------
# exactness plumbing


class ScriptedWords:
    """A word source that hands out the given ``uint32`` words, then the given ``getrandbits``
    values, in order, and counts what it handed out."""

    def __init__(self, words, bits=()):
        self.words = list(words)
        self.bits = list(bits)
        self.words_used = 0

    def u32(self, n):
        out, self.words = self.words[:n], self.words[n:]
        out += [0] * (n - len(out))  # sign words once the script is spent: all positive
        self.words_used += n
        return np.array(out, dtype=np.uint32)

    def getrandbits(self, k):
        assert k == br.MORE_BITS
        return self.bits.pop(0)


def exact_count(level: F, u: int, extra: int) -> int:
    """``#{j >= 1: U < 2 alpha^j / (1 + alpha)}`` for ``U = (u 2^64 + extra) / 2^96``, at 80 digits."""
    with mpmath.workdps(80):
        alpha = mpmath.exp(-mpmath.mpf(level.numerator) / level.denominator)
        uu = (mpmath.mpf(u) * 2**64 + extra) / mpmath.mpf(2) ** 96
        j = 0
        while uu < 2 * alpha ** (j + 1) / (1 + alpha):
            j += 1
        return j


def inside_bracket(level: F) -> tuple[int, int, int]:
    """A 32-bit word inside the bracket of some ``T_j`` (undecided at 32 bits), and 64-bit
    continuations just below and just above ``T_j``'s true value."""
    tails = br._tails(level)
    lo = tails.lo[::-1].astype(np.int64)
    j = int(np.flatnonzero(tails.hi[: tails.size] > lo)[0]) + 1
    u = int(lo[j - 1])
    with mpmath.workdps(80):
        alpha = mpmath.exp(-mpmath.mpf(level.numerator) / level.denominator)
        rest = 2 * alpha**j / (1 + alpha) * mpmath.mpf(2) ** 96 - mpmath.mpf(u) * 2**64
        cut = int(mpmath.floor(rest))
    assert 2**20 < cut < 2**64 - 2**20  # T_j's 32-bit prefix is u
    return u, cut - 2**20, cut + 2**20


@pytest.mark.parametrize("level", [F(1), F(1, 100), F(3)])
def test_undecided_words_are_refined_not_redrawn(level):
    """A word inside a threshold's bracket is finished with 64 more bits of the same uniform:
    the result is the exact comparison (80 digits) for a continuation just below and just above
    the threshold, the two differ, and no word is drawn again.

    Catches a redraw of undecided words (the scripted words would run out into zeros and give a
    wrong count) and a refinement that ignores the new bits."""
    u, below, above = inside_bracket(level)
    results = []
    for extra in (below, above):
        words = ScriptedWords([u], [extra])
        v = br.sample(level, 1, words)
        assert words.words_used == 2 and not words.bits  # one word, one sign word; 64 bits used
        assert int(v[0]) == exact_count(level, u, extra)
        results.append(int(v[0]))
    assert results[0] == results[1] + 1


@pytest.mark.parametrize("level", [F(3), F(1, 8)])
def test_a_word_beyond_the_table_is_refined(level):
    """``u = 0`` lies below the table's last threshold: it is finished exactly, past the table.
    Catches a count capped at the table's length."""
    extra = 12345 << 30
    v = br.sample(level, 1, ScriptedWords([0], [extra]))
    assert int(v[0]) == exact_count(level, 0, extra) > br._tails(level).size - 1


def test_the_stay_coin_is_refined():
    """A stay word inside ``p0``'s bracket is finished against ``p0`` itself ("``U < p0``" is a stay),
    with a continuation just below and just above ``p0``. Catches a stay coin read as ``U > p0``."""
    lo, hi = F(1, 2), F(1)
    _, (p_lo, p_hi) = br._stay(lo, hi)
    u = p_lo if p_hi > p_lo else p_lo - 1
    with mpmath.workdps(80):
        a, b = mpmath.exp(-mpmath.mpf(1) / 2), mpmath.exp(-1)
        p0 = (b / a) * ((1 - a) / (1 - b)) ** 2
        cut = int(mpmath.floor(p0 * mpmath.mpf(2) ** 96 - mpmath.mpf(u) * 2**64))
    assert 0 < cut < 2**64
    stays = ScriptedWords([u], [cut - 1])
    assert int(br.tighten(np.array([5]), hi, lo, stays)[0]) == 5 and stays.words_used == 1
    # just above p0: W ~ DLap(a) is drawn; its word decides W = 0 (a huge word: U >= T_1)
    moves = ScriptedWords([u, 2**32 - 1], [cut + 1])
    assert int(br.tighten(np.array([5]), hi, lo, moves)[0]) == 5 and moves.words_used == 3
    moves = ScriptedWords([u, 5], [cut + 1])  # a tiny word: |W| far out, sign word 0 (positive)
    assert int(br.tighten(np.array([5]), hi, lo, moves)[0]) > 5 + 30


def test_brackets_contain_the_thresholds():
    """Every 32-bit bracket of the table contains ``T_j 2^32`` (80 digits), ordered and narrow.
    Catches brackets rounded inwards."""
    for level in (F(1, 100), F(1), F(3)):
        tails = br._tails(level)
        lo = tails.lo[::-1].astype(np.int64)
        with mpmath.workdps(80):
            alpha = mpmath.exp(-mpmath.mpf(level.numerator) / level.denominator)
            for j in range(1, tails.size + 1, max(1, tails.size // 200)):
                t = 2 * alpha**j / (1 + alpha) * 2**32
                assert lo[j - 1] <= t <= tails.hi[j - 1]
                assert tails.hi[j - 1] - lo[j - 1] <= 2
        assert tails.hi[tails.size - 1] == 1


def test_floats_are_refused():
    """No float reaches a decision: float levels are refused by every sampling call."""
    with pytest.raises(ValueError):
        br.sample(0.5, 10, src(1))
    with pytest.raises(ValueError):
        br.tighten(np.zeros(3, dtype=np.int64), 1.0, F(1, 2), src(1))
    with pytest.raises(ValueError):
        br.descend([F(1), 0.5], 3, src(1))
    with pytest.raises(ValueError):
        br.sample(F(1, 2000), 10, src(1))


def test_system_source():
    """The product's source reads the operating system: words of the right type and count."""
    s = br.new_source()
    w = s.u32(1000)
    assert w.dtype == np.uint32 and w.size == 1000 and len(set(w.tolist())) > 990
    assert 0 <= s.getrandbits(70) < 2**70
    assert br.sample(F(1), 5, s).shape == (5,)


# --------------------------------------------------------------------------
# storage


@pytest.mark.parametrize(
    "values",
    [
        np.array([], dtype=np.int64),
        np.array([0, -1, 1, -128, 127]),
        np.array([-64, 63]),
        np.array([300, -300]),
        np.array([2**40, -(2**40)]),
        np.array([2**63 - 1, -(2**63), 0]),
    ],
)
def test_pack_noise_round_trips(values):
    """``unpack_noise(pack_noise(v))`` is ``v``, including the int64 extremes and empty arrays, and
    the header names the smallest unsigned type. Catches a zigzag that loses the sign or the top bit."""
    data = br.pack_noise(values)
    assert np.array_equal(br.unpack_noise(data, values.shape), values)
    top = int(np.max(np.abs(values.astype(object)) * 2)) if values.size else 0
    assert data[0] == next(s for s in (1, 2, 4, 8) if top <= 2 ** (8 * s))


def test_pack_is_small():
    """A release at per-bit level 1/2 packs (noise + report) under 1 byte per record-bit."""
    v = br.sample(F(1, 2), (20_000, 20), src(3))
    z = br.report(np.zeros(v.shape, dtype=bool), v)
    size = len(br.pack_noise(v)) + len(br.pack_bits(z))
    assert size / v.size < 1.0
    assert np.array_equal(br.unpack_bits(br.pack_bits(z), z.shape), z)


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (3, 7), (10, 20)])
def test_pack_bits_round_trips(shape):
    """Any shape, including ones whose size is not a multiple of 8, and empty ones; a wrong length
    is refused."""
    z = np.random.default_rng(4).integers(0, 2, shape).astype(bool)
    assert np.array_equal(br.unpack_bits(br.pack_bits(z), shape), z)
    with pytest.raises(ValueError):
        br.unpack_bits(br.pack_bits(z) + b"\0", shape)


# --------------------------------------------------------------------------
# Bloom filters


def test_bloom_positions():
    """Positions are the keyed hash of ``(i, string)``: deterministic for a salt, different across
    salts, ``None`` gives an empty row, and the positions of one string are the documented ones."""
    strings = ["alice", "bob", None, "alice", "", "é"]
    a = br.bloom(strings, 64, 3, b"salt-1")
    assert a.shape == (6, 64) and a.dtype == bool
    assert np.array_equal(a, br.bloom(strings, 64, 3, b"salt-1"))
    assert not np.array_equal(a, br.bloom(strings, 64, 3, b"salt-2"))
    assert not a[2].any() and np.array_equal(a[0], a[3])
    assert all(1 <= a[r].sum() <= 3 for r in (0, 1, 4, 5))
    expected = set()
    for i in range(3):
        h = hashlib.blake2b(key=b"salt-1", digest_size=8)
        h.update(i.to_bytes(4, "little") + b"bob")
        expected.add(int.from_bytes(h.digest(), "little") % 64)
    assert set(np.flatnonzero(a[1]).tolist()) == expected


def test_bloom_refuses_bad_arguments():
    for args in [(["a"], 0, 1, b""), (["a"], 8, 0, b""), (["a"], 8, 1, "salt"), (["a"], 8, 1, b"x" * 65)]:
        with pytest.raises(ValueError):
            br.bloom(*args)
    assert br.bloom([], 8, 2, b"s").shape == (0, 8)
