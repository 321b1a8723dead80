"""Rigorous binary bounds on ``e^{-x}`` and ``1 - e^{-x}`` for rational ``x``, with integers only.

A rational ``x`` is passed as two integers ``p, q`` (``x = p / q``, not
necessarily reduced).

The lattice path (:mod:`releases.engine.lattice`) flips coins whose probability is a
fixed number of the levels, such as ``e^{-(hi-lo)} ((1-e^{-lo})/(1-e^{-hi}))^2``.
Such a number is never rounded to a float. It is bracketed: an
:class:`Interval` holds integers ``lo <= hi`` and an exponent ``e`` with
``lo 2^e <= value <= hi 2^e``, and every operation rounds outwards (the lower
end down, the upper end up), so the bracket always contains the exact value.
The bracket can be made as narrow as wanted by asking for more ``bits``; a
coin compares a uniform number drawn bit by bit with it (see
``releases.engine.lattice._Coin``).

Only positive numbers are handled, and the only subtraction is inside the two
primitives (``1 - e^{-x}`` is summed from its own series when ``x`` is small),
so relative precision is kept however small the levels are: products,
quotients and sums of positive brackets each add at most ``2^{1-bits}`` to the
relative width.

Both primitives come from alternating series whose terms shrink from the
start, ``e^{-f} = sum (-f)^k / k!`` and ``(1 - e^{-f}) / f = sum (-f)^k /
(k+1)!`` for ``0 <= f <= 1``: two consecutive partial sums, computed exactly
with integers, bracket the limit. ``e^{-x}`` for ``x > 1`` is ``(e^{-1})^n
e^{-f}`` with ``n`` whole and ``f`` the fractional part.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["Interval", "exact", "mul", "product", "div", "add", "exp_neg", "one_minus_exp_neg"]

#: Extra bits carried by every operation beyond the precision asked for.
GUARD = 8


class Interval:
    """A positive real ``v`` with ``lo * 2**e <= v <= hi * 2**e`` (integers ``0 <= lo <= hi``)."""

    __slots__ = ("lo", "hi", "e")

    def __init__(self, lo: int, hi: int, e: int):
        self.lo, self.hi, self.e = lo, hi, e

    def trimmed(self, bits: int) -> Interval:
        """The same bracket with at most ``bits + GUARD`` bits in ``hi``, rounded outwards."""
        s = self.hi.bit_length() - bits - GUARD
        if s <= 0:
            return self
        return Interval(self.lo >> s, -(-self.hi >> s), self.e + s)

    def scaled(self, bits: int) -> tuple[int, int]:
        """Integers ``(floor(lo 2^{e+bits}), ceil(hi 2^{e+bits}))``: a bracket of ``v 2^bits``."""
        s = self.e + bits
        if s >= 0:
            return self.lo << s, self.hi << s
        return self.lo >> -s, -(-self.hi >> -s)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Interval({self.lo}, {self.hi}, {self.e})"


def exact(p: int, q: int, bits: int) -> Interval:
    """A bracket of the positive rational ``p / q``, ``bits + GUARD`` bits wide."""
    s = bits + GUARD + q.bit_length() - p.bit_length() + 1
    if s >= 0:
        return Interval((p << s) // q, -(-(p << s) // q), -s)
    return Interval(p // (q << -s), -(-p // (q << -s)), -s)


def mul(a: Interval, b: Interval, bits: int) -> Interval:
    return Interval(a.lo * b.lo, a.hi * b.hi, a.e + b.e).trimmed(bits)


def product(bits: int, first: Interval, *rest: Interval) -> Interval:
    for x in rest:
        first = mul(first, x, bits)
    return first


def div(a: Interval, b: Interval, bits: int) -> Interval:
    """``a / b`` (``b.lo > 0``)."""
    s = max(0, bits + GUARD + b.hi.bit_length() - a.lo.bit_length() + 1)
    return Interval((a.lo << s) // b.hi, -(-(a.hi << s) // b.lo), a.e - b.e - s).trimmed(bits)


def add(a: Interval, b: Interval, bits: int) -> Interval:
    """``a + b``; the smaller term is rounded outwards to the larger one's last kept bit."""
    top = max(a.hi.bit_length() + a.e, b.hi.bit_length() + b.e)
    e = max(min(a.e, b.e), top - bits - 2 * GUARD)
    lo = hi = 0
    for x in (a, b):
        s = x.e - e
        if s >= 0:
            lo += x.lo << s
            hi += x.hi << s
        else:
            lo += x.lo >> -s
            hi += -(-x.hi >> -s)
    return Interval(lo, hi, e).trimmed(bits)


