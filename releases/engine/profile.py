"""The privacy-loss profile of one release (docs/mathematics.md, "The privacy-loss profile").

A release at level ``eps`` is ``eps``-DP: for a worst-case neighbour the
privacy loss ``L = log p_D(y) / p_D'(y)`` never exceeds ``eps``. For a smaller
``eps'`` the release is ``(eps', delta(eps'))``-DP with the hockey-stick value

    delta(eps') = E[(1 - e^{eps' - L})_+]      (expectation under D),

which is 0 for ``eps' >= eps`` and grows as ``eps'`` falls. This module
computes that curve exactly for the l1 (Laplace) releases and by a
deterministic quadrature for the l2 releases. It is plain numpy/scipy/mpmath
and never imports Django.

l1 releases. Coordinate ``i`` carries Laplace noise of scale ``b_i``; the
neighbour moves its answer by ``t_i``; write ``a_i = t_i / b_i``. Its loss is

* ``+a_i`` with probability 1/2,
* ``-a_i`` with probability ``e^{-a_i} / 2``,
* continuous on ``(-a_i, a_i)`` with density ``e^{-(a_i - l)/2} / 4``.

Every piece, atoms included, is ``e^{-a_i/2} e^{l/2}`` times the symmetric
measure ``rho_i = (delta_{a_i} + delta_{-a_i})/2 + Leb(-a_i, a_i)/4``. The
tilt ``e^{l/2}`` is multiplicative, so it survives convolution: the law of
``L = sum L_i`` is ``e^{-S/2} e^{s/2} rho(ds)`` with ``S = sum a_i`` and
``rho = rho_1 * ... * rho_n``. Writing each box ``Leb(-a, a)`` as the
difference of two unit steps, ``rho`` is a finite signed sum of atoms and of
truncated powers ``(s - c)_+^{R-1} / (R-1)!``, whose integrals against
``e^{+-s/2}`` have closed forms. The signed sum cancels heavily, so it is
evaluated with mpmath at a precision chosen from the size of its terms.

Lattice releases (:class:`LatticeProfile`). Coordinate ``i`` carries integer
noise ``DLap(e^{-lam_i})`` and the neighbour moves its answer by ``t_i``
lattice units. Its loss is discrete, ``t_i + 1`` values ``lam_i (t_i - 2k)``,
with the same tilt (``e^{-lam t/2} e^{l/2}`` times a symmetric measure), and
the release is exactly ``sum lam_i t_i``-DP. The law of the total loss is
summed atom by atom: positive float64 probabilities convolved on the
lattices the spacings share, then a running-sum formula for the last two
independent parts; the result carries a stated bound on its absolute error.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction
from numbers import Rational

import mpmath
import numpy as np
from scipy import integrate, signal, special

from .lattice import as_level

__all__ = [
    "LatticeProfile",
    "ProfileTooLarge",
    "loss_profile_l1",
    "loss_profile_lattice",
    "loss_profile_l2",
    "profile_chart_points",
    "profile_groups",
]


# --------------------------------------------------------------------------
# inputs


def _exact(name: str, value) -> Fraction:
    """A finite number as an exact fraction (floats are taken at their exact value)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")  # noqa: TRY004 (callers map ValueError to 400)
    try:
        if isinstance(value, (Fraction, Rational, Decimal)):
            out = Fraction(value)
        else:
            f = float(value)
            if not math.isfinite(f):
                raise ValueError
            out = Fraction(f)
    except (TypeError, ValueError, ArithmeticError):
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None
    return out


