"""Random numbers from the operating system's cryptographically secure generator.

Noise, and anything that orders or samples a release (docs/mathematics.md,
"Randomness"), is drawn from the operating system's random bits
(``os.urandom``), never from a seeded pseudo-random generator: someone who
learns a seed, or enough outputs to recover one, must not be able to compute
the noise. :class:`OSRandom` turns those bits into the few distributions the
float path (``releases.engine.mechanism``) and the microdata row shuffle
(``market.catalog.microdata``) need, vectorised with numpy:

* :meth:`~OSRandom.random`: uniforms ``k 2^-53`` with ``k`` 53 random bits, as
  numpy's ``Generator.random``;
* :meth:`~OSRandom.laplace`: numpy's own formula, from one such uniform
  (``U = 0`` redrawn), so ``bench/float_delta.py``'s enumeration of its
  outputs holds for it bit for bit;
* :meth:`~OSRandom.standard_exponential`, :meth:`~OSRandom.standard_normal`,
  :meth:`~OSRandom.gamma`, :meth:`~OSRandom.poisson`: the inverse distribution
  function of a uniform in ``(0, 1)`` (scipy's ``ndtri``, ``gammaincinv``,
  ``pdtrik``-based ``poisson.ppf``);
* :meth:`~OSRandom.permutation`: an exactly uniform permutation, by
  Fisher-Yates with unbiased bounded integers (masked rejection: a draw above
  the bound is thrown away, never folded back with a modulo).

It has no seed and no way to be given one: :func:`new_source` is the product's
only way to make one. Tests hand the transforms a deterministic bit source
(``OSRandom(words=...)``) or pass a seeded ``numpy.random.Generator`` to the
functions that take an ``rng`` (it has the same methods). This module never
imports Django.
"""

from __future__ import annotations

import math
import os

import numpy as np
from scipy import special, stats

__all__ = ["OSRandom", "new_source", "os_words"]

_TWO_53 = 2.0**-53


def os_words(n: int) -> np.ndarray:
    """``n`` 64-bit words of the operating system's random bits (``os.urandom``)."""
    return np.frombuffer(os.urandom(8 * int(n)), dtype="<u8").astype(np.uint64, copy=False)


def _count(size) -> tuple[int, tuple[int, ...] | None]:
    if size is None:
        return 1, None
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise ValueError(f"size must not be negative, got {size!r}")
    return int(np.prod(shape, dtype=np.int64)), shape


def _shaped(flat: np.ndarray, shape):
    return flat[0] if shape is None else flat.reshape(shape)


