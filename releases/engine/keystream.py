"""The exact paths' bit source: a ChaCha20 keystream under a key from the operating system.

The lattice path's samplers read about 100 KB of random bits for a release of
1,000 values. Read straight from the kernel (``os.urandom``, 1.6 µs a KB here)
that was a sixth of the release's time; the same kernel generator is itself
ChaCha20 under a key it keeps, so this module does what it does in user space:
:class:`KeyStream` reads a fresh 256-bit key and a 96-bit nonce from
``os.urandom`` when it is made, and serves the ChaCha20 keystream under them
(RFC 8439, the ``cryptography`` package's OpenSSL implementation, about 0.15 µs
a KB), reading a new key after every :data:`REKEY_BYTES`. It is the
construction of OpenSSL's, BoringSSL's and libsodium's generators: a stream
cipher's output under a secret key cannot be told from random bits, nor its
key recovered from any amount of it, so it is a cryptographically secure
source; someone who reads the process's memory learns at most the bits of the
release being drawn (a key serves one :func:`new_rng` caller, a release
transaction, and is dropped with it), which reading the drawn noise itself
would tell anyway. A process forked while holding one reads a key of its own
before its next bytes, so parent and child never serve the same stream.

There is no way to give it a key or a seed: tests hand the samplers a seeded
``random.Random`` instead. This module never imports Django.
"""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

__all__ = ["KeyStream", "REKEY_BYTES", "keyed_words"]

#: A new key from the operating system after this many bytes of keystream (16 MiB: a release of
#: a large listing reads a few MiB; the 32-bit block counter would wrap only after 256 GiB).
REKEY_BYTES = 1 << 24


class KeyStream:
    """Random bits from ChaCha20's keystream under a key read from ``os.urandom``; see the module."""

    __slots__ = ("_cipher", "_left", "_pid")

    def __init__(self):
        self._rekey()

    def _rekey(self) -> None:
        # the 16 bytes are the block counter (4, from 0) and the nonce (12, random)
        nonce = bytes(4) + os.urandom(12)
        self._cipher = Cipher(algorithms.ChaCha20(os.urandom(32), nonce), mode=None).encryptor()
        self._left = REKEY_BYTES
        self._pid = os.getpid()

    def randbytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the keystream (each byte handed out once)."""
        n = int(n)
        if n < 0:
            raise ValueError("a negative number of bytes")
        if os.getpid() != self._pid:  # a forked child never continues its parent's stream
            self._rekey()
        out = []
        while n > self._left:
            out.append(self._cipher.update(bytes(self._left)))
            n -= self._left
            self._rekey()
        self._left -= n
        out.append(self._cipher.update(bytes(n)))
        return b"".join(out) if len(out) > 1 else out[0]

    def getrandbits(self, k: int) -> int:
        """``k`` random bits as a non-negative integer below ``2^k`` (as ``random.getrandbits``)."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        if k == 0:
            return 0
        size = (k + 7) // 8
        return int.from_bytes(self.randbytes(size), "little") >> (8 * size - k)


def keyed_words(key: bytes):
    """``n -> n`` uint64 words of ChaCha20's keystream under ``key`` (32 bytes), read on from where the
    last call stopped: a reproducible cryptographically secure source, for post-processing that must give
    the same result every time it is asked (a synthetic release's rows, keyed by a secret of that
    release). Never for noise: :class:`KeyStream` reads its keys from the operating system."""
    import numpy as np

    if len(key) != 32:
        raise ValueError("a ChaCha20 key is 32 bytes")
    cipher = Cipher(algorithms.ChaCha20(bytes(key), bytes(16)), mode=None).encryptor()

    def words(n: int):
        return np.frombuffer(cipher.update(bytes(8 * int(n))), dtype="<u8").astype(np.uint64)

    return words