def profile_groups(weights, moves, eps) -> list[Fraction]:
    """Per-coordinate loss parameters ``a_i = t_i * eps / w_i`` of a release.

    ``weights``: per coordinate the noise multiplier ``w_i`` (the released
    value at level ``eps`` is ``u_i + w_i V_eps`` with ``V_eps ~ Lap(1/eps)``,
    so the Laplace scale is ``w_i / eps``). ``moves``: per coordinate how far
    the worst-case neighbour moves the answer, ``t_i`` (its sign does not
    matter). Coordinates that do not move carry no loss and are left out.
    The result is exact (fractions), so equal inputs give equal parameters
    and :func:`loss_profile_l1` can group them.
    """
    w = list(weights)
    t = list(moves)
    if len(w) != len(t):
        raise ValueError(f"weights and moves differ in length ({len(w)} and {len(t)})")
    level = _exact("eps", eps)
    if level <= 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    out = []
    for i, (wi, ti) in enumerate(zip(w, t)):
        wf, tf = _exact(f"weights[{i}]", wi), abs(_exact(f"moves[{i}]", ti))
        if tf == 0:
            continue
        if wf <= 0:
            raise ValueError(f"weights[{i}] must be positive where the answer moves, got {wi!r}")
        out.append(tf * level / wf)
    return out


def _loss_parameters(a) -> dict[Fraction, int]:
    counts: dict[Fraction, int] = {}
    for i, ai in enumerate(a):
        f = _exact(f"a[{i}]", ai)
        if f < 0:
            raise ValueError(f"a[{i}] must be non-negative, got {ai!r}")
        if f > 0:
            counts[f] = counts.get(f, 0) + 1
    return counts


