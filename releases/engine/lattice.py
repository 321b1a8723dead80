"""The exact lattice path: gradual release with integer noise, pure eps-DP
(docs/mathematics.md, "The exact lattice path").

``V_level`` is a path of integer noise, one per coordinate: at every level it
is discrete Laplace, ``P(V = k) = (1 - alpha) / (1 + alpha) * alpha^|k|`` with
``alpha = e^{-level}``, so ``u + V_level`` is ``level``-DP for an integer
answer ``u`` of l1-sensitivity 1. A listing whose coordinate ``i`` has
sensitivity ``w_i`` lattice units runs coordinate ``i`` at level
``eps / w_i`` (one level per coordinate).

The steps between levels are the lattice forms of the float path's:

* :func:`tighten` (``hi -> lo``): ``V_lo = V_hi + W`` with ``W`` independent
  of ``V_hi``: ``W = 0`` with probability ``p0 = (b/a) ((1-a)/(1-b))^2``,
  else ``W ~ DLap(a)`` (``a = e^{-lo}``, ``b = e^{-hi}``). Releasing any set
  of levels therefore costs the largest one.
* :func:`relax` (``lo -> hi``), ``V_hi`` given ``V_lo = x``: it stays at ``x``
  with probability ``r^{|x|+1} (1-a^2)/(1-b^2)`` (``r = b/a``); otherwise it
  moves to ``y`` with probability proportional to ``r^{|y|} a^{2 dist(y)}``,
  ``dist(y)`` the distance from ``y`` to the integers between 0 and ``x``
  (drawn part by part: between 0 and ``x``, beyond ``x``, beyond 0, each
  proposed with an integer weight read off exact brackets and kept with an
  exact coin, so that a move takes about one round whatever the levels and
  ``x``; see :func:`_relax1`).
* :func:`bridge` (``lo < mid < hi``, both ends known): ``V_mid`` given both,
  proportional to ``P(W1 = v - x_hi) P(W2 = x_lo - v)`` for the tightening
  increments ``W1`` (``hi -> mid``) and ``W2`` (``mid -> lo``). It is
  ``x_hi`` with a probability that is a constant of the three levels, and
  otherwise the relaxation from ``lo`` to ``mid`` started at ``x_lo - x_hi``,
  shifted by ``x_hi`` (ends equal: a constant coin and a geometric); see
  :func:`_bridge1`. Its cost does not depend on the levels or the ends.

No floating-point number enters any decision. Levels are exact rationals
(``Fraction``, ``Decimal``, ``int`` or a decimal string; a ``float`` is
refused), and every random choice is one of:

* a uniform integer below ``n`` from ``rng.getrandbits`` (by rejection);
* ``Bernoulli(e^{-gamma})`` for rational ``gamma`` (Canonne, Kamath and
  Steinke 2020, Algorithm 1);
* ``DLap(e^{-lambda})`` and the one-sided geometric for rational ``lambda``
  (their Algorithm 2);
* ``Bernoulli(p)`` for a constant ``p`` of the levels, such as ``e^{-1}``,
  ``(1-e^{-s})/(1-e^{-t})`` or the bridge's two constants: a uniform number
  drawn 24 bits, then 64 at a time, is compared with integer brackets of
  ``p`` computed exactly (:class:`_Coin`, :mod:`releases.engine.exact_bounds`); the
  first 24 bits decide but with probability about ``2^-23``, and then 64
  more are drawn and the bracket is tightened;
* products and complements of these.

The scalar coins live in :mod:`releases.engine.lattice_coins` (re-exported here). The public
steps draw all their coordinates at once, in integer numpy (:mod:`releases.engine.lattice_batch`,
:func:`_relax_rows`, :func:`_tighten`, :func:`_bridge`): the same laws as the one-coordinate
functions below, some reached by another exact route (docs/mathematics.md section 15, "Many
coordinates at once"), so a seeded source gives other values than they would. Coordinates whose
levels are too fine for int64 products are drawn one at a time by those functions.

``rng`` is any object with ``getrandbits(k)``: :func:`new_rng` (ChaCha20's keystream under a
key from the operating system's generator, :mod:`releases.engine.keystream`) in the product,
``random.Random(seed)`` in tests. The public steps read a system generator
through a buffer (:class:`_Bits`) that fetches its bits in large blocks.
This module never imports Django.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from numbers import Integral

import numpy as np

from releases.engine import exact_bounds, lattice_batch

from .lattice_coins import (  # noqa: F401  (the scalar coins, re-exported: tests reach them here)
    _FIRST_BITS,
    _as_pair,
    _below,
    _bern_exp,
    _bern_exp_small,
    _bit,
    _bit_source,
    _Bits,
    _Coin,
    _dlap,
    _geometric,
    _pair_of,
    _plus,
    _Ratio,
    _reduced,
    _unit_brackets,
    _units,
    _units_from,
    _zero,
)

from .lattice_accuracy import error_bound, tail_probability  # noqa: F401  (part of this module's interface)
from .lattice_inputs import (  # noqa: F401  (part of this module's interface)
    _INT64,
    MAX_LEVEL,
    MIN_LEVEL,
    GeneratorBits,
    _levels,
    _noise,
    _out,
    _size,
    as_level,
    new_rng,
)

__all__ = [
    "sample",
    "relax",
    "tighten",
    "bridge",
    "step",
    "levels_for",
    "error_bound",
    "tail_probability",
    "new_rng",
    "as_level",
    "GeneratorBits",
]



class _Gap:
    """The constants of two levels ``lo < hi`` that the steps between them use."""

    __slots__ = ("lo", "hi", "gap", "ratio", "ratio2", "_moves", "_p0")

    def __init__(self, lo: Fraction, hi: Fraction):
        self.lo = _pair_of(lo)
        self.hi = _pair_of(hi)
        self.gap = _plus(self.hi, self.lo, -1)
        self.ratio = _Ratio(self.lo, self.hi)  # (1 - a) / (1 - b)
        self.ratio2 = _Ratio(  # (1 - a^2) / (1 - b^2)
            _reduced(2 * lo.numerator, lo.denominator), _reduced(2 * hi.numerator, hi.denominator)
        )
        self._moves = None
        self._p0 = None

    def moves(self) -> _Moves:
        """The constants of the relaxation's move (made at its first use)."""
        if self._moves is None:
            self._moves = _Moves(self)
        return self._moves

    def stay(self, rng) -> bool:
        """``Bernoulli(p0)``: the tightening increment from hi to lo is 0,
        ``p0 = e^{-(hi-lo)} ((1 - e^{-lo}) / (1 - e^{-hi}))^2``, one constant coin."""
        return self.stay_coin()(rng)

    def stay_coin(self) -> _Coin:
        """The coin of :meth:`stay` (made at its first use)."""
        if self._p0 is None:
            gap, ratio = self.gap, self.ratio.coin.bounds  # ratio: the bracket of (1 - a)/(1 - b)

            def p0(bits):
                r = ratio(bits)
                return exact_bounds.product(bits, exact_bounds.exp_neg(*gap, bits), r, r)

            self._p0 = _Coin(p0)
        return self._p0