def _power(a: Interval, n: int, bits: int) -> Interval:
    out = None
    while n:
        if n & 1:
            out = a if out is None else mul(out, a, bits)
        n >>= 1
        if n:
            a = mul(a, a, bits)
    return out


@lru_cache(maxsize=1024)
def _alternating(p: int, q: int, j: int, bits: int) -> Interval:
    """``sum_{k>=0} (-f)^k j! / (k+j)!`` for ``f = p/q`` in ``[0, 1]`` (``j`` = 0 or 1).

    The terms alternate in sign and never grow, so the limit lies between two
    consecutive partial sums. With ``K`` terms past the first, the sums are
    exact fractions over ``q^K (K+j)!/j!``; ``K`` is the first index whose
    term is below ``2^-(bits+GUARD)``.
    """
    if p == 0:
        return Interval(1, 1, 0)
    target = bits + GUARD
    # K: the first index whose term is below 2^-target, found from bit lengths:
    # (p/q)^k j!/(k+j)! <= 2^(k (len p - len q + 1)) / 2^(sum_{i<=k} (len(i+j) - 1)).
    step, k, log_term = p.bit_length() - q.bit_length() + 1, 0, 0
    while log_term > -target or k == 0:
        k += 1
        log_term += step - ((k + j).bit_length() - 1)
    den = q**k
    for i in range(1 + j, k + j + 1):
        den *= i
    term = total = den
    for i in range(1, k + 1):
        term = term * -p // (q * (i + j))  # exact: (-p)^i q^{K-i} (K+j)!/(i+j)!
        total += term
    low, high = sorted((total, total - term))
    s = target + 2
    return Interval((low << s) // den, -(-(high << s) // den), -s)


@lru_cache(maxsize=4096)
def exp_neg(p: int, q: int, bits: int) -> Interval:
    """A bracket of ``e^{-p/q}`` for integers ``p >= 0``, ``q > 0``, relative width about ``2^-bits``."""
    n, r = divmod(p, q)
    frac = _alternating(r, q, 0, bits)
    if n == 0:
        return frac
    extra = bits + n.bit_length() + GUARD  # (1 + d)^n stays within 2^-bits of 1
    whole = _power(_alternating(1, 1, 0, extra), n, extra)
    return mul(whole, frac, bits)


@lru_cache(maxsize=4096)
def one_minus_exp_neg(p: int, q: int, bits: int) -> Interval:
    """A bracket of ``1 - e^{-p/q}`` for integers ``p, q > 0``, relative width about ``2^-bits``."""
    if p <= q:  # x (1 - x/2 + x^2/6 - ...): no cancellation however small x = p/q is
        return mul(exact(p, q, bits), _alternating(p, q, 1, bits), bits)
    e = exp_neg(p, q, bits + 2)  # at most e^{-1}, so 1 - e loses under 2 bits
    if e.hi.bit_length() + e.e <= -(bits + GUARD):  # e^{-x} < 2^-(bits+GUARD)
        b = bits + GUARD
        return Interval((1 << b) - 1, 1 << b, -b)
    one = 1 << -e.e
    return Interval(one - e.hi, one - e.lo, e.e).trimmed(bits)