def _levels(eps_prime) -> np.ndarray:
    try:
        e = np.asarray(eps_prime, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("eps_prime must be numbers") from None
    if np.isnan(e).any():
        raise ValueError("eps_prime must not be NaN")
    return e


# --------------------------------------------------------------------------
# l1: the exact closed form


def _group_terms(n: int) -> dict[int, list[int]]:
    """``(2X + 2/X + Y/X - Y X)^n`` as ``{k: [coefficient of X^k Y^r for r = 0..n]}``.

    ``4 rho_i`` in generating-function form: ``X`` shifts by ``+a``, ``Y``
    integrates once (a unit step). ``X Y`` with a minus sign and ``Y / X``
    with a plus sign are the two steps of the box ``Leb(-a, a)``.
    """
    poly = {0: [1] + [0] * n}
    for _ in range(n):
        new: dict[int, list[int]] = {}
        for k, row in poly.items():
            for dk, dr, c in ((1, 0, 2), (-1, 0, 2), (-1, 1, 1), (1, 1, -1)):
                target = new.setdefault(k + dk, [0] * (n + 1))
                for r, v in enumerate(row):
                    if v and r + dr <= n:
                        target[r + dr] += c * v
        poly = new
    return {k: row for k, row in poly.items() if any(row)}


def _convolve(x: list[int], y: list[int]) -> list[int]:
    out = [0] * (len(x) + len(y) - 1)
    for i, xi in enumerate(x):
        if xi:
            for j, yj in enumerate(y):
                if yj:
                    out[i + j] += xi * yj
    return out


def _terms(counts: dict[Fraction, int]) -> dict[Fraction, list[int]]:
    """``4^N rho`` as ``{shift c: [integer coefficient for R = 0..N]}``.

    ``R = 0`` is an atom at ``c``; ``R >= 1`` is ``(s - c)_+^{R-1}/(R-1)!``.
    """
    terms: dict[Fraction, list[int]] = {Fraction(0): [1]}
    for a, n in counts.items():
        group = _group_terms(n)
        new: dict[Fraction, list[int]] = {}
        for c, row in terms.items():
            for k, grow in group.items():
                conv = _convolve(row, grow)
                key = c + k * a
                old = new.get(key)
                if old is None:
                    new[key] = conv
                else:
                    if len(old) < len(conv):
                        old.extend([0] * (len(conv) - len(old)))
                    for i, v in enumerate(conv):
                        old[i] += v
        terms = new
    return {c: row for c, row in terms.items() if any(row)}


class _L1Profile:
    """The signed decomposition of one release's loss law, ready to evaluate.

    Evaluation is in fixed point: Python integers scaled by ``2^bits``, in
    numpy object arrays so that each step runs over all shifts at once. The
    number of bits covers the largest term (the cancellation) plus the
    doubling of errors in the integration recurrence, with ``EXTRA_BITS`` to spare.
    """

    EXTRA_BITS = 100

    def __init__(self, a):
        counts = _loss_parameters(a)
        self.total = sum((a * n for a, n in counts.items()), Fraction(0))  # S
        self.n = sum(counts.values())
        if self.n == 0:
            return
        terms = sorted((c, row) for c, row in _terms(counts).items() if c <= self.total)
        s = float(self.total)
        # Terms are at most (6/4)^N * (2S)^R/R! * e^{S} * (1 + e^{S}) relative to 1.
        log2_terms = self.n * math.log2(1.5) + max(
            r * math.log2(2 * s) - math.lgamma(r + 1) / math.log(2) for r in range(self.n + 1)
        ) + 2 * s / math.log(2) + 1
        self.bits = bits = self.EXTRA_BITS + self.n + max(0, math.ceil(log2_terms))
        width = self.n + 1
        with mpmath.workprec(bits + 64):
            fx = self._fx
            S = self._mp(self.total)
            self.S = fx(S)
            self.e_minus_half_s = fx(mpmath.exp(-S / 2))
            cs = [self._mp(c) for c, _ in terms]
            self.c_exact = [c for c, _ in terms]
            self.c = np.array([fx(c) for c in cs], dtype=object)
            self.ecp = np.array([fx(mpmath.exp(c / 2)) for c in cs], dtype=object)
            self.ecm = np.array([fx(mpmath.exp(-c / 2)) for c in cs], dtype=object)
            self.beta = np.array([fx(S - c) for c in cs], dtype=object)
            self.ebp = np.array([fx(mpmath.exp((S - c) / 2)) for c in cs], dtype=object)
            self.ebm = np.array([fx(mpmath.exp(-(S - c) / 2)) for c in cs], dtype=object)
        self.coef = np.array([row + [0] * (width - len(row)) for _, row in terms], dtype=object)

    def _fx(self, x) -> int:
        return int(mpmath.nint(mpmath.ldexp(x, self.bits)))

    @staticmethod
    def _mp(f: Fraction):
        return mpmath.mpf(f.numerator) / f.denominator

    def delta(self, eps_prime: float) -> float:
        if self.n == 0 or eps_prime >= self.total:
            return 0.0
        if eps_prime <= -self.total:
            return -math.expm1(eps_prime)  # L >= -S: no positive part is cut
        return float(self._delta(eps_prime))

    def _delta(self, eps_prime: float) -> Fraction:
        bits, one = self.bits, 1 << self.bits
        with mpmath.workprec(bits + 64):
            ep = mpmath.mpf(eps_prime)
            e_ep, e_hp, e_hm = (self._fx(mpmath.exp(x)) for x in (ep, ep / 2, -ep / 2))
        above = np.array([c > Fraction(eps_prime) for c in self.c_exact], dtype=bool)
        c, ecp, ecm = self.c, self.ecp, self.ecm
        # atoms at c > eps': e^{c/2} - e^{eps'} e^{-c/2}
        acc = int(np.sum(self.coef[above, 0] * (ecp[above] - ((e_ep * ecm[above]) >> bits))))
        # continuous parts on [lo, S], lo = max(c, eps'); x = s - c runs over [alpha, beta]
        live = self.beta > 0
        if self.coef.shape[1] > 1 and live.any():
            cl, up = c[live], above[live]
            ecp, ecm = ecp[live], ecm[live]
            beta, ebp, ebm = self.beta[live], self.ebp[live], self.ebm[live]
            ep_fx = self._fx(mpmath.mpf(eps_prime))
            alpha = np.where(up, 0, ep_fx - cl)
            eap = np.where(up, one, (e_hp * ecm) >> bits)  # e^{alpha/2}
            eam = np.where(up, one, (e_hm * ecp) >> bits)  # e^{-alpha/2}
            coef = self.coef[live]
            # E_m(lam) = int_alpha^beta x^m/m! e^{lam x} dx, lam = +-1/2:
            # E_m = (beta^m/m! e^{lam beta} - alpha^m/m! e^{lam alpha})/lam - E_{m-1}/lam.
            pb = np.full(len(cl), one, dtype=object)
            pa = np.full(len(cl), one, dtype=object)
            e_plus = 2 * (ebp - eap)
            e_minus = -2 * (ebm - eam)
            wp = ecp  # the e^{lam c} factors, folded in once
            wm = (e_ep * ecm) >> bits
            for m in range(coef.shape[1] - 1):
                if m:
                    pb = (pb * beta) >> bits
                    pb = pb // m
                    pa = (pa * alpha) >> bits
                    pa = pa // m
                    e_plus = 2 * (((pb * ebp) >> bits) - ((pa * eap) >> bits)) - 2 * e_plus
                    e_minus = -2 * (((pb * ebm) >> bits) - ((pa * eam) >> bits)) + 2 * e_minus
                k = coef[:, m + 1]
                if k.any():
                    acc += int(np.sum(k * (((wp * e_plus) >> bits) - ((wm * e_minus) >> bits))))
        total = (acc * self.e_minus_half_s) >> bits
        return Fraction(total, one * 4**self.n)


def loss_profile_l1(a, eps_prime) -> np.ndarray:
    """``delta(eps')`` of an l1 release with per-coordinate loss parameters ``a``.

    ``a``: a sequence of non-negative numbers (floats or fractions), one per
    coordinate, ``a_i = t_i / b_i`` (see :func:`profile_groups`); equal values
    are grouped, so many coordinates with a few distinct values are cheap.
    ``eps_prime``: a number or an array. Returns an array of the same shape.
    Exact up to the final rounding to float (closed form, evaluated with
    mpmath at a precision that covers the cancellation).
    """
    e = _levels(eps_prime)
    prof = _L1Profile(a)
    out = np.array([prof.delta(float(x)) for x in e.ravel()], dtype=np.float64)
    return out.reshape(e.shape)


# --------------------------------------------------------------------------
# lattice releases: the exact law of integer noise


class ProfileTooLarge(Exception):
    """The loss law of a lattice release has too many atoms to sum in reasonable time.

    Raised instead of returning an approximate figure: the caller should say the
    profile was not computed.
    """


#: The most atoms one convolved loss law may have (coordinates whose spacings
#: are far from commensurate multiply their supports).
MAX_ATOMS = 2_000_000
#: The most multiply-adds all the convolutions of one profile may take (a few seconds on one core).
MAX_WORK = 1_000_000_000
#: The unit roundoff of float64.
_U = 2.0**-53
#: The running sums are kept in numpy's extended type and this is its unit roundoff
#: (2^-64 on x86-64 Linux; where ``longdouble`` is plain double it is ``_U`` and the bound says so).
_U_EXT = float(np.finfo(np.longdouble).eps) / 2


def _spacing_gcd(a: Fraction, b: Fraction) -> Fraction:
    """The largest rational ``g`` of which both ``a`` and ``b`` are integer multiples."""
    return Fraction(math.gcd(a.numerator * b.denominator, b.numerator * a.denominator), a.denominator * b.denominator)


class _Block:
    """The law of a sum of coordinate losses on one lattice: ``L = top - 2 g k`` with
    probability ``p[k]``, ``k = 0 .. len(p) - 1``.

    ``err``: a bound on every ``p[k]``'s relative error, in units of the
    float64 roundoff ``u`` (first order: the errors of the inputs add, and a
    sum of ``n`` positive terms adds at most ``n``).
    """

    __slots__ = ("top", "g", "p", "err")

    def __init__(self, top: Fraction, g: Fraction, p: np.ndarray, err: float):
        self.top, self.g, self.p, self.err = top, g, p, err

    @classmethod
    def coordinate(cls, t: int, lam: Fraction) -> _Block:
        """One coordinate: ``y ~ DLap(e^{-lam})`` and a neighbour ``t`` units away.

        ``L = lam (|y - t| - |y|)`` is ``lam (t - 2k)`` for ``y`` clamped to
        ``k`` in ``0 .. t``: ``1/(1+alpha)`` at ``k = 0`` (all ``y <= 0``),
        ``alpha^t/(1+alpha)`` at ``k = t`` (all ``y >= t``) and the point
        mass ``(1-alpha)/(1+alpha) alpha^k`` in between.
        """
        if t + 1 > MAX_ATOMS:
            raise ProfileTooLarge(f"a coordinate moving by {t} lattice units has more than {MAX_ATOMS} loss values")
        lf = float(lam)
        k = np.arange(t + 1, dtype=np.float64)
        p = np.exp(-lf * k)  # alpha^k
        p[1:t] *= -math.expm1(-lf)  # (1 - alpha) in between
        p /= 1.0 + math.exp(-lf)
        # lam rounds to float (relative u), so lam k is off by at most lam t u; exp, the
        # factor and the division add a few roundings.
        return cls(lam * t, lam, p, 2.0 * float(lam * t) + 5.0)

    def merge(self, other: _Block) -> _Block:
        """The law of the sum of two independent blocks, on their common lattice (direct convolution)."""
        g = _spacing_gcd(self.g, other.g)
        small, big = sorted((self, other), key=lambda b: len(b.p))
        ms, mb = int(small.g / g), int(big.g / g)
        span = (len(big.p) - 1) * mb + 1
        out = np.zeros((len(small.p) - 1) * ms + span)
        tmp = np.empty(len(big.p))
        # Adding scaled copies of the larger law keeps every term positive, so each atom's
        # relative error is at most the number of terms it sums (numpy's own convolution
        # is not used: its BLAS dot products thrash on a shared machine).
        for j, pj in enumerate(small.p):
            if pj:
                np.multiply(big.p, pj, out=tmp)
                view = out[j * ms: j * ms + span: mb]
                view += tmp
        return _Block(self.top + other.top, g, out, self.err + other.err + len(small.p) + 1)

    def merged_size(self, other: _Block) -> int:
        g = _spacing_gcd(self.g, other.g)
        return (len(self.p) - 1) * int(self.g / g) + (len(other.p) - 1) * int(other.g / g) + 1


def _lattice_coords(coords) -> list[tuple[int, Fraction]]:
    """``(t, lam)`` pairs checked (``t`` a non-negative integer, ``lam`` exact), those with ``t = 0`` left out."""
    out = []
    for i, item in enumerate(coords):
        try:
            t, lam = item
        except (TypeError, ValueError):
            raise ValueError(f"coords[{i}] must be a pair (t, lam), got {item!r}") from None
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
            raise ValueError(f"coords[{i}]: t must be a non-negative integer, got {t!r}")
        lam = as_level(lam, f"coords[{i}] lam")
        if t:
            out.append((int(t), lam))
    return out


def _reduce(blocks: list[_Block]) -> tuple[list[_Block], int]:
    """Convolve blocks until two are left, cheapest first; returns them and the work done.

    The candidates are the two smallest blocks on each lattice (their
    supports add) and, across lattices, the smallest block of each; the
    merge with the fewest multiply-adds is done first, so that the two
    largest blocks are the ones left for the final sum.
    """
    work = 0
    while len(blocks) > 2:
        by_g: dict[Fraction, list[int]] = {}
        for i in sorted(range(len(blocks)), key=lambda i: len(blocks[i].p)):
            by_g.setdefault(blocks[i].g, []).append(i)
        pairs = [ix[:2] for ix in by_g.values() if len(ix) > 1]
        pairs += list(itertools.combinations([ix[0] for ix in by_g.values()], 2))
        costs = sorted((len(blocks[i].p) * len(blocks[j].p), blocks[i].merged_size(blocks[j]), i, j) for i, j in pairs)
        fits = [c for c in costs if c[1] <= MAX_ATOMS]
        if not fits:
            raise ProfileTooLarge(
                f"the loss law would have {costs[0][1]} atoms (at most {MAX_ATOMS}): the coordinates' "
                "levels share no fine enough common spacing"
            )
        cost, _, i, j = fits[0]
        work += cost
        if work > MAX_WORK:
            raise ProfileTooLarge(f"the convolutions would take more than {MAX_WORK} multiply-adds")
        merged = blocks[i].merge(blocks[j])
        blocks = [b for k, b in enumerate(blocks) if k not in (i, j)] + [merged]
    return blocks, work


class LatticeProfile:
    """The privacy-loss profile of a lattice release, for one worst-case neighbour.

    ``coords``: ``(t_i, lam_i)`` for each coordinate that moves: its noise is
    ``DLap(e^{-lam_i})`` (``lam_i = eps / w_i``, an exact rational) and the
    neighbour moves its answer by ``t_i`` lattice units. Coordinates with
    ``t_i = 0`` carry no loss. The release is exactly ``S``-DP,
    ``S = sum lam_i t_i``, and :meth:`deltas` gives ``delta(eps')`` below that.

    How. Coordinate ``i``'s loss takes the ``t_i + 1`` values
    ``lam_i (t_i - 2k)``, ``k = 0 .. t_i``, with the probabilities of
    :meth:`_Block.coordinate`. (As for Laplace noise, each is
    ``e^{-lam t/2} e^{l/2}`` times a symmetric measure: end atoms
    ``1/(1+alpha)``, interior atoms ``(1-alpha)/(1+alpha)``.) Losses with
    spacings ``lam_i`` and ``lam_j`` both live on the lattice of their
    largest common spacing (a rational always has one), so the law of a
    sum is a convolution of arrays of positive float64 probabilities. The
    coordinates are convolved down to two independent blocks ``A`` and
    ``B`` (:func:`_reduce`); then

        delta(eps') = sum_a P_A(a) D_B(eps' - a),   D_B(x) = T(x) - e^{x - b_c} W(x),

    where ``T(x) = P(B > x)`` is a running sum and
    ``W(x) = sum_{b > x} P_B(b) e^{b_c - b}``, ``b_c`` the smallest atom of
    ``B`` above ``x``, a one-step recursion (``W`` gains one atom and is
    multiplied by ``e^{-2 g_B}`` per lattice step). Every quantity stays in
    ``[0, 1]``, so no level, however large, overflows. The two blocks never
    need a common lattice: a count and a sum with unrelated weights cost the
    sum of their supports, not the product.

    Accuracy: the probabilities are float64 sums of positive terms, so
    their relative errors are bounded by the number of terms summed; the
    running sums ``T`` and ``W``, the subtraction and the final sum over
    ``A`` are carried in numpy's extended type (a 64-bit mantissa on x86-64
    Linux). :meth:`error` is the resulting first-order bound on the absolute
    error of ``delta``: about ``5e-15`` for a count, a histogram, a count
    with a sum moving ``10^4`` units, or two such sums (none of which needs a
    convolution); ``1e-12`` for three such sums and ``5e-12`` for five and a
    count (a convolution with ``10^4`` atoms may add ``10^4`` roundings to
    each atom). Errors measured against 30- and 50-digit sums are at the
    last bit of a float64.

    Raises :class:`ProfileTooLarge` when a convolved law would exceed
    :data:`MAX_ATOMS` atoms or the convolutions :data:`MAX_WORK` multiply-adds.
    """

    def __init__(self, coords):
        pairs = _lattice_coords(coords)
        self.top = sum((lam * t for t, lam in pairs), Fraction(0))
        blocks, self.work = _reduce([_Block.coordinate(t, lam) for t, lam in pairs])
        while len(blocks) < 2:
            blocks.append(_Block(Fraction(0), Fraction(1), np.ones(1), 0.0))  # no loss
        outer, inner = sorted(blocks, key=lambda b: len(b.p))
        self._outer_loss = float(outer.top) - 2.0 * float(outer.g) * np.arange(len(outer.p))
        self._outer_p = outer.p.astype(np.longdouble)
        self._inner_top, self._inner_2g = float(inner.top), 2.0 * float(inner.g)
        n = len(inner.p)
        p = inner.p.astype(np.longdouble)
        self._tail = np.cumsum(p)  # T with c atoms above x: _tail[c - 1]
        ratio = np.exp(-np.longdouble(self._inner_2g))
        self._tilted = signal.lfilter(np.ones(1, dtype=np.longdouble), np.array([1, -ratio]), p)  # W: _tilted[c - 1]
        self._n_inner = n
        # float64: the probabilities, and e^{x - b_c} (a few roundings); extended: the running
        # sums (at most n terms each), the subtraction and the final sum over the outer atoms
        self._err = outer.err + inner.err + 8
        self._err_ext = 3 * n + len(outer.p) + 8

    def error(self, eps_prime=0.0) -> float:
        """A bound on the absolute error of :meth:`deltas` at these ``eps'`` (see the class docstring)."""
        e = _levels(eps_prime)
        reach = float(self.top) + (float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)))
        return (self._err + 8.0 * reach) * _U + self._err_ext * _U_EXT

    def deltas(self, eps_prime) -> np.ndarray:
        """``delta(eps')`` at a number or an array of ``eps'``; an array of the same shape."""
        e = _levels(eps_prime)
        out = np.array([self._delta(float(x)) for x in e.ravel()], dtype=np.float64)
        return out.reshape(e.shape)

    def _delta(self, eps_prime: float) -> float:
        if eps_prime == math.inf or (eps_prime > -math.inf and Fraction(eps_prime) >= self.top):
            return 0.0  # the loss never exceeds S: the release is S-DP
        if eps_prime == -math.inf or Fraction(eps_prime) <= -self.top:
            return -math.expm1(eps_prime)  # the loss is at least -S: nothing is cut
        x = eps_prime - self._outer_loss  # the inner block must exceed x
        # atoms of the inner block above x: k < (top - x) / (2 g)
        count = np.clip(np.ceil((self._inner_top - x) / self._inner_2g), 0, self._n_inner).astype(np.int64)
        live = count > 0
        last = count[live] - 1
        gap = x[live] - (self._inner_top - self._inner_2g * last)  # x - b_c < 0
        inner = self._tail[last] - np.exp(np.minimum(gap, 0.0)) * self._tilted[last]
        total = float(np.dot(self._outer_p[live], np.maximum(inner, 0.0)))
        return min(max(total, 0.0), 1.0)


