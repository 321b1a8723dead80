"""Encryption at rest: AES-256-GCM with keys from the environment, rotation supported.

Two formats, both starting with a header that names the key that sealed them
(so a key can be rotated: every key in the ring opens, only the current one
seals):

*Small values* (:func:`seal`, :func:`unseal`), e.g. a listing's true answer or
a stored noise point::

    b"GRDs" | version (1) | key id length (1) | key id | nonce (12, random) | ciphertext | tag (16)

*Streams* (:func:`seal_stream`, :func:`unseal_stream`), e.g. a data file, in
chunks so memory stays O(chunk) whatever the file's size::

    b"GRDf" | version (1) | key id length (1) | key id | chunk size (4) | nonce prefix (8, random)
    then chunks: ciphertext | tag (16); every chunk holds exactly ``chunk size`` bytes
    except the last, which holds fewer (possibly none) and is flagged final

Chunk ``i`` is sealed with nonce ``prefix || i`` (4 bytes, big-endian) and
associated data ``header || context || i (8 bytes) || final flag``: a chunk
moved, dropped, repeated, taken from another stream or another row, or a
stream cut short (at a chunk boundary or inside a chunk) fails to open.

``context`` is always associated data: a blob sealed for ``b"listing-answer:42"``
does not open as ``b"listing-answer:43"``, so ciphertext cannot be moved
between rows unnoticed.

Keys: ``GRADUAL_ENCRYPTION_KEYS`` (read through ``settings.GRADUAL_ENCRYPTION_KEYS``)
is a comma-separated list of ``id:base64(32 bytes)``; the first is current.
The bare entry ``dev`` stands for the key derived from ``SECRET_KEY`` (HKDF-SHA256),
which is also the only key when the variable is empty (development and tests;
``check --deploy`` warns about it). Rotation: put a new key first, run
``python manage.py rotate_encryption_keys``, then drop the old key.

The primitives (:class:`Keyring`) need no Django; the module-level functions
read the ring from Django's settings.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import struct
from dataclasses import dataclass
from typing import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SEAL_MAGIC = b"GRDs"
STREAM_MAGIC = b"GRDf"
VERSION = 1
NONCE_BYTES = 12
PREFIX_BYTES = 8
TAG_BYTES = 16
KEY_BYTES = 32
#: the derived development key's id, and the bare entry of GRADUAL_ENCRYPTION_KEYS that names it
DERIVED_KEY_ID = "dev"
KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,32}")
MAX_CHUNK = 64 << 20
_HKDF_INFO = b"gradual encryption at rest v1"


class CryptoError(Exception):
    """A blob that cannot be opened: wrong key, unknown key id, tampered or truncated data."""


class UnknownKeyError(CryptoError):
    """Sealed with a key that is not configured: the data is fine, the configuration is not."""


class KeyConfigError(ValueError):
    """GRADUAL_ENCRYPTION_KEYS is malformed (the message says where, never a key)."""


def derive_key(secret: str | bytes) -> bytes:
    """The 32-byte key derived from a secret (Django's SECRET_KEY) with HKDF-SHA256."""
    material = secret.encode() if isinstance(secret, str) else bytes(secret)
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=_HKDF_INFO).derive(material)


def parse_keys(text: str, *, secret: str | bytes = "") -> list[tuple[str, bytes]]:
    """``id:base64,...`` (and the bare ``dev``) as ``[(id, key), ...]``, current first.

    Empty text gives the derived key alone. Raises :class:`KeyConfigError`.
    """
    entries = [item.strip() for item in (text or "").split(",") if item.strip()]
    if not entries:
        entries = [DERIVED_KEY_ID]
    keys: list[tuple[str, bytes]] = []
    for n, entry in enumerate(entries, start=1):
        if entry == DERIVED_KEY_ID:
            if not secret:
                raise KeyConfigError(f"GRADUAL_ENCRYPTION_KEYS entry {n}: '{DERIVED_KEY_ID}' needs a SECRET_KEY")
            key_id, key = DERIVED_KEY_ID, derive_key(secret)
        else:
            key_id, sep, encoded = entry.partition(":")
            key_id = key_id.strip()
            if not sep:
                raise KeyConfigError(f"GRADUAL_ENCRYPTION_KEYS entry {n}: expected id:base64-key")
            if not KEY_ID_PATTERN.fullmatch(key_id) or key_id == DERIVED_KEY_ID:
                raise KeyConfigError(
                    f"GRADUAL_ENCRYPTION_KEYS entry {n}: a key id is 1-32 letters, digits, '_', '.' or '-' "
                    f"(and not '{DERIVED_KEY_ID}', the derived key's)"
                )
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                key = b""
            if len(key) != KEY_BYTES:
                raise KeyConfigError(f"GRADUAL_ENCRYPTION_KEYS key '{key_id}': expected {KEY_BYTES} bytes in base64")
        if any(key_id == seen for seen, _ in keys):
            raise KeyConfigError(f"GRADUAL_ENCRYPTION_KEYS: key id '{key_id}' appears twice")
        keys.append((key_id, key))
    return keys


