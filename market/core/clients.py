"""Who is asking: the one place that turns a request into the client's address.

Anything keyed on an address (every API throttle) calls :func:`client_address`.
``X-Forwarded-For`` is a header anyone can send, so it is believed only as far
as the deployment says: ``settings.TRUSTED_PROXY_COUNT`` (env
``TRUSTED_PROXY_COUNT``) is the number of proxies of our own that stand in
front of the application and each append the address they saw to the header.

- 0 (the default): no proxy is trusted; the address is the socket's,
  ``REMOTE_ADDR``, and the header is ignored.
- N > 0: the N-th entry from the right of ``X-Forwarded-For`` is the address
  our outermost proxy saw (everything left of it was written by the client
  and may be forged). A header with fewer than N entries, or whose entry is
  not an IP address, was not written by our proxies: ``REMOTE_ADDR`` is used.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def _ip(text: str) -> str | None:
    """The address in canonical form, or None when ``text`` is not an IP address."""
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[2001:db8::1]:443"
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # "198.51.100.7:443"
        text = text.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def client_address(request) -> str:
    """The address of the client that sent ``request`` (see the module's docstring)."""
    meta = getattr(request, "META", {})
    remote = meta.get("REMOTE_ADDR") or ""
    remote = _ip(remote) or remote
    trusted = settings.TRUSTED_PROXY_COUNT
    if trusted <= 0:
        return remote
    entries = meta.get("HTTP_X_FORWARDED_FOR", "").split(",")
    if len(entries) < trusted:
        return remote
    return _ip(entries[-trusted]) or remote