def loss_profile_lattice(coords, eps_prime) -> np.ndarray:
    """``delta(eps')`` of a lattice release for one worst case (see :class:`LatticeProfile`).

    ``coords``: ``(t_i, lam_i)`` per coordinate that moves (``t_i`` lattice
    units, noise ``DLap(e^{-lam_i})``, ``lam_i`` exact). ``eps_prime``: a
    number or an array. Absolute error below :meth:`LatticeProfile.error`;
    raises :class:`ProfileTooLarge` when the law is too large to sum.
    """
    return LatticeProfile(coords).deltas(eps_prime)


# --------------------------------------------------------------------------
# l2: deterministic quadrature


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(80)


def _l2_inner(r: float, dim: int, eps: float, ep: float) -> float:
    """``int_0^{theta*} sin^{dim-2}(th) (1 - e^{ep - L(r, th)}) dth / norm`` at radius ``r``.

    ``L = sqrt(r^2 + 2 r eps cos th + eps^2) - r`` falls as ``th`` grows, so
    the positive part is the interval ``[0, theta*]`` where ``L >= ep``.
    """
    if r == 0.0:
        return -math.expm1(ep - eps) if eps > ep else 0.0
    cos_star = ((ep + r) ** 2 - r * r - eps * eps) / (2.0 * r * eps)
    if cos_star >= 1.0:
        return 0.0
    top = math.pi if cos_star <= -1.0 else math.acos(cos_star)
    th = 0.5 * top * (_GL_NODES + 1.0)
    w = 0.5 * top * _GL_WEIGHTS
    loss = np.sqrt(np.maximum(r * r + 2.0 * r * eps * np.cos(th) + eps * eps, 0.0)) - r
    f = -np.expm1(ep - loss)
    if dim > 2:
        f = f * np.sin(th) ** (dim - 2)
    # The angle's density is sin^{dim-2} / B(1/2, (dim-1)/2) on [0, pi].
    return float(np.dot(w, f)) / special.beta(0.5, (dim - 1) / 2.0)


