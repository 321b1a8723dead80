"""Bit-report microdata on the exact lattice path: randomised response released gradually
(RAPPOR along a noise path; the gradual-release paper, section 4.1).

A listing of microdata is a table of records, each turned into ``k`` bits
``y_ij`` in {0, 1}: one-hot categories (a category column of ``c`` values is
``c`` bits, one of them set) or a Bloom filter of a string (:func:`bloom`).
Every record-bit has its own lattice noise path ``V_ij`` (unit sensitivity,
integer grid, one per-bit level ``lam``; :mod:`releases.engine.lattice`), and
the report at level ``lam`` is the bit

    ``z_ij = [y_ij + V_ij >= 1]``

(the threshold at 1/2 on the integers). With ``alpha = e^{-lam}`` and
``V ~ DLap(alpha)``, ``P(V >= 0) = 1/(1 + alpha)`` and ``P(V >= 1) =
alpha/(1 + alpha)``, so exactly

    ``P(z = 1 | y = 1) = p = 1/(1 + alpha)``,  ``P(z = 1 | y = 0) = q = alpha/(1 + alpha)``:

randomised response whose per-bit privacy loss is ``ln(p/q) = lam``. A change
of one record flips at most ``weight`` of its bits (2 per one-hot column, ``2h``
per Bloom filter with ``h`` hashes), so a listing sold at record level ``eps``
runs every bit at ``lam = eps / weight`` (an exact ``Fraction``,
:func:`bit_level`).

**Gradually.** A listing offers a fixed ascending ladder of record levels. Its
path is sampled from the top down only, and lazily: the first release draws
``V`` at the top of the ladder (:func:`sample`) and tightens it down to the
level bought (:func:`tighten`, :func:`descend`); a later purchase below the
lowest level drawn so far tightens further down, and anything above is a
lookup. Tightening from ``hi`` to ``lo`` (``a = e^{-lo}``, ``b = e^{-hi}``) is
``V_lo = V_hi + W`` with ``W`` independent of ``V_hi``: ``W = 0`` with
probability ``p0 = (b/a) ((1-a)/(1-b))^2``, else ``W ~ DLap(a)``. Every lower
report is therefore a function of ``y + V_hi`` and independent noise, so a
coalition of buyers of several levels learns no more than the highest of them.

**Exactly, and fast.** A listing of a million records of 20 bits is 20 million
coordinates, beyond the scalar sampler of :mod:`releases.engine.lattice`. Here
every draw is vectorized and still exact:

* ``|V|`` for ``V ~ DLap(alpha)`` is the number of ``j >= 1`` with ``U <
  T_j``, ``T_j = P(|V| >= j) = 2 alpha^j / (1 + alpha)``, for one uniform
  ``U``; its sign is one more random bit. The thresholds are bracketed once
  per level (:mod:`releases.engine.exact_bounds`, integers at 32 bits: ``lo_j
  <= T_j 2^32 <= hi_j``, outward rounding) until ``hi_j`` reaches 1, and
  cached. ``U``'s first 32 bits ``u`` (one ``uint32`` per coordinate) decide
  by one ``np.searchsorted``: ``c = #{j: lo_j > u}`` are certainly below, and
  if ``u >= hi_{c+1}`` every further threshold is certainly above, so ``|V| =
  c``.
* The few ``u`` that fall inside a bracket (about ``J 2^-31`` of them for a
  table of ``J`` thresholds), or below the last threshold of the table
  (``u = 0``), are finished one by one in Python: 64 more bits of the same
  ``U`` are drawn and compared with brackets 64 bits tighter, as
  :class:`releases.engine.lattice._Coin` does. An ambiguous ``U`` is never
  thrown away and redrawn (that would bias the law).
* The stay coin of :func:`tighten` is the same comparison with one
  threshold, ``p0`` ("``U < p0`` means ``W = 0``"); the coordinates that move
  draw ``W`` with :func:`sample`.

No float enters any decision: :func:`rates` and :func:`decode` use floats for
display and estimation only. The random words come from a :class:`WordSource`,
the operating system's (``os.urandom``) in the product.

**Storage.** :func:`pack_noise` stores a level's noise zigzagged into the
smallest unsigned type that holds it, split into byte planes and compressed
(zlib); :func:`pack_bits`
stores a report at one bit per record-bit. Both are lossless and together
well under a byte per record-bit and level.

This module never imports Django.
"""

from __future__ import annotations

