"""What the exact lattice path (``releases.engine.lattice``) takes in: levels as exact
rationals within the range whose noise fits in int64, integer noise vectors, and its
sources of random bits (a keystream keyed by the operating system's generator in the product,
a seeded generator's in tests). Pure: no Django."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from numbers import Integral

import numpy as np

from .keystream import KeyStream

#: Levels below this are refused: the noise would no longer fit in an int64. (A listing's
#: smallest per-coordinate level is eps 0.0001 over ~40 groups of up to 2e8 steps: about 1e-14.)
MIN_LEVEL = Fraction(1, 10**15)
#: Levels above this are refused (the noise is then 0 with overwhelming probability anyway).
MAX_LEVEL = Fraction(10**6)

_INT64 = 2**63 - 1


def new_rng() -> KeyStream:
    """The product's bit source: ChaCha20's keystream under a key from the operating system's
    cryptographic generator (:mod:`releases.engine.keystream`), one per release."""
    return KeyStream()


class GeneratorBits:
    """``getrandbits`` over a ``numpy.random.Generator`` (a test's seeded generator handed to the
    product's release code); the product itself draws from :func:`new_rng`."""

    __slots__ = ("generator",)

    def __init__(self, generator):
        self.generator = generator

    def getrandbits(self, k: int) -> int:
        if k <= 0:
            return 0
        raw = int.from_bytes(self.generator.bytes((k + 7) // 8), "little")
        return raw >> (8 * ((k + 7) // 8) - k)


# --------------------------------------------------------------------------
# exact levels and inputs


def as_level(value, name: str = "level") -> Fraction:
    """``value`` as an exact positive rational; floats (and anything inexact) are refused."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an exact number, got {value!r}")
    if isinstance(value, Fraction):
        out = value
    elif isinstance(value, Integral):
        out = Fraction(int(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be finite, got {value!r}")
        out = Fraction(value)
    elif isinstance(value, str):
        try:
            parsed = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"{name} must be a decimal number, got {value!r}") from None
        if not parsed.is_finite():
            raise ValueError(f"{name} must be finite, got {value!r}")
        out = Fraction(parsed)
    else:
        raise ValueError(
            f"{name} must be a Fraction, Decimal, int or decimal string (never a float), got {value!r}"
        )
    n, d = out.numerator, out.denominator  # integer comparisons: Fraction's own are slow
    if n <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    if n * MIN_LEVEL.denominator < d * MIN_LEVEL.numerator or n * MAX_LEVEL.denominator > d * MAX_LEVEL.numerator:
        raise ValueError(f"{name} must lie between 1e-15 and 1e6, got {value}")
    return out


def _levels(value, size: int, name: str) -> list[Fraction]:
    """One exact level per coordinate: a scalar for all, or a sequence of ``size``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return [as_level(value, name)] * size
    items = list(np.asarray(value, dtype=object).reshape(-1)) if isinstance(value, np.ndarray) else list(value)
    if len(items) != size:
        raise ValueError(f"{name} has {len(items)} levels for {size} coordinates")
    by_id: dict = {}  # the items stay alive in ``items``, so their ids are theirs
    by_value: dict = {}
    out = []
    for item in items:
        level = by_id.get(id(item))
        if level is None:
            level = as_level(item, name)
            level = by_id[id(item)] = by_value.setdefault(level, level)
        out.append(level)
    return out


def _noise(name: str, noise) -> list[int]:
    """Integer noise as Python ints; floats (even whole ones) and non-numbers are refused."""
    arr = np.asarray(noise)
    if arr.dtype == object:
        items = arr.reshape(-1).tolist()
        if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in items):
            raise ValueError(f"{name} must be integers")
        values = [int(v) for v in items]
    elif arr.dtype.kind in "iu":
        values = [int(v) for v in arr.reshape(-1).tolist()]
    else:
        raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim > 1:
        raise ValueError(f"{name} must be one-dimensional")
    return values


def _out(values: list[int]) -> np.ndarray:
    if any(abs(v) > _INT64 for v in values):  # pragma: no cover - levels are bounded below
        raise ValueError("the noise does not fit in int64: the level is too small")
    return np.array(values, dtype=np.int64)


def _size(size) -> int:
    if isinstance(size, bool) or not isinstance(size, Integral) or size < 0:
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    return int(size)
