"""Targeted tests of every exact coin and sampler of the lattice path and of bit reports.

The broad G-tests (``test_lattice.py``, ``lattice_checks``) compare whole laws cut into
hundreds of cells; a small error in one constant spreads over many cells and can hide
there (a 3% error in the bridge's constant passed them). Here each coin or sampler is
driven alone, and one or a few events of it are counted, each against its exact
probability computed at 40 digits (mpmath) from the law docs/mathematics.md states
(§15, §16), written independently of the engine's own expressions where the docs give
another form (the tightening's stay probability as ``sinh²(lo/2)/sinh²(hi/2)``, the
bridge's holding probability as ``(cosh mid − cosh lo)/(cosh hi − cosh lo)``, relax and
bridge laws by Bayes' rule over the tightening increments).

**The statistic.** For an event of exact probability ``p`` seen ``k`` times in ``n``
draws, ``z = (k − n p) / sqrt(n p (1 − p))``. A check passes when every event's
``|z| <= Z_ALARM = 4.5`` (a correct coin fails one event with probability about
7·10⁻⁶; the seeds are fixed, so a run always passes or always fails). The draws are
sized so that a 3% error in the coin's constant (its probability, its rate, or the
``e^{-1}`` it is built from) moves some event by about 6 to 20 standard deviations.

**The mutations.** ``test_a_3_percent_error_is_caught`` applies, with ``monkeypatch``
(undone after the test), one deliberate 3% error to the engine per case: an exact
bracket multiplied by 1.03 or 0.97 (:func:`_off`), a rational rate ``gamma`` made
``1.03 gamma``, the ``e^{-1}`` table of ``_units`` made ``1.03 e^{-1}``, a modulo bias, a
biased sign bit. The same check, same seed, must then fail (``|z| > 4.5``); the
figures are printed.

The bit sources are the ones the engine takes in tests: anything with ``getrandbits``
(here ``lattice_checks.bits_only``, which has nothing else, so no float can sneak in)
for the lattice path, ``WordSource.from_generator`` for bit reports.
What is not tested statistically: the 64-bit refinements of a uniform that falls inside
a bracket (probability about 2⁻²³ per coin, 2⁻³¹ per bit-report word) are tested by
scripted words in ``test_bitreport.py`` and by the bracket tests of ``exact_bounds``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction as F

import mpmath as mp
import numpy as np
import pytest

from releases.engine import bitreport as br
from releases.engine import exact_bounds as eb
from releases.engine import lattice, lattice_batch, lattice_coins

from tests import mc

from .lattice_checks import bits_only

pytestmark = pytest.mark.statistical

Z_ALARM = 4.5
DIGITS = 40


# --------------------------------------------------------------------------
# exact laws, from docs/mathematics.md §15-16, at 40 digits


def _m(x) -> mp.mpf:
    x = F(x)
    return mp.mpf(x.numerator) / x.denominator


def _e(x) -> mp.mpf:
    """``e^{-x}`` for a rational ``x``."""
    return mp.exp(-_m(x))


def _c(alpha) -> mp.mpf:
    """``P(V = 0)`` for ``V ~ DLap(alpha)``."""
    return (1 - alpha) / (1 + alpha)


def _dlap(k: int, level) -> mp.mpf:
    alpha = _e(level)
    return _c(alpha) * alpha ** abs(k)


def _stay(lo, hi) -> mp.mpf:
    """The tightening's stay probability, in the docs' second form ``sinh²(lo/2)/sinh²(hi/2)``."""
    return (mp.sinh(_m(lo) / 2) / mp.sinh(_m(hi) / 2)) ** 2


def _increment(k: int, lo, hi) -> mp.mpf:
    """``P(W = k)`` for the tightening increment ``hi -> lo``: 0 with ``p0``, else ``DLap(e^{-lo})``."""
    p0 = _stay(lo, hi)
    return (1 - p0) * _dlap(k, lo) + (p0 if k == 0 else 0)


def _reach(*levels) -> int:
    """A range ``[-M, M]`` outside of which every law here has mass below ``e^{-80}``."""
    return math.ceil(80 / float(min(F(x) for x in levels))) + 10


def _events(weights: dict[int, mp.mpf], events: dict[str, Callable[[int], bool]]) -> dict[str, mp.mpf]:
    """Each event's probability under the law proportional to ``weights``."""
    total = mp.fsum(weights.values())
    return {name: mp.fsum(w for v, w in weights.items() if holds(v)) / total for name, holds in events.items()}


