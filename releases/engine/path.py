"""One stored noise path: its released levels and their noise vectors.

A :class:`NoisePath` answers "give me the noise at eps" by the one exact step
that fits (docs/mathematics.md section 4): reuse a released level, relax above the highest,
tighten below the lowest, bridge between two neighbours, or draw the first
point directly. A level that is known is never sampled again.

It serialises to a small, versioned binary format (no pickle) and back
bit-for-bit, so the marketplace can keep it in a database column.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from . import mechanism

__all__ = ["NoisePath", "Draw", "l2_to_bytes", "l2_from_bytes"]

_MAGIC = b"GRNP"
_VERSION = 1
_KIND_L1 = 1
_HEADER = struct.Struct("<4sBBHII")  # magic, version, kind, reserved, dim, count


class Draw(NamedTuple):
    noise: np.ndarray
    method: str  # "reuse", "initial", "relax", "tighten" or "bridge"


class NoisePath:
    """The released points of one l1 noise path of dimension ``dim``."""

    def __init__(self, dim: int, levels=None, values=None):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)
        if values is None and (levels is None or len(levels) == 0):
            self._levels = np.empty(0)
            self._values = np.empty((0, self.dim))
            return
        lv = np.array(levels, dtype=np.float64, copy=True).reshape(-1)
        vv = np.array(values, dtype=np.float64, copy=True)
        if vv.shape != (lv.size, self.dim):
            raise ValueError(
                f"values must have shape ({lv.size}, {self.dim}), got {vv.shape}"
            )
        if not np.isfinite(lv).all() or not (lv > 0).all():
            raise ValueError("levels must be positive and finite")
        if np.any(np.diff(lv) <= 0):
            raise ValueError("levels must be strictly increasing")
        if not np.isfinite(vv).all():
            raise ValueError("values must be finite")
        self._levels, self._values = lv, vv

    # -- reading -----------------------------------------------------------

    @property
    def levels(self) -> np.ndarray:
        """The released levels, ascending (a read-only view)."""
        view = self._levels.view()
        view.flags.writeable = False
        return view

    @property
    def values(self) -> np.ndarray:
        view = self._values.view()
        view.flags.writeable = False
        return view

    @property
    def max_level(self) -> float | None:
        """The largest level released: what the path has cost in privacy."""
        return float(self._levels[-1]) if self._levels.size else None

    def __len__(self) -> int:
        return int(self._levels.size)

    def _locate(self, eps: float) -> tuple[int, bool]:
        i = int(np.searchsorted(self._levels, eps))
        return i, i < self._levels.size and self._levels[i] == eps

    def plan(self, eps) -> str:
        """Which step :meth:`draw` would take for ``eps``, without sampling."""
        eps = mechanism._scalar_level("eps", eps)
        i, found = self._locate(eps)
        if found:
            return "reuse"
        if not self._levels.size:
            return "initial"
        if i == self._levels.size:
            return "relax"
        if i == 0:
            return "tighten"
        return "bridge"

    # -- sampling ----------------------------------------------------------

    def draw(self, eps, rng: np.random.Generator) -> Draw:
        """The noise at ``eps``; a new level is sampled once and stored."""
        eps = mechanism._scalar_level("eps", eps)
        method = self.plan(eps)
        i, _ = self._locate(eps)
        lv, vv = self._levels, self._values
        if method == "reuse":
            return Draw(vv[i].copy(), method)
        if method == "initial":
            noise = rng.laplace(0.0, 1.0 / eps, self.dim)
        elif method == "relax":
            noise = mechanism.relax(vv[-1], lv[-1], eps, rng)
        elif method == "tighten":
            noise = mechanism.tighten(vv[0], lv[0], eps, rng)
        else:
            noise = mechanism.bridge(vv[i - 1], lv[i - 1], vv[i], lv[i], eps, rng)
        self._levels = np.insert(lv, i, eps)
        self._values = np.insert(vv, i, noise, axis=0)
        return Draw(np.array(noise, copy=True), method)

    def noise_at(self, eps, rng: np.random.Generator) -> np.ndarray:
        return self.draw(eps, rng).noise

    # -- storage -----------------------------------------------------------

    def to_bytes(self) -> bytes:
        header = _HEADER.pack(_MAGIC, _VERSION, _KIND_L1, 0, self.dim, len(self))
        return (
            header
            + self._levels.astype("<f8").tobytes()
            + self._values.astype("<f8").tobytes()
        )

    @classmethod
    def from_bytes(cls, blob: bytes) -> "NoisePath":
        blob = bytes(blob)
        if len(blob) < _HEADER.size:
            raise ValueError("not a stored noise path: too short")
        magic, version, kind, _, dim, count = _HEADER.unpack_from(blob)
        if magic != _MAGIC or kind != _KIND_L1:
            raise ValueError("not a stored l1 noise path")
        if version != _VERSION:
            raise ValueError(f"unsupported noise path format version {version}")
        expected = _HEADER.size + 8 * count * (1 + dim)
        if len(blob) != expected:
            raise ValueError(
                f"stored noise path is {len(blob)} bytes, expected {expected}"
            )
        body = np.frombuffer(blob, dtype="<f8", offset=_HEADER.size)
        return cls(dim, body[:count], body[count:].reshape(count, dim))

    def __eq__(self, other) -> bool:
        if not isinstance(other, NoisePath):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    def __repr__(self) -> str:
        return f"NoisePath(dim={self.dim}, levels={self._levels.tolist()})"


_KIND_L2 = 2


def l2_to_bytes(levels, values) -> bytes:
    """An l2 path's jump list (see ``mechanism.l2_path``) as bytes: same header as
    :class:`NoisePath` (kind 2), then the levels (descending) and the values."""
    lv, vv = mechanism._check_l2(levels, values)
    header = _HEADER.pack(_MAGIC, _VERSION, _KIND_L2, 0, vv.shape[1], lv.size)
    return header + lv.astype("<f8").tobytes() + vv.astype("<f8").tobytes()


def l2_from_bytes(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The ``(levels, values)`` stored by :func:`l2_to_bytes`, bit for bit."""
    blob = bytes(blob)
    if len(blob) < _HEADER.size:
        raise ValueError("not a stored l2 path: too short")
    magic, version, kind, _, dim, count = _HEADER.unpack_from(blob)
    if magic != _MAGIC or kind != _KIND_L2:
        raise ValueError("not a stored l2 path")
    if version != _VERSION:
        raise ValueError(f"unsupported noise path format version {version}")
    expected = _HEADER.size + 8 * count * (1 + dim)
    if len(blob) != expected or count < 1:
        raise ValueError(f"stored l2 path is {len(blob)} bytes, expected {expected}")
    body = np.frombuffer(blob, dtype="<f8", offset=_HEADER.size)
    return mechanism._check_l2(body[:count], body[count:].reshape(count, dim))