def _per_coordinate(make, ordered, message: str, *levels: list[Fraction]) -> tuple[list, np.ndarray]:
    """``(made, which)``: ``make(*levels_i)`` once per distinct tuple of levels (checked by
    ``ordered``), and for each coordinate ``i`` the index in ``made`` of its tuple's.

    :func:`_levels` returns one object per distinct level, so the objects'
    ids identify the tuple without hashing fractions for every coordinate.
    """
    index: dict = {}
    made: list = []
    which = []
    for row in zip(*levels):
        key = tuple(map(id, row))
        found = index.get(key)
        if found is None:
            if not ordered(*row):
                raise ValueError(message)
            found = index[key] = len(made)
            made.append(make(*row))
        which.append(found)
    return made, np.array(which, dtype=np.int64)


# --------------------------------------------------------------------------
# one coordinate


#: The relaxation's move proposes its parts with integer weights in units of 2^-UNIT_BITS.
_UNIT_BITS = 8


def _above_odds(x: tuple[int, int]) -> int:
    """An integer at least ``2^8 / (e^x - 1)`` for rational ``x > 0``, close for small ``x``:
    ``e^x - 1 >= x + x^2/2 + x^3/6 + x^4/24`` (the terms left out are positive)."""
    n, d = x
    series = 24 * n * d**3 + 12 * n**2 * d**2 + 4 * n**3 * d + n**4  # (that sum) * 24 d^4
    return -((-(24 * d**4) << _UNIT_BITS) // series)  # the ceiling


class _Moves:
    """The constants of the relaxation's move for two levels ``lo < hi`` (see :func:`_relax1`).

    With ``r = e^{-(hi-lo)}`` and ``q = e^{-(lo+hi)}``: ``span`` and
    ``tails``, integers at least ``2^8/(1-r) = 2^8 (1 + 1/(e^{hi-lo} - 1))``
    and ``2^8 q/(1-q) = 2^8/(e^{lo+hi} - 1)`` (:func:`_above_odds`);
    ``cap = ceil(span / 2^8)``, at least ``1/(1-r)``; the coins ``wide``,
    ``Bernoulli(2^8 / ((1-r) span))``, and ``tail``, ``Bernoulli(2^8 q/(1-q) /
    tails)``, on exact brackets; ``both``, the level ``lo + hi``.
    """

    __slots__ = ("span", "cap", "tails", "wide", "tail", "both", "above")

    def __init__(self, g: _Gap):
        eb, gap, unit = exact_bounds, g.gap, 1 << _UNIT_BITS
        both = self.both = _plus(g.lo, g.hi)
        self.span = unit + _above_odds(gap)
        self.cap = -(-self.span >> _UNIT_BITS)
        self.tails = _above_odds(both)

        def wide(bits):  # 1 / ((1 - r) span / 2^8)
            return eb.div(eb.exact(unit, self.span, bits), eb.one_minus_exp_neg(*gap, bits), bits)

        def tail(bits):  # q / ((1 - q) tails / 2^8)
            odds = eb.div(eb.exp_neg(*both, bits), eb.one_minus_exp_neg(*both, bits), bits)
            return eb.div(odds, eb.exact(self.tails, unit, bits), bits)

        def above(bits):  # a^2 (1 - r) / (1 - q)
            return eb.div(eb.mul(eb.exp_neg(2 * g.lo[0], g.lo[1], bits), eb.one_minus_exp_neg(*gap, bits), bits),
                          eb.one_minus_exp_neg(*both, bits), bits)

        self.wide = _Coin(wide)
        self.tail = _Coin(tail)
        self.above = _Coin(above)


def _relax1(rng, x: int, g: _Gap) -> int:
    """``V_hi`` given ``V_lo = x``: stay with ``r^{|x|+1} (1-a^2)/(1-b^2)``, else move.

    The move law, ``r^{|y|} a^{2 dist(y)}``, is symmetric under ``x -> -x``,
    ``y -> -y``, so it is drawn for ``n = |x|`` and mirrored: ``y`` has
    weight ``r^y`` for ``0 <= y <= n``, ``q^j`` at ``y = -j`` and ``r^n q^j``
    at ``y = n + j`` (``j >= 1``, ``q = ab = r a^2``). Its three parts weigh
    ``I = sum_{y<=n} r^y``, ``B = q/(1-q)`` and ``r^n B``. Each round
    proposes a part with integer weights (units of ``2^-8``, constants of
    :class:`_Moves`) and keeps it with its true weight over the proposed one
    (:func:`_move_near` for ``n < cap``, :func:`_move_far` beyond), so that a
    round keeps at least about a third of what it proposes, whatever the
    levels and ``x``.
    """
    gn, gd = g.gap
    n = abs(x)
    if _bern_exp(rng, gn * (n + 1), gd) and g.ratio2(rng):
        return x
    k = g.moves()
    y = _move_near(rng, n, g, k) if n < k.cap else _move_far(rng, n, g, k)
    return y if x >= 0 else -y


def _move_far(rng, n: int, g: _Gap, k: _Moves) -> int:
    """The move from ``V_lo = n >= cap``: ``[0, n]`` and above together, below apart.

    ``0 <= y`` is proposed with weight ``span`` (about ``2^8 / (1-r)``) and
    kept with ``wide``; ``y`` is then geometric with ratio ``r``, kept if
    ``y <= n`` and with ``a^{2(y-n)}`` above (so ``r^n q^{y-n}``). Below has
    weight ``tails``, kept with ``tail``, and ``y = -1 - G`` with ``G``
    geometric of ratio ``q``. As ``n >= 1/(1-r)``, ``I >= (1 - e^{-1})/(1-r)``:
    at least 0.6 of the proposals are kept.
    """
    gn, gd = g.gap
    ln, ld = g.lo
    while True:
        z = _below(rng, k.span + k.tails)
        if z < k.span:
            if k.wide(rng):
                y = _geometric(rng, gn, gd)
                if y <= n or _bern_exp(rng, 2 * ln * (y - n), ld):
                    return y
        elif k.tail(rng):
            return -1 - _geometric(rng, *k.both)


def _move_near(rng, n: int, g: _Gap, k: _Moves) -> int:
    """The move from ``V_lo = n``, ``0 <= n < cap``: ``y`` with weight ``r^y`` for ``0 <= y <= n``,
    ``q^j`` at ``y = -j`` and ``r^n q^j`` at ``y = n + j`` (``j >= 1``).

    These are the three parts of ``r^{|y|} a^{2 dist(y)}``, of total weights
    ``I = sum_{y<=n} r^y``, ``B = q/(1-q)`` and ``r^n B``. A part is proposed
    with the integer weights (in units of ``2^-8``) ``2^8 (n+1)``, ``tails``
    and ``tails``, then kept with its true weight over the proposed one:
    inside, ``y`` uniform on ``[0, n]`` kept with ``r^y``; below, kept with
    ``tail``, then ``y = -1 - G`` for ``G`` geometric with ratio ``q``;
    above, kept with ``tail`` and ``r^n``, then ``y = n + 1 + G``. With
    ``n < cap``, ``r^n > e^{-1}`` roughly, so a round keeps at least about a
    third of what it proposes, however close the levels are (where ``DLap(r)``
    proposals would almost all be refused).
    """
    gn, gd = g.gap
    inside = (n + 1) << _UNIT_BITS
    while True:
        z = _below(rng, inside + 2 * k.tails)
        if z < inside:
            y = z >> _UNIT_BITS
            if _bern_exp(rng, gn * y, gd):
                return y
        elif k.tail(rng):
            if z < inside + k.tails:
                return -1 - _geometric(rng, *k.both)
            if _bern_exp(rng, gn * n, gd):
                return n + 1 + _geometric(rng, *k.both)


class _Triple:
    """The constants of three levels ``lo < mid < hi`` for the bridge (see :func:`_bridge1`).

    With ``l = e^{-lo}``, ``m = e^{-mid}``, ``h = e^{-hi}``, ``sigma = h/m``,
    ``rho = m/l`` and ``tau = h/l``:

    * ``holds``: ``Bernoulli(beta)``, ``beta = sigma (1-rho)(1-ml) /
      (sigma (1-rho)(1-ml) + (1-sigma)(1-mh))``;
    * ``moves``: ``Bernoulli(gamma)``, ``gamma = 2 ml (1-sigma)(1-mh)(1-rho) /
      ((1-m^2) (tau (1-l^2) + (1-tau)(1-lh)))``.

    Both are written with positive terms only (every ``1 - e^{-x}`` is its
    own bracket), so they are bracketed to full relative precision however
    close or small the levels are.
    """

    __slots__ = ("lower", "both", "holds", "moves")

    def __init__(self, lo: Fraction, mid: Fraction, hi: Fraction):
        self.lower = _Gap(lo, mid)  # V_mid given V_lo alone: the relaxation lo -> mid
        l, m, h = _pair_of(lo), _pair_of(mid), _pair_of(hi)
        both = self.both = _plus(l, m)  # ml = e^{-(lo+mid)}
        up, down, span = _plus(h, m, -1), _plus(m, l, -1), _plus(h, l, -1)
        eb = exact_bounds

        def beta(bits):
            def om(x):
                return eb.one_minus_exp_neg(*x, bits)

            held = eb.product(bits, eb.exp_neg(*up, bits), om(down), om(both))  # sigma (1-rho)(1-ml)
            moved = eb.product(bits, om(up), om(_plus(m, h)))  # (1-sigma)(1-mh)
            return eb.div(held, eb.add(held, moved, bits), bits)

        def gamma(bits):
            def om(x):
                return eb.one_minus_exp_neg(*x, bits)

            top = eb.product(  # 2 ml (1-sigma)(1-mh)(1-rho)
                bits, eb.exact(2, 1, bits), eb.exp_neg(*both, bits), om(up), om(_plus(m, h)), om(down)
            )
            ends = eb.add(  # tau (1-l^2) + (1-tau)(1-lh)
                eb.product(bits, eb.exp_neg(*span, bits), om(_plus(l, l))),
                eb.product(bits, om(span), om(_plus(l, h))),
                bits,
            )
            return eb.div(top, eb.product(bits, om(_plus(m, m)), ends), bits)

        self.holds = _Coin(beta)
        self.moves = _Coin(gamma)


def _bridge1(rng, x_lo: int, x_hi: int, k: _Triple) -> int:
    """``V_mid`` given ``V_lo = x_lo`` and ``V_hi = x_hi``.

    Write ``V_mid = x_hi + W1`` and ``V_lo = V_mid + W2`` with the tightening
    increments ``W1`` (``hi -> mid``: 0 with probability ``p1``, else
    ``DLap(m)``) and ``W2`` (``mid -> lo``: 0 with probability ``p2``, else
    ``DLap(l)``), independent; ``D = x_lo - x_hi`` and ``P_z(k) = c_z z^|k|``
    with ``c_z = (1-z)/(1+z)`` the law of ``DLap(z)``. Two facts of the path:

    * ``W1 + W2`` is the tightening increment from ``hi`` to ``lo``: 0 with
      probability ``p1 p2``, else ``DLap(l)``; and ``DLap(m) + W2`` is
      ``DLap(l)`` (tightening from ``mid`` to ``lo``);
    * ``p0(x, y) = sinh^2(x/2) / sinh^2(y/2)`` for the stay probability of
      the tightening from ``y`` to ``x``, so ``p1 = p0(mid, hi)``,
      ``p2 = p0(lo, mid)`` and ``p1 p2 = p0(lo, hi)``.

    For ``D != 0``: ``P(W1 = 0 | W1 + W2 = D) = p1 (1-p2) P_l(D) / ((1 - p1
    p2) P_l(D)) = (cosh mid - cosh lo) / (cosh hi - cosh lo)``, a constant
    of the levels (``beta`` of :class:`_Triple`, written there with positive
    terms only); then ``V_mid = x_hi``. Otherwise ``W1 ~ DLap(m)`` and ``W1``
    given ``W1 + W2 = D`` is ``V_mid`` given ``V_lo = D`` on an ordinary
    path: the relaxation from ``lo`` to ``mid`` started at ``D``
    (:func:`_relax1`).

    For ``D = 0``: ``v = V_mid - x_hi`` is not 0 only when both increments
    are ``DLap``, with ``P(v) = (1-p1)(1-p2) P_m(v) P_l(v) / (p1 p2 + (1 -
    p1 p2) c_l)``, proportional to ``(ml)^|v|``: so ``v != 0`` with the
    constant probability ``gamma`` (:class:`_Triple`), and then ``|v| - 1``
    is geometric with ratio ``ml`` and the sign is even.

    Either way a coordinate costs one constant coin and at most one
    relaxation, whatever the levels and the ends.
    """
    d = x_lo - x_hi
    if d == 0:
        if not k.moves(rng):
            return x_hi
        v = 1 + _geometric(rng, *k.both)
        return x_hi - v if _bit(rng) else x_hi + v
    if k.holds(rng):
        return x_hi
    return x_hi + _relax1(rng, d, k.lower)


# --------------------------------------------------------------------------
# the public steps


#: The batched relaxation takes levels, uniform bounds and noise (times 2^8) below ``_WIDE``, and
#: the bridge noise below it; coordinates beyond are drawn one at a time by the scalar samplers.
_WIDE = 1 << 60


#: About how many 64-bit words a step uses a coordinate (measured on listings; the first block
#: of the operating system's bits is read this size, later ones only what is missing).
_WORDS = {"initial": 3, "tighten": 3, "relax": 7, "bridge": 3}


def _small(*pairs: tuple[int, int]) -> bool:
    return all(0 < v < _WIDE for pair in pairs for v in pair)


def _batchable(g: _Gap) -> bool:
    """Whether the relaxation between ``g``'s levels is drawn batched (every bound fits an int64)."""
    if not _small(g.gap, g.lo):
        return False
    k = g.moves()
    return _small(k.both) and k.span + k.tails < _WIDE and (k.cap << _UNIT_BITS) + 2 * k.tails < _WIDE


class _Columns:
    """The constants of a list of :class:`_Gap` as int64 columns, one entry per coordinate
    (``which[i]``: the index of coordinate ``i``'s gap; one gather of a small table), and their
    coins as tables."""

    def __init__(self, gaps: list, which: np.ndarray, fits: np.ndarray):
        self.gaps = gaps
        moves = [g.moves() if ok else None for g, ok in zip(gaps, fits)]
        table = np.array([(m.span, m.cap, m.tails) if m else (0,) * 3 for m in moves], dtype=np.int64)[which]
        self.which = which
        self.span, self.cap, self.tails = table.T
        # the geometrics' levels (lattice_batch.geometric_levels): each gap's, then each lo + hi
        self.levels = [g.gap for g in gaps] + [m.both if m else (1, 1) for m in moves]
        self.ratio2 = [g.ratio2.coin for g in gaps]
        self.wide = [m.wide if m else None for m in moves]
        self.tail = [m.tail if m else None for m in moves]
        self.above = [m.above if m else None for m in moves]


def _relax_rows(src, x: np.ndarray, gaps: list, which: np.ndarray) -> np.ndarray:
    """``V_hi`` given ``V_lo = x`` for each coordinate, between the levels of ``gaps[which[i]]``:
    :func:`_relax1`'s decisions for all coordinates at once (the stay coins, then the moves'
    rejection loops as rounds of trials, :func:`lattice_batch.first_accepted`)."""
    out = np.empty(x.size, dtype=np.int64)
    n = np.abs(x)
    fits = np.array([_batchable(g) for g in gaps], dtype=bool)
    batched = fits[which] & (n < _WIDE >> _UNIT_BITS)
    for i in np.flatnonzero(~batched).tolist():
        out[i] = _relax1(src, int(x[i]), gaps[which[i]])
    rows = np.flatnonzero(batched)
    if not rows.size:
        return out
    x, n, c = x[rows], n[rows], _Columns(gaps, which[rows], fits)
    stay = lattice_batch.geometric_levels(src, c.levels, c.which) > n  # Bernoulli(r^{n+1})
    at = np.flatnonzero(stay)
    stay[at] = lattice_batch.flips(src, c.ratio2, c.which[at])
    y = x.copy()
    move = np.flatnonzero(~stay)
    if move.size:
        y[move] = _moves(src, n, c, move)
        y[move] = np.where(x[move] >= 0, y[move], -y[move])
    out[rows] = y
    return out


def _moves(src, n: np.ndarray, c: _Columns, rows: np.ndarray) -> np.ndarray:
    """The move of :func:`_relax1` from ``V_lo = n`` for the coordinates ``rows``: its rejection
    loop (:func:`_move_near` where ``n < cap``, :func:`_move_far` beyond) run as rounds of trials
    (:func:`lattice_batch.first_accepted`), each trial the same proposal as one round of the
    scalar loop, its coins drawn in one call for the uniforms, one for the constant coins and one
    for the geometrics. ``Bernoulli(r^m)`` is ``G >= m`` for a geometric ``G`` of ratio ``r``;
    the far move's ``y = G > n``, kept with ``a^{2 (y - n)}``, is drawn as kept with the constant
    ``a^2 (1-r)/(1-q)`` and then ``y = n + 1 + G'``, ``G'`` of ratio ``q = r a^2``: the same law,
    ``(1-r) r^{n+1} a^2 q^j`` at ``y = n + 1 + j`` either way.

    Near (``n < cap``): ``z`` uniform below ``2^8 (n+1) + 2 tails``; inside (``z < 2^8 (n+1)``)
    ``y = floor(z / 2^8)`` kept with ``r^y``; below it, kept with ``tail``, ``y = -1 - G``; above,
    kept with ``tail`` and ``r^n``, ``y = n + 1 + G`` (``G`` geometric of ratio ``q``).
    Far: ``z`` uniform below ``span + tails``; ``z < span``: kept with ``wide``, ``y`` geometric
    of ratio ``r``, kept if ``y <= n`` or with ``a^{2 (y - n)}``; otherwise kept with ``tail``,
    ``y = -1 - G``."""
    groups = len(c.tail)
    coins = c.tail + c.wide + c.above

    def trial(at):
        r = rows[at]
        nn, tails, span = n[r], c.tails[r], c.span[r]
        near = nn < c.cap[r]
        inside = (nn + 1) << _UNIT_BITS
        z, ok = lattice_batch.below(src, np.where(near, inside + 2 * tails, span + tails))
        y_in = z >> _UNIT_BITS
        near_in = ok & near & (z < inside)
        near_up = ok & near & (z >= inside + tails)
        far_in = ok & ~near & (z < span)
        # one call for the constant coins: tail (near sides, far outside) or wide (far inside),
        # and for the far inside also the coin a^2 (1-r)/(1-q) of landing above n
        f, fi = np.flatnonzero(ok & ~near_in), np.flatnonzero(far_in)
        which = c.which[r]
        flipped = lattice_batch.flips(src, coins, np.concatenate([which[f] + groups * far_in[f], which[fi] + 2 * groups]))
        heads = np.zeros(r.size, dtype=bool)
        heads[f] = flipped[: f.size]
        lands = np.zeros(r.size, dtype=bool)
        lands[fi] = flipped[f.size:]
        # one call for the geometrics: ratio r for the coins r^y (near inside: G >= y), r^n (near
        # above: G >= n) and the far inside's value; ratio q for every tail's value
        a = np.flatnonzero(near_in | (heads & (near_up | far_in)))
        b = np.flatnonzero(heads)
        g = lattice_batch.geometric_levels(src, c.levels, np.concatenate([which[a], groups + which[b]]))
        g_r = np.zeros(r.size, dtype=np.int64)
        g_r[a] = g[: a.size]
        g_q = np.zeros(r.size, dtype=np.int64)
        g_q[b] = g[a.size:]
        kept_in = near_in & (g_r >= y_in)
        low = heads & ~near_up & ~far_in  # below 0: near's lower side, far's outside
        up = heads & near_up & (g_r >= nn)
        far_low = heads & far_in & (g_r <= nn)
        far_up = heads & far_in & (g_r > nn) & lands
        y = np.where(kept_in, y_in, np.where(low, -1 - g_q, np.where(far_low, g_r, nn + 1 + g_q)))
        return kept_in | low | up | far_low | far_up, y

    def rest(at):  # the few left after a round: the scalar loops
        out = []
        for i in rows[at].tolist():
            g = c.gaps[int(c.which[i])]
            k, ni = g.moves(), int(n[i])
            out.append(_move_near(src, ni, g, k) if ni < k.cap else _move_far(src, ni, g, k))
        return out

    return lattice_batch.first_accepted(rows.size, trial, rest)


def _dlap_rows(src, s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(out, rest)``: ``DLap(e^{-s_i/t_i})`` for each coordinate whose ``s``, ``t`` fit
    (:func:`lattice_batch.dlap`, any level below ``_WIDE``), and the indices of the others (0 in
    ``s``, ``t``), which the caller draws one at a time."""
    out = np.empty(s.size, dtype=np.int64)
    fits = (s > 0) & (t > 0)
    at = np.flatnonzero(fits)
    if at.size:
        out[at] = lattice_batch.dlap(src, s[at], t[at])
    return out, np.flatnonzero(~fits)


def _dlaps(src, levels: list[tuple[int, int]], which: np.ndarray) -> np.ndarray:
    """``DLap(e^{-level})`` for each coordinate, at ``levels[which[i]]`` (``(s, t)`` pairs)."""
    def column(k):
        return np.array([p[k] if p[0] < _WIDE and p[1] < _WIDE else 0 for p in levels], dtype=np.int64)[which]

    out, rest = _dlap_rows(src, column(0), column(1))
    if rest.size:
        out[rest] = _out([_dlap(src, *levels[which[i]]) for i in rest.tolist()])
    return out


def _grouped_levels(levels: list[Fraction]) -> tuple[list[Fraction], np.ndarray]:
    """The distinct levels and each coordinate's index among them."""
    made, which = _per_coordinate(lambda level: level, lambda level: True, "", levels)
    return made, which


def sample(level, size, rng) -> np.ndarray:
    """``size`` independent draws of ``DLap(e^{-level})`` (one level, or one per coordinate), as int64."""
    n = _size(size)
    distinct, which = _grouped_levels(_levels(level, n, "level"))
    return _sample(_bit_source(rng, _WORDS["initial"] * n), distinct, which)


def _sample(src, distinct: list[Fraction], which: np.ndarray) -> np.ndarray:
    return _dlaps(src, [_pair_of(level) for level in distinct], which)


def _noise_array(name: str, noise) -> np.ndarray:
    """Integer noise as int64 (a one-dimensional int64 array as it is)."""
    if isinstance(noise, np.ndarray) and noise.dtype == np.int64 and noise.ndim == 1:
        return noise
    values = _noise(name, noise)
    if any(abs(v) > _INT64 for v in values):
        raise ValueError(f"{name} does not fit in int64")
    return np.array(values, dtype=np.int64)


def _pair(noise, level_a, level_b, names) -> tuple[np.ndarray, list[Fraction], list[Fraction]]:
    values = _noise_array("noise", noise)
    a = _levels(level_a, len(values), names[0])
    b = _levels(level_b, len(values), names[1])
    return values, a, b


def relax(noise, level_from, level_to, rng) -> np.ndarray:
    """``V_to`` given ``V_from = noise``, for ``level_to > level_from``."""
    values, lo, hi = _pair(noise, level_from, level_to, ("level_from", "level_to"))
    gaps, which = _per_coordinate(
        _Gap, lambda l, h: l < h, "relax needs level_to > level_from for every coordinate", lo, hi
    )
    return _relax_rows(_bit_source(rng, _WORDS["relax"] * len(values)), values, gaps, which)


def tighten(noise, level_from, level_to, rng) -> np.ndarray:
    """``V_to`` given ``V_from = noise``, for ``level_to < level_from``."""
    values, hi, lo = _pair(noise, level_from, level_to, ("level_from", "level_to"))
    gaps, which = _per_coordinate(
        _Gap, lambda l, h: l < h, "tighten needs level_to < level_from for every coordinate", lo, hi
    )
    return _tighten(_bit_source(rng, _WORDS["tighten"] * len(values)), values, gaps, which)


def _tighten(src, values: np.ndarray, gaps: list, which: np.ndarray) -> np.ndarray:
    # each coordinate's stay coin, then the increments of those that move, drawn together
    out = values.copy()
    moves = np.flatnonzero(~lattice_batch.flips(src, [g.stay_coin() for g in gaps], which))
    if moves.size:
        start = out[moves]
        step = _dlaps(src, [g.lo for g in gaps], which[moves])
        with np.errstate(over="ignore"):
            moved = start + step
        if np.any(((start ^ moved) & (step ^ moved)) < 0):  # pragma: no cover - levels are bounded below
            raise ValueError("the noise does not fit in int64: the level is too small")
        out[moves] = moved
    return out


def bridge(noise_lo, level_lo, noise_hi, level_hi, level_mid, rng) -> np.ndarray:
    """``V_mid`` given ``V_lo = noise_lo`` and ``V_hi = noise_hi``, for ``level_lo < level_mid < level_hi``."""
    x_lo = _noise_array("noise_lo", noise_lo)
    x_hi = _noise_array("noise_hi", noise_hi)
    if len(x_lo) != len(x_hi):
        raise ValueError(f"noise_lo has {len(x_lo)} values and noise_hi {len(x_hi)}")
    n = len(x_lo)
    lo = _levels(level_lo, n, "level_lo")
    mid = _levels(level_mid, n, "level_mid")
    hi = _levels(level_hi, n, "level_hi")
    triples, which = _per_coordinate(
        _Triple, lambda l, m, h: l < m < h, "bridge needs level_lo < level_mid < level_hi for every coordinate",
        lo, mid, hi,
    )
    return _bridge(_bit_source(rng, _WORDS["bridge"] * n), x_lo, x_hi, triples, which)


def _bridge(src, x_lo: np.ndarray, x_hi: np.ndarray, triples: list, which: np.ndarray) -> np.ndarray:
    """:func:`_bridge1`'s decisions for all coordinates at once: the constant coins, the
    geometric of equal ends, and the relaxations (:func:`_relax_rows`)."""
    out = x_hi.copy()
    fits = np.array([_small(k.both) for k in triples], dtype=bool)[which]
    fits &= (np.abs(x_lo) < _WIDE) & (np.abs(x_hi) < _WIDE)
    for i in np.flatnonzero(~fits).tolist():
        out[i] = _bridge1(src, int(x_lo[i]), int(x_hi[i]), triples[which[i]])
    d = x_lo - np.where(fits, x_hi, x_lo)
    equal = np.flatnonzero(fits & (d == 0))
    if equal.size:
        m = equal[lattice_batch.flips(src, [k.moves for k in triples], which[equal])]
        both = [k.both for k in triples]
        s = np.array([b[0] for b in both], dtype=np.int64)[which[m]]
        t = np.array([b[1] for b in both], dtype=np.int64)[which[m]]
        v = 1 + lattice_batch.geometric(src, s, t)
        out[m] = x_hi[m] + np.where(lattice_batch.signs(src, m.size), -v, v)
    apart = np.flatnonzero(fits & (d != 0))
    if apart.size:
        r = apart[~lattice_batch.flips(src, [k.holds for k in triples], which[apart])]
        out[r] = x_hi[r] + _relax_rows(src, d[r], [k.lower for k in triples], which[r])
    return out


def levels_for(eps, weights) -> list[Fraction]:
    """Per-coordinate lattice levels ``eps / w_i`` for a listing level ``eps`` and integer
    weights ``w_i`` (each coordinate's share of the budget, in lattice units), exactly."""
    e = as_level(eps, "eps")
    by_weight: dict = {}
    out = []
    for w in weights:
        # a plain int already seen is looked up directly: the checks below (an abstract-class
        # check each) once cost more than the release's sampling
        level = by_weight.get(w) if type(w) is int else None
        if level is None:
            if isinstance(w, bool) or not isinstance(w, Integral) or w < 1:
                raise ValueError(f"weights must be positive integers, got {w!r}")
            level = by_weight.get(int(w))
            if level is None:
                level = by_weight[int(w)] = e / int(w)
        out.append(level)
    return out


@lru_cache(maxsize=512)
def _constants(make, *levels: Fraction):
    """``make(*levels)`` (a :class:`_Gap` or :class:`_Triple`), kept: the constants of a listing's
    levels, their coins' brackets computed once, for the next release at the same levels (the class
    is part of the key). Their lazily made parts are written whole, so threads may share them."""
    return make(*levels)


def _weight_groups(weights) -> tuple[list[int], np.ndarray]:
    """The distinct weights (checked positive integers) and each coordinate's index among them."""
    arr = np.asarray(weights) if not isinstance(weights, np.ndarray) else weights
    if arr.ndim == 1 and arr.dtype.kind in "iu" and arr.size and int(arr.min()) >= 1:
        distinct, which = np.unique(arr, return_inverse=True)
        return [int(w) for w in distinct.tolist()], which.astype(np.int64).reshape(-1)
    made, which = _per_coordinate(lambda w: w, lambda w: True, "", list(weights))
    levels_for(1, made)  # the weights' checks
    return [int(w) for w in made], which


def step(eps, weights, rng, below=None, above=None):
    """The noise at listing level ``eps`` from the nearest known points.

    ``below`` / ``above``: ``(level, noise)`` of the nearest released listing
    levels under and over ``eps`` (or None). Coordinate ``i`` runs at
    ``level / weights[i]``. Returns ``(noise, method)`` with method
    ``initial``, ``relax``, ``tighten`` or ``bridge``.

    The levels are made once per distinct weight, and each coordinate carries the index of its
    weight: the same draws as :func:`sample`, :func:`relax`, :func:`tighten` and :func:`bridge` on
    the per-coordinate levels of :func:`levels_for`.
    """
    e = as_level(eps, "eps")
    distinct, which = _weight_groups(weights)
    n = len(which)
    kind = ("bridge" if above is not None else "relax") if below is not None else \
        ("tighten" if above is not None else "initial")
    names = {"bridge": ("level_mid", "level_lo", "level_hi"), "relax": ("level_to", "level_from", ""),
             "tighten": ("level_to", "", "level_from"), "initial": ("level", "", "")}[kind]

    def checked(level, name) -> list[Fraction]:  # each coordinate's level in range, as sample() etc. check
        return [as_level(x, name) for x in levels_for(level, distinct)]

    target = checked(e, names[0])
    src = _bit_source(rng, _WORDS[kind] * n)

    def known(side, name):
        level, noise = side
        values = _noise_array("noise", noise)
        if len(values) != n:
            raise ValueError(f"noise has {len(values)} values for {n} coordinates")
        return checked(level, name), values

    if below is not None and above is not None:
        (lo, x_lo), (hi, x_hi) = known(below, names[1]), known(above, names[2])
        if not all(l < m < h for l, m, h in zip(lo, target, hi)):
            raise ValueError("bridge needs level_lo < level_mid < level_hi for every coordinate")
        return _bridge(src, x_lo, x_hi, [_constants(_Triple, *t) for t in zip(lo, target, hi)], which), "bridge"
    if below is not None:
        lo, x = known(below, names[1])
        if not all(l < h for l, h in zip(lo, target)):
            raise ValueError("relax needs level_to > level_from for every coordinate")
        return _relax_rows(src, x, [_constants(_Gap, *p) for p in zip(lo, target)], which), "relax"
    if above is not None:
        hi, x = known(above, names[2])
        if not all(l < h for l, h in zip(target, hi)):
            raise ValueError("tighten needs level_to < level_from for every coordinate")
        return _tighten(src, x, [_constants(_Gap, *p) for p in zip(target, hi)], which), "tighten"
    return _sample(src, target, which), "initial"
