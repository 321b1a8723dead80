"""The signature of a delivery: ``Gradual-Signature: t=<unix time>,v1=<hex HMAC-SHA256>``.

The HMAC's key is the endpoint's secret (``whsec_...``, as shown) and its message the
time, a dot and the exact body: ``f"{t}.{body}"``. Receivers check it with
:func:`verify` (or the ten lines in ``docs/webhooks.md``) and refuse a time too old.
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Gradual-Signature"
#: a receiver refuses signatures older (or newer) than this many seconds
TOLERANCE = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    message = str(int(timestamp)).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def header(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    t = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={t},v1={signature(secret, t, body)}"


def verify(secret: str, header_value: str, body: bytes, *, tolerance: int = TOLERANCE, now: float | None = None) -> bool:
    """Whether ``header_value`` signs ``body`` with ``secret`` within ``tolerance`` seconds."""
    try:
        parts = dict(item.split("=", 1) for item in header_value.split(","))
        t = int(parts["t"])
    except (ValueError, KeyError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance:
        return False
    given = [v for k, v in (item.split("=", 1) for item in header_value.split(",")) if k == "v1"]
    expected = signature(secret, t, body)
    return any(hmac.compare_digest(expected, v) for v in given)