import hashlib
import math
import os
import zlib
from fractions import Fraction
from functools import lru_cache
from itertools import pairwise
from numbers import Integral

import numpy as np

from releases.engine import exact_bounds as eb
from releases.engine.lattice import as_level

__all__ = [
    "WordSource",
    "new_source",
    "MIN_BIT_LEVEL",
    "bit_level",
    "sample",
    "tighten",
    "descend",
    "report",
    "rates",
    "decode",
    "pack_noise",
    "unpack_noise",
    "pack_bits",
    "unpack_bits",
    "bloom",
]

#: Per-bit levels below this are refused: the threshold table grows as ``22 / level``.
MIN_BIT_LEVEL = Fraction(1, 1000)

#: Bits of the first look at every uniform (one uint32 per coordinate).
WORD_BITS = 32
#: Bits added at each refinement of an undecided uniform.
MORE_BITS = 64
#: Coordinates handled at a time (bounds the temporaries of a large call).
CHUNK = 1 << 20


# --------------------------------------------------------------------------
# random words


class WordSource:
    """Uniform random words: the operating system's in the product, a test's seeded generator in tests.

    ``u32(n)`` gives ``n`` independent uniform ``uint32`` words, ``getrandbits(k)``
    a uniform integer of ``k`` bits (for the rare refinements).
    """

    __slots__ = ("_bytes",)

    def __init__(self, read_bytes):
        self._bytes = read_bytes

    @classmethod
    def system(cls) -> WordSource:
        """The product's source: ``os.urandom`` (the kernel's cryptographic generator)."""
        return cls(os.urandom)

    @classmethod
    def from_generator(cls, generator) -> WordSource:
        """Words from a numpy generator's bytes: what tests hand the product (seeded there, never here)."""
        return cls(generator.bytes)

    def u32(self, n: int) -> np.ndarray:
        return np.frombuffer(self._bytes(4 * n), dtype="<u4").astype(np.uint32, copy=False)

    def getrandbits(self, k: int) -> int:
        if k <= 0:
            return 0
        nbytes = (k + 7) // 8
        return int.from_bytes(self._bytes(nbytes), "little") >> (8 * nbytes - k)


def new_source() -> WordSource:
    """The product's word source (:meth:`WordSource.system`)."""
    return WordSource.system()


