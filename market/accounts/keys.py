"""API key secrets: how they look, how they are checked, how they are stored.

A secret is ``gradual_`` + 40 random base62 characters + a 6-character base62
checksum (CRC32 of the random part), e.g. ``gradual_1x2...AbC`` (54 characters).
The distinctive prefix lets logs and secret scanners recognise a leaked key; the
checksum lets the server refuse a mistyped or made-up key without a database query.

Only a keyed hash of the secret is stored (HMAC-SHA-256 with ``API_KEY_PEPPER``):
the secret is high-entropy random, so a fast hash is enough, and a copy of the
database alone does not let anyone use a key.
"""

from __future__ import annotations

import hashlib
import hmac
import zlib

from django.conf import settings

from market.core.ids import ALPHABET, PREFIXES, public_id, random_base62
PREFIX = "gradual_"
RANDOM_CHARS = 40  # 40 * log2(62) ~ 238 bits
CHECKSUM_CHARS = 6  # 62**6 > 2**32: a CRC32 always fits
SECRET_LENGTH = len(PREFIX) + RANDOM_CHARS + CHECKSUM_CHARS
#: how much of a secret is kept in clear to tell keys apart on a page (not enough to guess the rest)
DISPLAY_CHARS = len(PREFIX) + 4
def _base62(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        out.append(ALPHABET[digit])
    return "".join(reversed(out))


def checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode("ascii")), CHECKSUM_CHARS)


def new_id() -> str:
    """An opaque, random identifier for a key (it reveals nothing about how many exist)."""
    return public_id(PREFIXES["api_key"])


def new_secret() -> str:
    body = random_base62(RANDOM_CHARS)
    return PREFIX + body + checksum(body)


def well_formed(secret: str) -> bool:
    """Prefix, length, alphabet and checksum: all checked without touching the database."""
    if not isinstance(secret, str) or len(secret) != SECRET_LENGTH or not secret.startswith(PREFIX):
        return False
    rest = secret[len(PREFIX):]
    if any(c not in ALPHABET for c in rest):
        return False
    body, tail = rest[:RANDOM_CHARS], rest[RANDOM_CHARS:]
    return hmac.compare_digest(checksum(body), tail)


def digest(secret: str) -> str:
    """What the database stores: HMAC-SHA-256 of the secret under the server's pepper, hex."""
    pepper = getattr(settings, "API_KEY_PEPPER", "") or ""
    return hmac.new(pepper.encode(), secret.encode("ascii"), hashlib.sha256).hexdigest()


def display_prefix(secret: str) -> str:
    return secret[:DISPLAY_CHARS]