def _relax_law(x: int, lo, hi) -> dict[int, mp.mpf]:
    """``V_hi`` given ``V_lo = x`` by Bayes' rule: ``P(V_hi = y) P(W = x - y)`` (unnormalised)."""
    m = _reach(lo) + abs(x)
    return {y: _dlap(y, hi) * _increment(x - y, lo, hi) for y in range(-m, m + 1)}


def _bridge_law(x_lo: int, x_hi: int, lo, mid, hi) -> dict[int, mp.mpf]:
    """``V_mid`` given both ends: ``P(W1 = v - x_hi) P(W2 = x_lo - v)`` (unnormalised), ``W1``
    the increment ``hi -> mid`` and ``W2`` the increment ``mid -> lo``."""
    m = _reach(lo) + abs(x_lo) + abs(x_hi)
    return {v: _increment(v - x_hi, mid, hi) * _increment(x_lo - v, lo, mid) for v in range(-m, m + 1)}


def _move_law(n: int, lo, hi) -> dict[int, mp.mpf]:
    """The relaxation's move from ``V_lo = n >= 0``: ``r^{|y|} a^{2 dist(y)}`` (§15), ``r = e^{-(hi-lo)}``,
    ``a = e^{-lo}``, ``dist(y)`` the distance from ``y`` to the integers between 0 and ``n``."""
    r, a = _e(F(hi) - F(lo)), _e(lo)
    m = _reach(F(hi) - F(lo), F(lo) + F(hi)) + n
    return {y: r ** abs(y) * a ** (2 * (-y if y < 0 else max(0, y - n))) for y in range(-m, m + 1)}


# --------------------------------------------------------------------------
# the check


@dataclass(frozen=True)
class Verdict:
    """Each event's z against its exact probability."""

    zs: dict[str, float]
    n: int

    @property
    def worst(self) -> float:
        return max(abs(z) for z in self.zs.values())

    @property
    def passes(self) -> bool:
        return self.worst <= Z_ALARM

    def __str__(self) -> str:
        return f"n = {self.n:,}: " + ", ".join(f"z({name}) = {z:+.2f}" for name, z in self.zs.items())


def verdict(draws, events: dict[str, Callable], exact: dict[str, mp.mpf]) -> Verdict:
    draws = np.asarray(draws)
    n = draws.size
    zs = {}
    for name, holds in events.items():
        p = float(exact[name])
        hits = int(np.count_nonzero(holds(draws)))
        zs[name] = (hits - n * p) / math.sqrt(n * p * (1 - p))
    return Verdict(zs, n)


def _off(bounds, factor: F):
    """A coin's bracket function, its constant multiplied by ``factor`` (a deliberate error)."""

    def mutated(bits):
        return eb.mul(bounds(bits), eb.exact(factor.numerator, factor.denominator, bits), bits)

    return mutated


UP, DOWN = F(103, 100), F(97, 100)


def _coin_off(coin: lattice._Coin, factor: F) -> lattice._Coin:
    return lattice._Coin(_off(coin.bounds, factor))