class OSRandom:
    """The distributions the release code draws, from the operating system's random bits.

    ``words``: for tests only, a function ``n -> n uint64 words`` replacing
    :func:`os_words` (a deterministic source makes the transforms testable).
    """

    def __init__(self, words=None):
        self._words = os_words if words is None else words

    # -- bits and uniforms ---------------------------------------------------

    def _uint64(self, n: int) -> np.ndarray:
        w = np.asarray(self._words(int(n)), dtype=np.uint64)
        if w.shape != (int(n),):
            raise ValueError(f"the bit source gave {w.shape} words, expected ({n},)")
        return w

    def _units(self, n: int) -> np.ndarray:
        """``n`` integers ``k`` in ``[0, 2^53)``, each 53 random bits."""
        return (self._uint64(n) >> np.uint64(11)).astype(np.float64)

    def random(self, size=None, out=None):
        """Uniforms ``k 2^-53`` on ``[0, 1)`` (``out``: a float64 array to fill, as numpy's)."""
        if out is not None:
            out[...] = self._units(out.size).reshape(out.shape) * _TWO_53
            return out
        n, shape = _count(size)
        return _shaped(self._units(n) * _TWO_53, shape)

    def _positive_units(self, n: int) -> np.ndarray:
        """``n`` integers in ``[1, 2^53)``: 53 random bits, a zero redrawn."""
        k = self._units(n)
        while True:
            zero = np.flatnonzero(k == 0.0)
            if not zero.size:
                return k
            k[zero] = self._units(zero.size)

    def _open(self, n: int) -> np.ndarray:
        """Uniforms ``k 2^-53`` in ``(0, 1)``: every inverse distribution function is finite there."""
        return self._positive_units(n) * _TWO_53

    # -- distributions -------------------------------------------------------

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """Laplace(``loc``, ``scale``) by numpy's formula: ``U`` in ``(0, 1)``, then
        ``loc - scale log(2 - U - U)`` if ``U >= 1/2``, else ``loc + scale log(U + U)``."""
        n, shape = _count(size)
        # math.log (the C library's, as numpy's sampler calls): numpy's vectorised log may differ
        # in the last bit, and the enumeration of bench/float_delta.py is of this formula exactly
        log = math.log
        out = np.array([-log(2.0 - u - u) if u >= 0.5 else log(u + u) for u in self._open(n).tolist()])
        return _shaped(np.add(loc, np.multiply(scale, out)), shape)

    def standard_exponential(self, size=None):
        """Exponential of mean 1: ``-log(1 - U)``, ``U`` on ``[0, 1)``."""
        n, shape = _count(size)
        return _shaped(-np.log1p(-(self._units(n) * _TWO_53)), shape)

    def exponential(self, scale=1.0, size=None):
        return np.multiply(self.standard_exponential(size), scale)

    def standard_normal(self, size=None):
        """Standard normal: the inverse normal distribution function (``scipy.special.ndtri``) of ``U``."""
        n, shape = _count(size)
        return _shaped(special.ndtri(self._open(n)), shape)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return np.add(loc, np.multiply(scale, self.standard_normal(size)))

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma(``shape``, ``scale``): ``scale`` times the inverse regularised incomplete gamma of ``U``."""
        if not np.all(np.asarray(shape) > 0):
            raise ValueError(f"gamma's shape must be positive, got {shape!r}")
        n, dims = _count(size)
        return _shaped(special.gammaincinv(shape, self._open(n)) * scale, dims)

    def poisson(self, lam=1.0, size=None):
        """Poisson(``lam``): the smallest ``k`` whose distribution function reaches ``U``."""
        if not np.all(np.asarray(lam) >= 0):
            raise ValueError(f"poisson's mean must not be negative, got {lam!r}")
        n, shape = _count(size)
        k = stats.poisson.ppf(self._open(n), lam).astype(np.int64)
        return _shaped(k, shape)

    # -- integers and permutations -------------------------------------------

    def below(self, bounds) -> np.ndarray:
        """One integer uniform on ``[0, b)`` for each ``b`` of ``bounds`` (positive, below 2^63),
        exactly: 64 random bits masked to the smallest power of two that holds ``b - 1``,
        a draw at or above ``b`` thrown away and drawn again (fewer than 2 draws each on average)."""
        b = np.asarray(bounds, dtype=np.int64).reshape(-1)
        if b.size and (b.min() < 1):
            raise ValueError("every bound must be a positive integer")
        mask = (b - 1).astype(np.uint64)
        for shift in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(shift)
        out = np.empty(b.size, dtype=np.int64)
        todo = np.arange(b.size)
        while todo.size:
            draw = self._uint64(todo.size) & mask[todo]
            ok = draw < b[todo].astype(np.uint64)
            out[todo[ok]] = draw[ok].astype(np.int64)
            todo = todo[~ok]
        return out

    def permutation(self, n) -> np.ndarray:
        """A uniformly random permutation of ``0 .. n - 1`` (or of an array's entries), by
        Fisher-Yates: for ``i`` from ``n - 1`` down to 1, swap entry ``i`` with entry ``j``,
        ``j`` uniform on ``[0, i]``. Each of the ``n!`` orders has probability exactly ``1/n!``."""
        items = np.arange(int(n)) if np.ndim(n) == 0 else np.array(n, copy=True)
        size = len(items)
        if size < 2:
            return items
        js = self.below(np.arange(size, 1, -1)).tolist()  # j for i = size - 1, ..., 1
        order = list(range(size))
        i = size - 1
        for j in js:
            order[i], order[j] = order[j], order[i]
            i -= 1
        return items[np.asarray(order, dtype=np.int64)]


def new_source() -> OSRandom:
    """The product's source of noise and of secret orders: the operating system's random bits."""
    return OSRandom()