def new_key_entry(key_id: str) -> str:
    """A fresh ``id:base64`` entry for GRADUAL_ENCRYPTION_KEYS (32 random bytes)."""
    if not KEY_ID_PATTERN.fullmatch(key_id) or key_id == DERIVED_KEY_ID:
        raise KeyConfigError(f"bad key id {key_id!r}")
    return f"{key_id}:{base64.b64encode(os.urandom(KEY_BYTES)).decode()}"


def _header_key_id(blob: bytes, magic: bytes) -> tuple[str, int]:
    """The key id named by a header of the given magic, and the offset after it."""
    if len(blob) < 6 or blob[:4] != magic:
        raise CryptoError("not an encrypted value of this kind (bad magic)")
    if blob[4] != VERSION:
        raise CryptoError(f"unsupported encryption format version {blob[4]}")
    n = blob[5]
    if not 1 <= n <= 32 or len(blob) < 6 + n:
        raise CryptoError("truncated or damaged encryption header")
    try:
        key_id = blob[6 : 6 + n].decode("ascii")
    except UnicodeDecodeError:
        raise CryptoError("damaged key id in encryption header") from None
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise CryptoError("damaged key id in encryption header")
    return key_id, 6 + n


def key_id_of(blob_or_header: bytes) -> str:
    """The id of the key that sealed a blob or stream (its first bytes suffice)."""
    blob = bytes(blob_or_header[:64])
    magic = blob[:4]
    if magic not in (SEAL_MAGIC, STREAM_MAGIC):
        raise CryptoError("not an encrypted value (bad magic)")
    return _header_key_id(blob, magic)[0]


def _id_header(magic: bytes, key_id: str) -> bytes:
    raw = key_id.encode("ascii")
    return magic + bytes([VERSION, len(raw)]) + raw


def _read_exactly(src, n: int) -> bytes:
    """Up to ``n`` bytes, fewer only at the end of the stream (raw files may return short reads)."""
    parts, got = [], 0
    while got < n:
        part = src.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