def _gamma_off(monkeypatch, name: str, factor: F = UP, module=lattice_coins) -> None:
    """``<module>.<name>(rng, num, den)``, a ``Bernoulli(e^{-num/den})`` (scalar, or batched in
    ``lattice_batch``), run at ``factor * num/den``; the scalar coins live in ``lattice_coins`` and
    are re-exported by ``lattice``, so both names are replaced."""
    real = getattr(module, name)
    a, b = factor.numerator, factor.denominator
    off = lambda rng, num, den: real(rng, num * a, den * b)  # noqa: E731
    monkeypatch.setattr(module, name, off)
    if module is lattice_coins:
        monkeypatch.setattr(lattice, name, off)


def _levels_off(monkeypatch, factor: F = UP) -> None:
    """``lattice_batch.geometric_levels`` (every batched geometric, the relaxation's ``r^m`` coins
    among them) run at ``factor`` times each of its levels."""
    real, a, b = lattice_batch.geometric_levels, factor.numerator, factor.denominator
    off = lambda src, levels, which: real(src, [(s * a, t * b) for s, t in levels], which)  # noqa: E731
    monkeypatch.setattr(lattice_batch, "geometric_levels", off)


def _units_off(monkeypatch) -> None:
    """``_units``'s table of ``e^{-j}`` built from ``1.03 e^{-1}``."""
    one = eb.mul(eb.exp_neg(1, 1, 96), eb.exact(103, 100, 96), 96)
    power, table = one, [(0, 0)]
    for _ in range(45):
        table.append(power.scaled(64))
        power = eb.mul(power, one, 96)
    monkeypatch.setattr(lattice, "_unit_brackets", lambda: table)
    monkeypatch.setattr(lattice_coins, "_unit_brackets", lambda: table)  # where the coins read it


def _init_off(monkeypatch, cls, attribute: str, factor: F, inner: str | None = None) -> None:
    """Every new ``cls`` gets its coin ``attribute`` (or ``attribute.inner``) off by ``factor``."""
    real = cls.__init__

    def init(self, *args):
        real(self, *args)
        holder = getattr(self, attribute) if inner else self
        name = inner or attribute
        setattr(holder, name, _coin_off(getattr(holder, name), factor))

    monkeypatch.setattr(cls, "__init__", init)


def _stay_off(monkeypatch, factor: F) -> None:
    """``_Gap.stay``'s ``p0`` off by ``factor`` (its coin, which the batched tightening flips too)."""
    real = lattice._Gap.stay_coin

    def stay_coin(self):
        if self._p0 is None:
            self._p0 = _coin_off(real(self), factor)
        return self._p0

    monkeypatch.setattr(lattice._Gap, "stay_coin", stay_coin)


def _moves_off(monkeypatch, coin: str, factor: F) -> None:
    real = lattice._Moves.__init__

    def init(self, g):
        real(self, g)
        setattr(self, coin, _coin_off(getattr(self, coin), factor))

    monkeypatch.setattr(lattice._Moves, "__init__", init)


def _bitreport_tails_off(monkeypatch) -> None:
    """Bit reports' thresholds ``T_j = 2 alpha^j / (1 + alpha)`` all 3% high (a fresh table cache)."""
    real = br._tail_bounds
    monkeypatch.setattr(br, "_tail_bounds", lambda s, t, j, bits: _off(lambda b: real(s, t, j, b), UP)(bits))
    monkeypatch.setattr(br, "_tails", functools.lru_cache(maxsize=64)(br._Tails))


def _bitreport_stay_off(monkeypatch) -> None:
    """Bit reports' tightening stay probability ``p0`` 3% low (a fresh cache)."""
    real = br._stay_bounds
    monkeypatch.setattr(br, "_stay_bounds", lambda lo, hi: _off(real(lo, hi), DOWN))
    monkeypatch.setattr(br, "_stay", functools.lru_cache(maxsize=64)(br._stay.__wrapped__))


def _biased_signs(monkeypatch) -> None:
    """Bit reports' sign bits 1 with probability 0.515 instead of 1/2."""
    monkeypatch.setattr(br, "_signs", lambda src, n: src.u32(n) < np.uint32(round(0.515 * 2**32)))


