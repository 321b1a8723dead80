"""THROWAWAY STAND-IN (branch h/ingest): a pass-through with the API of the real module that
the "keys" helper writes on h/keys. Delete this file before merging h/keys. It does NOT encrypt."""

from __future__ import annotations


__all__ = ["CryptoError", "seal", "seal_stream", "unseal", "unseal_stream"]


class CryptoError(Exception):
    pass


def seal(data: bytes, *, context: bytes) -> bytes:
    return bytes(data)


def unseal(data: bytes, *, context: bytes) -> bytes:
    return bytes(data)


def seal_stream(src, dst, *, context: bytes, chunk_size: int = 1 << 20) -> int:
    n = 0
    while chunk := src.read(chunk_size):
        dst.write(chunk)
        n += len(chunk)
    return n


def unseal_stream(src, dst, *, context: bytes) -> int:
    n = 0
    while chunk := src.read(1 << 20):
        dst.write(chunk)
        n += len(chunk)
    return n