@dataclass(frozen=True)
class Keyring:
    """Keys by id; ``current`` seals, all open. Needs no Django."""

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self):
        if not self.keys:
            raise KeyConfigError("a keyring needs at least one key")
        for key_id, key in self.keys:
            if not KEY_ID_PATTERN.fullmatch(key_id) or len(key) != KEY_BYTES:
                raise KeyConfigError(f"bad key {key_id!r}")

    @classmethod
    def from_config(cls, text: str, *, secret: str | bytes = "") -> "Keyring":
        return cls(tuple(parse_keys(text, secret=secret)))

    @property
    def current_id(self) -> str:
        return self.keys[0][0]

    @property
    def ids(self) -> list[str]:
        return [key_id for key_id, _ in self.keys]

    def _aead(self, key_id: str) -> AESGCM:
        for known, key in self.keys:
            if known == key_id:
                return AESGCM(key)
        raise UnknownKeyError(
            f"encrypted with key '{key_id}', which is not in GRADUAL_ENCRYPTION_KEYS (known: {', '.join(self.ids)})"
        )

    # --- small values

    def seal(self, data: bytes, *, context: bytes) -> bytes:
        header = _id_header(SEAL_MAGIC, self.current_id)
        nonce = os.urandom(NONCE_BYTES)
        return header + nonce + self._aead(self.current_id).encrypt(nonce, bytes(data), header + bytes(context))

    def unseal(self, blob: bytes, *, context: bytes) -> bytes:
        blob = bytes(blob)
        key_id, at = _header_key_id(blob, SEAL_MAGIC)
        aead = self._aead(key_id)
        if len(blob) < at + NONCE_BYTES + TAG_BYTES:
            raise CryptoError("truncated encrypted value")
        nonce = blob[at : at + NONCE_BYTES]
        try:
            return aead.decrypt(nonce, blob[at + NONCE_BYTES :], blob[:at] + bytes(context))
        except InvalidTag:
            raise CryptoError("encrypted value does not open: tampered, wrong key or wrong context") from None

    # --- streams

    def seal_stream(self, src, dst, *, context: bytes, chunk_size: int = 1 << 20) -> int:
        if not 1 <= chunk_size <= MAX_CHUNK:
            raise ValueError(f"chunk_size must be between 1 and {MAX_CHUNK}")
        context = bytes(context)
        aead = self._aead(self.current_id)
        prefix = os.urandom(PREFIX_BYTES)
        header = _id_header(STREAM_MAGIC, self.current_id) + struct.pack(">I", chunk_size) + prefix
        dst.write(header)
        written = len(header)
        index = 0
        pending = _read_exactly(src, chunk_size)
        while True:
            # a chunk is final when it is short; a full chunk at the very end is followed by an empty final one
            final = len(pending) < chunk_size
            written += self._write_chunk(dst, aead, prefix, header, context, index, pending, final)
            if final:
                return written
            index += 1
            pending = _read_exactly(src, chunk_size)

    @staticmethod
    def _write_chunk(dst, aead, prefix, header, context, index, plain, final) -> int:
        if index >= 1 << 32:
            raise CryptoError("stream too long for one nonce prefix")
        nonce = prefix + struct.pack(">I", index)
        aad = header + context + struct.pack(">QB", index, 1 if final else 0)
        sealed = aead.encrypt(nonce, plain, aad)
        dst.write(sealed)
        return len(sealed)

    def unseal_stream(self, src, dst, *, context: bytes) -> int:
        """Plaintext to ``dst``, chunk by chunk, each verified before it is written.

        On :class:`CryptoError` ``dst`` may hold the verified chunks before the
        fault: the caller discards it (e.g. a temporary file)."""
        context = bytes(context)
        start = _read_exactly(src, 6)
        if len(start) < 6:
            raise CryptoError("truncated encrypted stream (no header)")
        n = start[5] if start[:4] == STREAM_MAGIC else 0
        head = start + _read_exactly(src, n + 4 + PREFIX_BYTES)
        key_id, at = _header_key_id(head, STREAM_MAGIC)
        if len(head) < at + 4 + PREFIX_BYTES:
            raise CryptoError("truncated encrypted stream header")
        (chunk_size,) = struct.unpack(">I", head[at : at + 4])
        if not 1 <= chunk_size <= MAX_CHUNK:
            raise CryptoError("damaged encrypted stream header (chunk size)")
        prefix = head[at + 4 : at + 4 + PREFIX_BYTES]
        header = head[: at + 4 + PREFIX_BYTES]
        aead = self._aead(key_id)
        written, index = 0, 0
        while True:
            sealed = _read_exactly(src, chunk_size + TAG_BYTES)
            if not sealed:
                raise CryptoError("encrypted stream truncated (its final chunk is missing)")
            final = len(sealed) < chunk_size + TAG_BYTES
            if index >= 1 << 32:
                raise CryptoError("encrypted stream too long")
            nonce = prefix + struct.pack(">I", index)
            aad = header + context + struct.pack(">QB", index, 1 if final else 0)
            try:
                plain = aead.decrypt(nonce, sealed, aad)
            except InvalidTag:
                raise CryptoError(
                    f"encrypted stream does not open at chunk {index}: tampered, truncated, reordered, "
                    "wrong key or wrong context"
                ) from None
            dst.write(plain)
            written += len(plain)
            if final:
                if src.read(1):
                    raise CryptoError("encrypted stream has data after its final chunk")
                return written
            index += 1