def _zero_off(monkeypatch) -> None:
    """``_zero``'s coin ``(1 - alpha)/(1 + alpha)`` 3% high (cached like the real one)."""
    real = lattice._zero.__wrapped__
    off = functools.lru_cache(maxsize=None)(lambda s, t: _coin_off(real(s, t), UP))
    monkeypatch.setattr(lattice, "_zero", off)
    monkeypatch.setattr(lattice_coins, "_zero", off)  # where the samplers read it


def _move_draws(move, start: int, gap_and_moves, n: int, seed: int) -> np.ndarray:
    g, k = gap_and_moves
    return _draws(lambda rng: move(rng, start, g, k), n, seed)


def _modulo_below(rng, n: int) -> int:
    """A uniform below ``n`` by ``bits mod n`` instead of rejection (a modulo bias)."""
    return rng.getrandbits((n - 1).bit_length()) % n


# --------------------------------------------------------------------------
# the cases: what is drawn, which events, their exact probabilities, the mutation


@dataclass(frozen=True)
class Case:
    draw: Callable[[int, int], np.ndarray]  # (n, seed) -> draws
    events: dict[str, Callable]
    exact: Callable[[], dict[str, mp.mpf]]
    mutate: Callable  # (monkeypatch) -> None
    mutation: str
    n: int = 100_000
    seed: int = 28
    tags: tuple = field(default=())


def _draws(fn, n: int, seed: int) -> np.ndarray:
    rng = bits_only(seed)
    return np.fromiter((fn(rng) for _ in range(n)), dtype=np.int64, count=n)


def _flips(make_coin) -> Callable[[int, int], np.ndarray]:
    """Draws of a coin made (after any mutation) by ``make_coin()``."""

    def draw(n, seed):
        coin = make_coin()
        return _draws(coin, n, seed)

    return draw


HEADS = {"heads": lambda v: v == 1}


def _p(value) -> Callable[[], dict[str, mp.mpf]]:
    return lambda: {"heads": value()}


# Levels: each constant is chosen between about 0.3 and 0.95, where a 3% error is most visible.
LO, HI = F(1), F(11, 10)  # a close pair: the stay probabilities are large
R_LO, R_HI = F(1, 2), F(1)
B_LO, B_MID, B_HI = F(1, 2), F(5, 4), F(3, 2)  # the bridge's beta about 0.62
G_LO, G_MID, G_HI = F(1, 10), F(1, 2), F(5)  # its gamma about 0.57
NEAR_LO, NEAR_HI, NEAR_N = F(1, 10), F(1, 5), 2  # cap 11: the move from 2 is drawn near
FAR_LO, FAR_HI, FAR_N = F(1, 100), F(1, 2), 3  # cap 3: the move from 3 is drawn far
BR_SRC = br.WordSource.from_generator


def _tail_coin(lo, hi) -> mp.mpf:
    """``_Moves.tail``: ``2^8 q/(1-q) / tails``, ``q = e^{-(lo+hi)}``, ``tails = lattice._Moves(...).tails``."""
    q = _e(F(lo) + F(hi))
    return 256 * q / (1 - q) / lattice._Moves(lattice._Gap(F(lo), F(hi))).tails


def _wide_coin(lo, hi) -> mp.mpf:
    """``_Moves.wide``: ``2^8 / ((1 - r) span)``, ``r = e^{-(hi-lo)}``."""
    r = _e(F(hi) - F(lo))
    return 256 / ((1 - r) * lattice._Moves(lattice._Gap(F(lo), F(hi))).span)


def _bridge_moves(lo, mid, hi) -> mp.mpf:
    """``P(V_mid != x_hi | V_lo = V_hi = x_hi)`` from the bridge law (§15)."""
    return 1 - _events(_bridge_law(0, 0, lo, mid, hi), {"same": lambda v: v == 0})["same"]


