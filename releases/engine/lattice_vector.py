"""Discrete Laplace draws for many coordinates at once, exactly, in integer numpy: the batched
form of :mod:`releases.engine.lattice`'s scalar samplers for levels below 1/2.

``DLap(e^{-s/t})`` for a level ``s/t < 1/2`` is Canonne, Kamath and Steinke's
Algorithm 2, as :func:`releases.engine.lattice._dlap` draws it one coordinate
at a time:

1. ``U`` uniform on ``[0, t)``, kept with probability ``e^{-U/t}`` (their
   Algorithm 1: for ``k = 1, 2, ...`` a uniform below ``t k``; the first ``k``
   whose uniform is at least ``U`` ends it, and the coin is heads iff that
   ``k`` is odd), else drawn again;
2. ``V`` with ``P(V >= j) = e^{-j}``: the number of ``j >= 1`` with
   ``U' < e^{-j}`` for one more uniform ``U'``, compared with brackets of
   ``e^{-j}`` as :func:`releases.engine.lattice._units` does (:func:`units`);
3. ``Y = floor((U + t V) / s)``, a sign bit ``B``; ``B = 1`` with ``Y = 0``
   ("-0") is refused and the coordinate drawn again from step 1.

Each step is done for every coordinate still undecided at once: the same
decisions, in integer comparisons only, so the law is the scalar sampler's
exactly (the bits are read in another order, so a seeded source gives other
values). A uniform below ``n`` takes the ``bit_length(n - 1)`` low bits of a
64-bit word and throws away a draw at or above ``n`` (never folded back).

The words come from the caller's ``rng`` (``getrandbits``): the operating
system's generator in the product, read 64 bits a word in one call per batch.
Levels whose denominators or numerators reach ``2^31`` are left to the scalar
sampler (:data:`LIMIT`). This module never imports Django.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LIMIT", "dlap", "words"]

#: The vectorised draw takes levels ``s/t`` with ``s, t < LIMIT`` (every product below stays in int64).
LIMIT = 1 << 31


def words(rng, n: int) -> np.ndarray:
    """``n`` uniform 64-bit words: ``rng.u64(n)`` for a buffer that has it, else
    ``rng.getrandbits(64 n)`` cut into words (each bit used once)."""
    if n <= 0:
        return np.empty(0, dtype=np.uint64)
    if hasattr(rng, "u64"):  # a buffer (releases.engine.lattice._Bits): its own block of words
        return rng.u64(n)
    raw = rng.getrandbits(64 * n).to_bytes(8 * n, "little")
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


def _masks(bounds: np.ndarray) -> np.ndarray:
    """The smallest ``2^b - 1`` at least ``bound - 1``, for each bound."""
    mask = (bounds - 1).astype(np.uint64)
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(shift)
    return mask


def below(rng, bounds: np.ndarray) -> np.ndarray:
    """A uniform integer on ``[0, b)`` for each ``b`` of ``bounds`` (int64, ``1 <= b < 2^62``),
    by masked rejection."""
    mask = _masks(bounds)
    limit = bounds.astype(np.uint64)
    out = np.empty(bounds.size, dtype=np.int64)
    todo = np.arange(bounds.size)
    while todo.size:
        draw = words(rng, todo.size) & mask[todo]
        ok = draw < limit[todo]
        out[todo[ok]] = draw[ok].astype(np.int64)
        todo = todo[~ok]
    return out


def bern_exp(rng, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``Bernoulli(e^{-num/den})`` for each pair, ``0 <= num <= den`` (CKS Algorithm 1)."""
    heads = np.empty(num.size, dtype=bool)
    todo = np.arange(num.size)
    k = 1
    while todo.size:
        ends = below(rng, den[todo] * k) >= num[todo]
        heads[todo[ends]] = k % 2 == 1
        todo = todo[~ends]
        k += 1
    return heads


def units(rng, n: int, brackets: list[tuple[int, int]], finish) -> np.ndarray:
    """``n`` draws of ``V >= 0`` with ``P(V >= j) = e^{-j}``, as :func:`releases.engine.lattice._units`
    draws one: ``V`` is the number of ``j >= 1`` with ``U < e^{-j}`` for one uniform ``U``, whose
    first 64 bits ``u`` are compared with the 64-bit brackets ``(lo_j, hi_j)`` of ``e^{-j}``
    (``brackets[j]``, ``j = 1 .. J``): ``c = #{j: u < lo_j}``, and ``V = c`` when ``u >= hi_{c+1}``.
    The rare ``u`` inside a bracket (or past the table) are finished by ``finish(u, c + 1)``,
    which reads more bits of the same ``U``."""
    lo = np.array([b[0] for b in brackets[1:]][::-1], dtype=np.uint64)  # ascending: lo_J .. lo_1
    hi = np.array([b[1] for b in brackets[1:]] + [0], dtype=np.uint64)  # hi_1 .. hi_J, then past the table
    size = lo.size
    u = words(rng, n)
    c = size - np.searchsorted(lo, u, side="right")
    open_ = (u < hi[c]) | (c == size)
    out = c.astype(np.int64)
    for i in np.flatnonzero(open_).tolist():
        out[i] = finish(int(u[i]), int(c[i]) + 1)
    return out


def dlap(rng, s: np.ndarray, t: np.ndarray, brackets, finish) -> np.ndarray:
    """``DLap(e^{-s_i/t_i})`` for each coordinate (int64 arrays, ``0 < 2 s < t < LIMIT``);
    ``brackets`` and ``finish`` as for :func:`units`."""
    out = np.empty(s.size, dtype=np.int64)
    todo = np.arange(s.size)
    while todo.size:
        ts, ss = t[todo], s[todo]
        u = below(rng, ts)
        kept = bern_exp(rng, u, ts)
        idx, u, ts, ss = todo[kept], u[kept], ts[kept], ss[kept]
        y = (u + ts * units(rng, idx.size, brackets, finish)) // ss
        negative = _signs(rng, idx.size)
        refused = negative & (y == 0)
        done = ~refused
        out[idx[done]] = np.where(negative[done], -y[done], y[done])
        todo = np.concatenate([todo[~kept], idx[refused]])
    return out


def _signs(rng, n: int) -> np.ndarray:
    """``n`` fair bits as booleans."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    return np.unpackbits(words(rng, -(-n // 64)).view(np.uint8))[:n].astype(bool)