class SealedReader(io.RawIOBase):
    """A sealed stream (:meth:`Keyring.seal_stream`) read at random, decrypting only the chunks a read
    touches, each verified before any of its bytes is returned: what lets a Parquet reader take one
    row group of a sealed file in an object store without the rest (``market.catalog.spark``).

    ``read_at(offset, length)`` returns the sealed bytes at ``offset`` (fewer only at the end);
    ``size`` is the sealed stream's length. The chunks' places follow from the header, since every
    chunk but the last holds exactly ``chunk size`` bytes; the last is the one the size ends in, and
    it is opened as the final chunk, so a stream cut short or grown does not open. Needs no Django."""

    def __init__(self, keyring: "Keyring", read_at: Callable[[int, int], bytes], size: int, *, context: bytes,
                 cached: int = 4):
        super().__init__()
        self._read_at, self._context, self._cached = read_at, bytes(context), max(1, int(cached))
        start = bytes(read_at(0, 6 + 32 + 4 + PREFIX_BYTES))
        key_id, at = _header_key_id(start, STREAM_MAGIC)
        if len(start) < at + 4 + PREFIX_BYTES:
            raise CryptoError("truncated encrypted stream header")
        (self._chunk,) = struct.unpack(">I", start[at : at + 4])
        if not 1 <= self._chunk <= MAX_CHUNK:
            raise CryptoError("damaged encrypted stream header (chunk size)")
        self._prefix = start[at + 4 : at + 4 + PREFIX_BYTES]
        self._header = start[: at + 4 + PREFIX_BYTES]
        self._aead = keyring._aead(key_id)
        body = int(size) - len(self._header)
        full, rest = divmod(body, self._chunk + TAG_BYTES)
        if body < TAG_BYTES or rest < TAG_BYTES:
            raise CryptoError("encrypted stream truncated (its final chunk is missing or cut)")
        self._last = full  # the final chunk's index: it holds rest - TAG_BYTES < chunk bytes
        self.size = full * self._chunk + rest - TAG_BYTES
        self._at = 0
        self._plain: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._at = base + offset
        return self._at

    def _chunk_at(self, index: int) -> bytes:
        plain = self._plain.get(index)
        if plain is None:
            final = index == self._last
            length = (self.size - index * self._chunk if final else self._chunk) + TAG_BYTES
            sealed = bytes(self._read_at(len(self._header) + index * (self._chunk + TAG_BYTES), length))
            nonce = self._prefix + struct.pack(">I", index)
            aad = self._header + self._context + struct.pack(">QB", index, 1 if final else 0)
            try:
                plain = self._aead.decrypt(nonce, sealed, aad)
            except InvalidTag:
                raise CryptoError(f"encrypted stream does not open at chunk {index}: tampered, truncated, wrong key "
                                  "or wrong context") from None
            if len(self._plain) >= self._cached:
                self._plain.pop(next(iter(self._plain)))
            self._plain[index] = plain
        return plain

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._at < self.size:
            index, inside = divmod(self._at, self._chunk)
            plain = self._chunk_at(index)
            take = min(len(view) - done, len(plain) - inside)
            view[done : done + take] = plain[inside : inside + take]
            done += take
            self._at += take
        return done


# --- the ring from Django's settings (cached per configuration, so override_settings works)

_cache: dict[tuple[str, str], Keyring] = {}


def keyring() -> Keyring:
    """The ring configured by ``settings.GRADUAL_ENCRYPTION_KEYS`` (and ``SECRET_KEY`` for ``dev``)."""
    from django.conf import settings

    text = getattr(settings, "GRADUAL_ENCRYPTION_KEYS", "") or ""
    secret = settings.SECRET_KEY
    cache_key = (text, secret)
    ring = _cache.get(cache_key)
    if ring is None:
        ring = Keyring.from_config(text, secret=secret)
        _cache.clear()
        _cache[cache_key] = ring
    return ring


def _seal_vector(values, dtype: str, *, context: bytes) -> bytes:
    import numpy as np

    return seal(np.ascontiguousarray(values, dtype=dtype).tobytes(), context=context)


def _unseal_vector(blob: bytes, dtype: str, what: str, *, context: bytes):
    import numpy as np

    raw = unseal(bytes(blob), context=context)
    if len(raw) % 8:
        raise CryptoError(f"encrypted value is not {what}")
    return np.frombuffer(raw, dtype=dtype).copy()