def _signs(src, n: int) -> np.ndarray:
    """``n`` independent fair bits as booleans (one word per 32 coordinates)."""
    words = src.u32(-(-n // WORD_BITS))
    return np.unpackbits(words.view(np.uint8))[:n].astype(bool)


# --------------------------------------------------------------------------
# levels


def _level(level, name: str = "level") -> Fraction:
    out = as_level(level, name)
    if out < MIN_BIT_LEVEL:
        raise ValueError(f"{name} must be at least {MIN_BIT_LEVEL}, got {out}")
    return out


def bit_level(eps, weight) -> Fraction:
    """The per-bit level ``eps / weight`` of a record level ``eps`` (exact; floats refused)."""
    if isinstance(weight, bool) or not isinstance(weight, Integral) or weight < 1:
        raise ValueError(f"weight must be a positive integer, got {weight!r}")
    return _level(as_level(eps, "eps") / int(weight), "eps / weight")


def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, Integral) else tuple(shape)
    if any(isinstance(s, bool) or not isinstance(s, Integral) or s < 0 for s in shape):
        raise ValueError(f"shape must be non-negative integers, got {shape!r}")
    return tuple(int(s) for s in shape)


# --------------------------------------------------------------------------
# exact thresholds


def _tail_bounds(s: int, t: int, j: int, bits: int) -> eb.Interval:
    """A bracket of ``T_j = 2 alpha^j / (1 + alpha)``, ``alpha = e^{-s/t}``."""
    top = eb.mul(eb.exact(2, 1, bits), eb.exp_neg(j * s, t, bits), bits)
    return eb.div(top, eb.add(eb.exact(1, 1, bits), eb.exp_neg(s, t, bits), bits), bits)


class _Tails:
    """32-bit brackets of ``T_j`` for ``j = 1..J`` (descending), ``J`` the first ``j`` with ``hi_j = 1``.

    ``lo`` ascending (``lo_J .. lo_1``, uint32) for the search; ``hi``
    descending with a sentinel above every word at index ``J`` (int64), so
    that ``hi[c]`` is the upper end of ``T_{c+1}``.
    """

    __slots__ = ("s", "t", "size", "lo", "hi")

    #: Precision of the multiplicative recurrence: thousands of products stay far within 2^-32.
    BITS = 96

    def __init__(self, level: Fraction):
        s, t = self.s, self.t = level.numerator, level.denominator
        alpha = eb.exp_neg(s, t, self.BITS)
        term = _tail_bounds(s, t, 1, self.BITS)
        los, his = [], []
        while True:
            lo, hi = term.scaled(WORD_BITS)
            if hi > 1 << WORD_BITS:  # pragma: no cover - T_1 < 1 - 2^-32 for levels >= MIN_BIT_LEVEL
                raise ValueError("level too small for a 32-bit table")
            los.append(lo)
            his.append(hi)
            if hi <= 1:
                break
            term = eb.mul(term, alpha, self.BITS)
        self.size = len(los)
        self.lo = np.array(los[::-1], dtype=np.uint32)
        self.hi = np.array(his + [1 << WORD_BITS], dtype=np.int64)
        if np.any(np.diff(self.lo.astype(np.int64)) < 0):  # pragma: no cover - outward rounding keeps order
            raise AssertionError("thresholds out of order")

    def count(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(c, undecided)``: ``c = #{j: lo_j > u}``, and where ``u < hi_{c+1}`` (refine there)."""
        c = self.size - np.searchsorted(self.lo, u, side="right")
        return c, u < self.hi[c]

    def finish(self, u: int, c: int, src) -> int:
        """``|V|`` for a uniform whose first 32 bits ``u`` were undecided past ``T_c``: 64 more
        bits of the same uniform at a time, compared with tighter brackets of ``T_{c+1}, ...``."""
        bits, j = WORD_BITS, c + 1
        u = (u << MORE_BITS) | src.getrandbits(MORE_BITS)
        bits += MORE_BITS
        while True:
            lo, hi = _tail_bounds(self.s, self.t, j, bits + 16).scaled(bits)
            if u < lo:
                j += 1
            elif u >= hi:
                return j - 1
            else:
                u = (u << MORE_BITS) | src.getrandbits(MORE_BITS)
                bits += MORE_BITS


@lru_cache(maxsize=64)
def _tails(level: Fraction) -> _Tails:
    return _Tails(level)


def _finish_coin(u: int, bounds, src) -> bool:
    """``U < p`` for a uniform whose first 32 bits ``u`` lie inside ``p``'s bracket."""
    bits = WORD_BITS
    while True:
        u = (u << MORE_BITS) | src.getrandbits(MORE_BITS)
        bits += MORE_BITS
        lo, hi = bounds(bits + 16).scaled(bits)
        if u < lo:
            return True
        if u >= hi:
            return False


def _stay_bounds(lo: Fraction, hi: Fraction):
    """The bracket function of ``p0 = e^{-(hi-lo)} ((1 - e^{-lo}) / (1 - e^{-hi}))^2``."""
    gap = hi - lo

    def bounds(bits):
        ratio = eb.div(
            eb.one_minus_exp_neg(lo.numerator, lo.denominator, bits),
            eb.one_minus_exp_neg(hi.numerator, hi.denominator, bits),
            bits,
        )
        return eb.product(bits, eb.exp_neg(gap.numerator, gap.denominator, bits), ratio, ratio)

    return bounds


@lru_cache(maxsize=64)
def _stay(lo: Fraction, hi: Fraction):
    bounds = _stay_bounds(lo, hi)
    return bounds, bounds(WORD_BITS + 16).scaled(WORD_BITS)


# --------------------------------------------------------------------------
# sampling


def _sample_flat(tails: _Tails, n: int, src) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        u = src.u32(m)
        c, undecided = tails.count(u)
        for i in np.flatnonzero(undecided).tolist():
            c[i] = tails.finish(int(u[i]), int(c[i]), src)
        negative = _signs(src, m)
        np.negative(c, out=c, where=negative)
        out[start : start + m] = c
    return out


def sample(level, shape, src) -> np.ndarray:
    """I.i.d. ``DLap(e^{-level})`` of the given shape, as int64, exactly (see the module's docstring)."""
    return _sample_flat(_tails(_level(level)), math.prod(_shape(shape)), src).reshape(_shape(shape))


def tighten(noise_hi, level_hi, level_lo, src) -> np.ndarray:
    """``V_lo = V_hi + W`` given ``V_hi = noise_hi``: ``W = 0`` with probability ``p0``, else ``DLap(e^{-lo})``."""
    hi, lo = _level(level_hi, "level_hi"), _level(level_lo, "level_lo")
    if not lo < hi:
        raise ValueError(f"tighten needs level_lo < level_hi, got {lo} and {hi}")
    values = np.asarray(noise_hi)
    if values.dtype.kind not in "iu":
        raise ValueError(f"noise_hi must be an integer array, got dtype {values.dtype}")
    bounds, (p_lo, p_hi) = _stay(lo, hi)
    tails = _tails(lo)
    flat = values.astype(np.int64).reshape(-1)  # a copy: the caller's array is left alone
    for start in range(0, flat.size, CHUNK):
        u = src.u32(min(CHUNK, flat.size - start))
        stay = u < p_lo
        for i in np.flatnonzero((u >= p_lo) & (u < p_hi)).tolist():
            stay[i] = _finish_coin(int(u[i]), bounds, src)
        moves = np.flatnonzero(~stay) + start
        flat[moves] += _sample_flat(tails, moves.size, src)
    return flat.reshape(values.shape)


def descend(levels_desc, shape, src, top=None) -> list[np.ndarray]:
    """The noise at each of ``levels_desc`` (strictly decreasing per-bit levels), from ``top``
    (the noise at ``levels_desc[0]``) or a fresh sample, tightened step by step."""
    levels = [_level(x, "levels_desc") for x in levels_desc]
    if not levels:
        raise ValueError("levels_desc is empty")
    if any(b >= a for a, b in pairwise(levels)):
        raise ValueError("levels_desc must be strictly decreasing")
    if top is None:
        current = sample(levels[0], shape, src)
    else:
        current = np.asarray(top)
        if current.shape != _shape(shape):
            raise ValueError(f"top has shape {current.shape}, expected {_shape(shape)}")
    out = [current]
    for hi, lo in pairwise(levels):
        current = tighten(current, hi, lo, src)
        out.append(current)
    return out


# --------------------------------------------------------------------------
# reports and their decoding


def report(truth, noise) -> np.ndarray:
    """The reported bits ``z = [truth + noise >= 1]`` (``truth`` boolean or 0/1)."""
    truth, noise = np.asarray(truth), np.asarray(noise)
    if truth.shape != noise.shape:
        raise ValueError(f"truth has shape {truth.shape} and noise {noise.shape}")
    if truth.dtype != bool and (truth.dtype.kind not in "iu" or np.any((truth != 0) & (truth != 1))):
        raise ValueError("truth must be boolean or 0/1")
    return np.where(truth.astype(bool), noise >= 0, noise >= 1)


def rates(level) -> tuple[float, float]:
    """``(p, q) = (1/(1+alpha), alpha/(1+alpha))``, ``alpha = e^{-level}``: for display and decoding only."""
    alpha = math.exp(-float(_level(level)))
    return 1.0 / (1.0 + alpha), alpha / (1.0 + alpha)


def decode(ones, n: int, level, confidence=0.95) -> dict:
    """Unbiased counts of true 1-bits per column from ``ones`` (reported 1s per column) out of ``n``.

    ``estimate = (ones - n q) / (p - q)``; its variance, evaluated at the
    estimate ``c`` clipped to ``[0, n]``, is ``(c p(1-p) + (n-c) q(1-q)) /
    (p-q)^2``; ``low``/``high`` is the normal interval at ``confidence``,
    clipped to ``[0, n]``.
    """
    from statistics import NormalDist

    if not 0 < float(confidence) < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    p, q = rates(level)
    ones = np.asarray(ones, dtype=np.float64)
    estimate = (ones - n * q) / (p - q)
    c = np.clip(estimate, 0, n)
    stderr = np.sqrt(c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q)
    z = NormalDist().inv_cdf(0.5 + float(confidence) / 2)
    return {
        "estimate": estimate,
        "stderr": stderr,
        "low": np.clip(estimate - z * stderr, 0, n),
        "high": np.clip(estimate + z * stderr, 0, n),
    }


# --------------------------------------------------------------------------
# compact storage

_UNSIGNED = [np.dtype("<u1"), np.dtype("<u2"), np.dtype("<u4"), np.dtype("<u8")]
_INT64_MAX = 2**63 - 1


def pack_noise(noise) -> bytes:
    """Integer noise, losslessly: zigzagged to unsigned (``0, -1, 1, -2, ... -> 0, 1, 2, 3, ...``)
    in the smallest unsigned type that holds it (its byte size is the 1-byte header), split into
    byte planes (every value's lowest byte, then every value's next byte, ...: the high planes
    are nearly all zero and compress to almost nothing), then zlib."""
    values = np.asarray(noise)
    if values.dtype.kind not in "iu":
        raise ValueError(f"noise must be an integer array, got dtype {values.dtype}")
    if values.dtype.kind == "u" and values.size and int(values.max()) > _INT64_MAX:
        raise ValueError("noise does not fit in int64")
    v = values.astype(np.int64).reshape(-1)
    zig = ((v << 1) ^ (v >> 63)).view(np.uint64)
    top = int(zig.max()) if zig.size else 0
    dtype = next(d for d in _UNSIGNED if top < 1 << (8 * d.itemsize))
    planes = zig.astype(dtype).view(np.uint8).reshape(-1, dtype.itemsize).T
    # level 1: within 10% of level 6's size, several times faster on 20 million values
    return bytes([dtype.itemsize]) + zlib.compress(np.ascontiguousarray(planes).tobytes(), 1)


def unpack_noise(data: bytes, shape) -> np.ndarray:
    """The int64 noise :func:`pack_noise` stored, in ``shape``."""
    shape = _shape(shape)
    if not data:
        raise ValueError("no noise stored")
    dtype = next((d for d in _UNSIGNED if d.itemsize == data[0]), None)
    if dtype is None:
        raise ValueError(f"unknown noise header {data[0]}")
    raw = np.frombuffer(zlib.decompress(data[1:]), dtype=np.uint8)
    if raw.size != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"{raw.size // dtype.itemsize} values stored, shape {shape} wants {math.prod(shape)}")
    zig = np.ascontiguousarray(raw.reshape(dtype.itemsize, -1).T).view(dtype).reshape(-1).astype(np.uint64)
    out = (zig >> np.uint64(1)).view(np.int64) ^ -(zig & np.uint64(1)).view(np.int64)
    return out.reshape(shape)


def pack_bits(z) -> bytes:
    """A boolean report at one bit per record-bit (``np.packbits``, row-major)."""
    return np.packbits(np.asarray(z, dtype=bool).reshape(-1)).tobytes()


def unpack_bits(data: bytes, shape) -> np.ndarray:
    shape = _shape(shape)
    n = math.prod(shape)
    if len(data) != -(-n // 8):
        raise ValueError(f"{len(data)} bytes stored, shape {shape} wants {-(-n // 8)}")
    return np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=n).astype(bool).reshape(shape)


# --------------------------------------------------------------------------
# Bloom filters


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def bloom(strings, size: int, hashes: int, salt: bytes) -> np.ndarray:
    """One Bloom filter of ``size`` bits per string (``None`` or NaN: all zeros), as (n, size) bool.

    Position ``i`` (``i < hashes``) of a string is the keyed hash
    ``blake2b(key=salt, digest_size=8)`` of ``i`` (4 bytes, little-endian)
    followed by the string's UTF-8 bytes, read as a little-endian integer,
    modulo ``size``. Equal strings share their positions, and so are hashed once.
    """
    if isinstance(size, bool) or not isinstance(size, Integral) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    if isinstance(hashes, bool) or not isinstance(hashes, Integral) or hashes < 1:
        raise ValueError(f"hashes must be a positive integer, got {hashes!r}")
    if not isinstance(salt, (bytes, bytearray)) or len(salt) > 64:
        raise ValueError("salt must be bytes, at most 64 of them")
    strings = list(strings)
    prototypes = []
    for i in range(hashes):
        h = hashlib.blake2b(key=bytes(salt), digest_size=8)
        h.update(i.to_bytes(4, "little"))
        prototypes.append(h)
    rows: dict = {}  # string -> its row of distinct digests
    index = np.empty(len(strings), dtype=np.int64)
    digests = bytearray()
    for r, value in enumerate(strings):
        if _missing(value):
            index[r] = -1
            continue
        key = value if isinstance(value, (str, bytes)) else str(value)
        found = rows.get(key)
        if found is None:
            data = key.encode("utf-8") if isinstance(key, str) else key
            for proto in prototypes:
                h = proto.copy()
                h.update(data)
                digests += h.digest()
            found = rows[key] = len(rows)
        index[r] = found
    positions = (np.frombuffer(bytes(digests), dtype="<u8") % np.uint64(size)).astype(np.int64)
    positions = positions.reshape(len(rows), hashes)
    out = np.zeros((len(strings), size), dtype=bool)
    present = np.flatnonzero(index >= 0)
    if present.size:
        cols = positions[index[present]]
        out[np.repeat(present, hashes), cols.reshape(-1)] = True
    return out