def loss_profile_l2(dim, eps, eps_prime, tol: float = 1e-10) -> np.ndarray:
    """``delta(eps')`` of an l2 release at level ``eps`` in ``dim`` dimensions.

    The noise has density proportional to ``exp(-eps ||v|| / Delta)`` and the
    neighbour is shifted by a vector of length ``Delta``. In units of
    ``Delta/eps`` the noise radius is ``R ~ Gamma(dim, 1)`` and the loss is
    ``sqrt(R^2 + 2 R eps cos(th) + eps^2) - R``. ``delta`` is a 2-D integral:
    the angle by 80-point Gauss-Legendre on the interval where the loss
    exceeds ``eps'`` (the integrand is smooth there), the radius by adaptive
    Gauss-Kronrod (scipy ``quad``) split where the angle interval stops being
    the whole half-circle. The absolute error is below ``tol`` (default
    1e-10 as estimated by quad; 200 angle points instead of 80 change results by
    under 1e-14; checked against Monte Carlo in the tests). ``dim = 1`` is the
    Laplace case, computed exactly.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    dim = int(dim)
    level = float(_exact("eps", eps))
    if level <= 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    e = _levels(eps_prime)
    if dim == 1:
        return loss_profile_l1([level], e)
    out = np.empty(e.size)
    for idx, ep in enumerate(e.ravel()):
        ep = float(ep)
        if ep >= level:
            out[idx] = 0.0
            continue
        if ep <= -level:
            out[idx] = -math.expm1(ep)  # L >= -eps everywhere
            continue
        r0 = (level - ep) / 2.0  # below r0 every angle has L >= ep

        def f(r, ep=ep):
            if r <= 0:
                return 0.0
            return _l2_inner(r, dim, level, ep) * math.exp((dim - 1) * math.log(r) - r - math.lgamma(dim))

        total = 0.0
        edges = [0.0, r0, level, max(level, r0) + 40.0 + 2.0 * dim, np.inf]
        edges = sorted(set(edges))
        for lo, hi in itertools.pairwise(edges):
            val, _ = integrate.quad(f, lo, hi, epsabs=tol / 8, epsrel=1e-12, limit=400)
            total += val
        out[idx] = min(max(total, 0.0), 1.0)
    return out.reshape(e.shape)


# --------------------------------------------------------------------------
# a chart


def profile_chart_points(a, eps, points: int = 60) -> list[tuple[float, float]]:
    """``(eps', delta(eps'))`` for ``eps'`` from 0 to ``eps``, for a chart.

    The grid is a cosine spacing (denser near both ends, where the curve
    bends most). ``a``: the release's loss parameters (:func:`profile_groups`
    at level ``eps``).
    """
    level = float(_exact("eps", eps))
    if level <= 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise ValueError(f"points must be an integer of at least 2, got {points!r}")
    grid = level * 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, points)))
    grid[0], grid[-1] = 0.0, level
    prof = _L1Profile(a)
    return [(float(x), prof.delta(float(x))) for x in grid]