def seal_floats(values, *, context: bytes) -> bytes:
    """A float64 vector (little-endian), sealed: how the float path's true answers and noise are stored."""
    return _seal_vector(values, "<f8", context=context)


def unseal_floats(blob: bytes, *, context: bytes):
    """The float64 vector of :func:`seal_floats` (a fresh, writable array)."""
    return _unseal_vector(blob, "<f8", "a float64 vector", context=context)


def seal_ints(values, *, context: bytes) -> bytes:
    """An int64 vector (little-endian), sealed: how the lattice path's answers (in grid steps) and noise are stored."""
    return _seal_vector(values, "<i8", context=context)


def unseal_ints(blob: bytes, *, context: bytes):
    """The int64 vector of :func:`seal_ints` (a fresh, writable array)."""
    return _unseal_vector(blob, "<i8", "an int64 vector", context=context)


def current_key_id() -> str:
    return keyring().current_id


def seal(data: bytes, *, context: bytes) -> bytes:
    return keyring().seal(data, context=context)


def unseal(blob: bytes, *, context: bytes) -> bytes:
    return keyring().unseal(blob, context=context)


def seal_stream(src, dst, *, context: bytes, chunk_size: int = 1 << 20) -> int:
    return keyring().seal_stream(src, dst, context=context, chunk_size=chunk_size)


def unseal_stream(src, dst, *, context: bytes) -> int:
    return keyring().unseal_stream(src, dst, context=context)


def uses_derived_key() -> bool:
    """Whether the derived (SECRET_KEY) key seals: fine in development, not in production."""
    return current_key_id() == DERIVED_KEY_ID


# --- the associated data of the product's sealed columns (one place: models and migrations use these)


def answer_context(listing_pk: int) -> bytes:
    """``Listing.answer``: bound to its row."""
    return b"listing-answer:%d" % int(listing_pk)


def jumps_context(path_pk: int) -> bytes:
    """``NoisePath.jumps``: bound to its row."""
    return b"noise-path:%d" % int(path_pk)


def noise_context(path_pk: int, level) -> bytes:
    """``NoisePoint.noise``: bound to its path and level (unique together, known before the insert);
    the level as stored, with four decimal places."""
    from decimal import Decimal

    quantized = Decimal(str(level)).quantize(Decimal("0.0001"))
    return b"noise-point:%d:%s" % (int(path_pk), format(quantized, "f").encode())


def report_context(point_pk: int) -> bytes:
    """``BitReport.bits``: bound to its noise point (one report per point)."""
    return b"bit-report:%d" % int(point_pk)


def reseal(blob: bytes, *, context: bytes, ring: Keyring | None = None) -> bytes | None:
    """``blob`` sealed again under the current key, or None when it already is (idempotent rotation).

    Either way the blob is opened first (:class:`CryptoError` if it does not open): rotation
    also proves that everything opens with the configured keys, e.g. that a key id was not
    reused for other key bytes, before an old key is removed."""
    ring = ring or keyring()
    blob = bytes(blob)
    plain = ring.unseal(blob, context=context)
    if key_id_of(blob) == ring.current_id:
        return None
    return ring.seal(plain, context=context)


# --- rotation: every kind of sealed thing registers one rotator

@dataclass
class Rotated:
    """What one rotator did: blobs re-sealed under the current key, blobs already under it, and
    blobs that did not open (left as they are, reported; the command then fails)."""

    resealed: int = 0
    unchanged: int = 0
    damaged: int = 0


_rotators: dict[str, Callable[[], Rotated]] = {}


def register_rotator(name: str, func: Callable[[], Rotated] | None = None):
    """Register ``func()`` -> :class:`Rotated` under ``name`` (usable as a decorator).

    A rotator re-seals every blob of its kind not under :func:`current_key_id`,
    each under a row lock, and is idempotent (a second run re-seals nothing).
    ``manage.py rotate_encryption_keys`` runs them all. Register at import time
    of a module that an AppConfig.ready() imports.
    """

    def add(f):
        _rotators[name] = f
        return f

    return add(func) if func is not None else add


def rotators() -> dict[str, Callable[[], Rotated]]:
    return dict(_rotators)