CASES: dict[str, Case] = {
    # ---- the uniform integer and the fair bit
    "uniform below 1000": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._below(rng, 1000), n, seed),
        events={"< 500": lambda v: v < 500, "< 250": lambda v: v < 250},
        exact=lambda: {"< 500": mp.mpf(1) / 2, "< 250": mp.mpf(1) / 4},
        mutate=lambda mp_: mp_.setattr(lattice, "_below", _modulo_below),
        mutation="bits mod n instead of rejection (2.3% too many below 500)",
    ),
    "fair bit": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._bit(rng), n, seed),
        events=HEADS, exact=_p(lambda: mp.mpf(1) / 2),
        mutate=lambda mp_: mp_.setattr(lattice, "_bit", lambda rng: rng.getrandbits(16) < 33751),
        mutation="heads with probability 0.515",
    ),
    # ---- Bernoulli(e^{-gamma}), CKS Algorithm 1
    "Bernoulli(e^-gamma), gamma = 3/4": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._bern_exp_small(rng, 3, 4), n, seed),
        events=HEADS, exact=_p(lambda: _e(F(3, 4))),
        mutate=lambda mp_: _gamma_off(mp_, "_bern_exp_small"), mutation="gamma 3% high",
    ),
    "Bernoulli(e^-gamma), gamma = 1": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._bern_exp_small(rng, 7, 7), n, seed),
        events=HEADS, exact=_p(lambda: _e(1)),
        mutate=lambda mp_: _gamma_off(mp_, "_bern_exp_small", DOWN), mutation="gamma 3% low", n=200_000,
    ),
    "Bernoulli(e^-gamma), gamma = 5/2 (whole units, then the rest)": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._bern_exp(rng, 5, 2), n, seed),
        events=HEADS, exact=_p(lambda: _e(F(5, 2))),
        mutate=_units_off, mutation="the e^-1 of the whole units 3% high", n=200_000,
    ),
    "units: P(V >= j) = e^-j": Case(
        draw=lambda n, seed: _draws(lattice._units, n, seed),
        events={"0": lambda v: v == 0, ">= 2": lambda v: v >= 2},
        exact=lambda: {"0": 1 - _e(1), ">= 2": _e(2)},
        mutate=_units_off, mutation="its e^-1 3% high",
    ),
    # ---- constant coins on exact brackets
    "ratio (1 - e^-s)/(1 - e^-t), s = 1/2, t = 1": Case(
        draw=_flips(lambda: lattice._Ratio(F(1, 2), F(1))),
        events=HEADS, exact=_p(lambda: (1 - _e(F(1, 2))) / (1 - _e(1))),
        mutate=lambda mp_: _init_off(mp_, lattice._Ratio, "coin", UP), mutation="its bracket 3% high",
    ),
    "DLap zero coin (1 - alpha)/(1 + alpha), level 1": Case(
        draw=_flips(lambda: lattice._zero(1, 1)),
        events=HEADS, exact=_p(lambda: _c(_e(1))),
        mutate=_zero_off, mutation="its bracket 3% high",
    ),
    "tightening stay p0 = sinh^2(lo/2)/sinh^2(hi/2), lo 1, hi 11/10": Case(
        draw=lambda n, seed: _draws(lattice._Gap(LO, HI).stay, n, seed),
        events=HEADS, exact=_p(lambda: _stay(LO, HI)),
        mutate=lambda mp_: _stay_off(mp_, DOWN), mutation="p0 3% low", n=50_000,
    ),
    "relax's second stay coin (1 - a^2)/(1 - b^2), lo 1/2, hi 1": Case(
        draw=lambda n, seed: _draws(lattice._Gap(R_LO, R_HI).ratio2, n, seed),
        events=HEADS, exact=_p(lambda: (1 - _e(2 * R_LO)) / (1 - _e(2 * R_HI))),
        mutate=lambda mp_: _init_off(mp_, lattice._Gap, "ratio2", UP, inner="coin"), mutation="its bracket 3% high",
    ),
    "relax's wide coin 2^8/((1 - r) span), lo 1/100, hi 1/2": Case(
        draw=lambda n, seed: _draws(lattice._Moves(lattice._Gap(FAR_LO, FAR_HI)).wide, n, seed),
        events=HEADS, exact=_p(lambda: _wide_coin(FAR_LO, FAR_HI)),
        mutate=lambda mp_: _moves_off(mp_, "wide", DOWN), mutation="its bracket 3% low", n=20_000,
    ),
    "relax's tail coin 2^8 q/((1 - q) tails), lo 1/10, hi 1/5": Case(
        draw=lambda n, seed: _draws(lattice._Moves(lattice._Gap(NEAR_LO, NEAR_HI)).tail, n, seed),
        events=HEADS, exact=_p(lambda: _tail_coin(NEAR_LO, NEAR_HI)),
        mutate=lambda mp_: _moves_off(mp_, "tail", DOWN), mutation="its bracket 3% low", n=20_000,
    ),
    "bridge holds (cosh mid - cosh lo)/(cosh hi - cosh lo), 1/2 < 5/4 < 3/2": Case(
        draw=lambda n, seed: _draws(lattice._Triple(B_LO, B_MID, B_HI).holds, n, seed),
        events=HEADS,
        exact=_p(lambda: (mp.cosh(_m(B_MID)) - mp.cosh(_m(B_LO))) / (mp.cosh(_m(B_HI)) - mp.cosh(_m(B_LO)))),
        mutate=lambda mp_: _init_off(mp_, lattice._Triple, "holds", UP), mutation="beta 3% high",
    ),
    "bridge moves (equal ends), 1/10 < 1/2 < 5": Case(
        draw=lambda n, seed: _draws(lattice._Triple(G_LO, G_MID, G_HI).moves, n, seed),
        events=HEADS, exact=_p(lambda: _bridge_moves(G_LO, G_MID, G_HI)),
        mutate=lambda mp_: _init_off(mp_, lattice._Triple, "moves", UP), mutation="gamma 3% high",
    ),
    # ---- samplers
    "geometric, counted (rate 2/3)": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._geometric(rng, 2, 3), n, seed),
        events={"0": lambda v: v == 0, ">= 2": lambda v: v >= 2},
        exact=lambda: {"0": 1 - _e(F(2, 3)), ">= 2": _e(F(4, 3))},
        mutate=lambda mp_: _gamma_off(mp_, "_bern_exp"), mutation="its e^-rate coin's rate 3% high",
    ),
    "geometric, CKS (rate 3/7)": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._geometric(rng, 3, 7), n, seed),
        events={"0": lambda v: v == 0, ">= 3": lambda v: v >= 3},
        exact=lambda: {"0": 1 - _e(F(3, 7)), ">= 3": _e(F(9, 7))},
        mutate=_units_off, mutation="the e^-1 of its units 3% high", n=150_000,
    ),
    "discrete Laplace, level 1 (zero coin first)": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._dlap(rng, 1, 1), n, seed),
        events={"0": lambda v: v == 0, "> 0": lambda v: v > 0, "|V| >= 2": lambda v: abs(v) >= 2},
        exact=lambda: {"0": _c(_e(1)), "> 0": _e(1) / (1 + _e(1)), "|V| >= 2": 2 * _e(2) / (1 + _e(1))},
        mutate=_zero_off, mutation="its zero coin 3% high",
    ),
    "discrete Laplace, level 1/5 (CKS)": Case(
        draw=lambda n, seed: _draws(lambda rng: lattice._dlap(rng, 1, 5), n, seed),
        events={"0": lambda v: v == 0, "> 0": lambda v: v > 0, "|V| >= 5": lambda v: abs(v) >= 5},
        exact=lambda: {"0": _c(_e(F(1, 5))), "> 0": _e(F(1, 5)) / (1 + _e(F(1, 5))),
                       "|V| >= 5": 2 * _e(1) / (1 + _e(F(1, 5)))},
        mutate=_units_off, mutation="the e^-1 of its geometric 3% high",
    ),
    # ---- the steps
    "tighten from 3, 11/10 -> 1": Case(
        draw=lambda n, seed: lattice.tighten(np.full(n, 3), HI, LO, bits_only(seed)),
        events={"stays": lambda v: v == 3, "above": lambda v: v > 3},
        exact=lambda: _events({k + 3: _increment(k, LO, HI) for k in range(-_reach(LO), _reach(LO) + 1)},
                              {"stays": lambda v: v == 3, "above": lambda v: v > 3}),
        mutate=lambda mp_: _stay_off(mp_, DOWN), mutation="p0 3% low",
    ),
    "relax from 0, 1 -> 11/10": Case(
        draw=lambda n, seed: lattice.relax(np.zeros(n, dtype=np.int64), LO, HI, bits_only(seed)),
        events={"stays": lambda v: v == 0},
        exact=lambda: _events(_relax_law(0, LO, HI), {"stays": lambda v: v == 0}),
        mutate=lambda mp_: _init_off(mp_, lattice._Gap, "ratio2", UP, inner="coin"),
        mutation="its (1 - a^2)/(1 - b^2) coin 3% high",
    ),
    "relax from -4, 1/2 -> 1": Case(
        draw=lambda n, seed: lattice.relax(np.full(n, -4), R_LO, R_HI, bits_only(seed)),
        events={"stays": lambda v: v == -4, "beyond 0": lambda v: v > 0, "beyond x": lambda v: v < -4},
        exact=lambda: _events(_relax_law(-4, R_LO, R_HI), {"stays": lambda v: v == -4, "beyond 0": lambda v: v > 0,
                                                            "beyond x": lambda v: v < -4}),
        mutate=lambda mp_: _levels_off(mp_),
        mutation="every e^-gamma coin's rate 3% high (batched: its r^m coins are geometrics of ratio r)",
        n=300_000,  # the mutant's expected z(stays) is about -5 at 150,000: too close to the alarm
    ),
    "relax's move near (from 2, 1/10 -> 1/5)": Case(
        draw=lambda n, seed: _move_draws(lattice._move_near, NEAR_N, _near(), n, seed),
        events={"tails": lambda v: (v < 0) | (v > NEAR_N)},
        exact=lambda: _events(_move_law(NEAR_N, NEAR_LO, NEAR_HI), {"tails": lambda v: v < 0 or v > NEAR_N}),
        mutate=lambda mp_: _moves_off(mp_, "tail", DOWN), mutation="its tail coin 3% low", n=400_000,
    ),
    "relax's move far (from 3, 1/100 -> 1/2)": Case(
        draw=lambda n, seed: _move_draws(lattice._move_far, FAR_N, _far(), n, seed),
        events={"below 0": lambda v: v < 0},
        exact=lambda: _events(_move_law(FAR_N, FAR_LO, FAR_HI), {"below 0": lambda v: v < 0}),
        mutate=lambda mp_: _moves_off(mp_, "wide", DOWN), mutation="its wide coin 3% low", n=250_000,
    ),
    "bridge, ends apart (0 at 3/2, 3 at 1/2; middle 5/4)": Case(
        draw=lambda n, seed: lattice.bridge(np.full(n, 3), B_LO, np.zeros(n, dtype=np.int64), B_HI, B_MID,
                                            bits_only(seed)),
        events={"upper end": lambda v: v == 0, "lower end": lambda v: v == 3},
        exact=lambda: _events(_bridge_law(3, 0, B_LO, B_MID, B_HI), {"upper end": lambda v: v == 0,
                                                                      "lower end": lambda v: v == 3}),
        mutate=lambda mp_: _init_off(mp_, lattice._Triple, "holds", UP), mutation="beta 3% high",
    ),
    "bridge, equal ends (2 at 1/10 and 5; middle 1/2)": Case(
        draw=lambda n, seed: lattice.bridge(np.full(n, 2), G_LO, np.full(n, 2), G_HI, G_MID, bits_only(seed)),
        events={"moves": lambda v: v != 2, "up": lambda v: v > 2},
        exact=lambda: _events(_bridge_law(2, 2, G_LO, G_MID, G_HI), {"moves": lambda v: v != 2, "up": lambda v: v > 2}),
        mutate=lambda mp_: _init_off(mp_, lattice._Triple, "moves", UP), mutation="gamma 3% high",
    ),
    # ---- bit reports (vectorised)
    "bit reports: DLap thresholds 2 alpha^j/(1 + alpha), level 1/2": Case(
        draw=lambda n, seed: br.sample(F(1, 2), n, BR_SRC(np.random.default_rng(seed))),
        events={"0": lambda v: v == 0, "|V| >= 3": lambda v: np.abs(v) >= 3},
        exact=lambda: {"0": _c(_e(F(1, 2))), "|V| >= 3": 2 * _e(F(3, 2)) / (1 + _e(F(1, 2)))},
        mutate=_bitreport_tails_off, mutation="every threshold 3% high", n=400_000,
    ),
    "bit reports: signs": Case(
        draw=lambda n, seed: br.sample(F(1), n, BR_SRC(np.random.default_rng(seed))),
        events={"> 0": lambda v: v > 0},
        exact=lambda: {"> 0": _e(1) / (1 + _e(1))},
        mutate=_biased_signs, mutation="positive signs with probability 0.515", n=400_000,
    ),
    "bit reports: tighten 11/10 -> 1 (stay coin p0)": Case(
        draw=lambda n, seed: br.tighten(np.zeros(n, dtype=np.int64), HI, LO, BR_SRC(np.random.default_rng(seed))),
        events={"stays": lambda v: v == 0, "> 0": lambda v: v > 0},
        exact=lambda: _events({k: _increment(k, LO, HI) for k in range(-_reach(LO), _reach(LO) + 1)},
                              {"stays": lambda v: v == 0, "> 0": lambda v: v > 0}),
        mutate=_bitreport_stay_off, mutation="p0 3% low", n=400_000,
    ),
    "bit reports: a true bit reported 1 with p = 1/(1 + alpha), level 1/3": Case(
        draw=lambda n, seed: br.report(np.ones(n, dtype=bool), br.sample(F(1, 3), n, BR_SRC(np.random.default_rng(seed)))),
        events={"1": lambda v: v == 1},
        exact=lambda: {"1": 1 / (1 + _e(F(1, 3)))},
        mutate=_bitreport_tails_off, mutation="every threshold 3% high", n=400_000,
    ),
}


def _near():
    g = lattice._Gap(NEAR_LO, NEAR_HI)
    k = g.moves()
    assert NEAR_N < k.cap  # the case draws the near move
    return g, k


def _far():
    g = lattice._Gap(FAR_LO, FAR_HI)
    k = g.moves()
    assert FAR_N >= k.cap  # the case draws the far move
    return g, k


def check(case: Case, n: int | None = None) -> Verdict:
    with mp.workdps(DIGITS):
        exact = case.exact()
    return verdict(case.draw(n or case.n, case.seed), case.events, exact)


@pytest.mark.parametrize("name", list(CASES))
def test_each_coin_has_its_exact_law(name, report):
    """The real coin: its case's n draws at the full size of GRADUAL_MC, a quarter at the quick one
    (the alarm is a z-score, so the false-alarm rate is the same at either size)."""
    case = CASES[name]
    found = check(case, mc.size(full=case.n, quick=case.n // 4))
    report(f"{name}: {found}")
    assert found.passes, found


@pytest.mark.parametrize("name", list(CASES))
def test_a_3_percent_error_is_caught(name, monkeypatch, report):
    case = CASES[name]
    case.mutate(monkeypatch)
    found = check(case)  # the case's full n at either size: a 3% error needs it
    report(f"{name}, {case.mutation}: {found}")
    assert not found.passes, found
