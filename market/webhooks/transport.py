"""Sending one delivery: an HTTP POST with short time limits, no redirects, and only to public
addresses unless ``WEBHOOKS_ALLOW_PRIVATE`` is on.

The host is resolved once, every address it resolves to is checked, and the
connection is made to the checked address (so a name that resolves elsewhere a
moment later is not followed there). HTTPS still verifies the certificate for
the host's name.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

CONNECT_TIMEOUT = 3.0
TOTAL_TIMEOUT = 10.0
#: the most of a receiver's answer kept with an attempt
RESPONSE_KEEP = 2000


class RefusedAddress(ValueError):
    """A URL the marketplace will not send to (the message says why, in plain words)."""


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    response: str
    duration_ms: int
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def _allow_private() -> bool:
    return bool(getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False))


def check_url(url: str) -> None:
    """Refuse a URL that is not http(s), has no host, or carries a user and password (no lookup)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise RefusedAddress("the address must start with http:// or https://")
    if not parts.hostname:
        raise RefusedAddress("the address has no host name")
    if parts.username or parts.password:
        raise RefusedAddress("the address must not carry a user name or password")
    try:
        parts.port
    except ValueError:
        raise RefusedAddress("the address has an invalid port") from None


#: IPv6 ranges that are never a webhook's receiver, whatever ``ipaddress`` says of them: NAT64's
#: local-use prefix (RFC 8215), IPv4-compatible addresses (deprecated, RFC 4291), site-local (deprecated,
#: RFC 3879), unique-local (RFC 4193; also not global for ``ipaddress``), Teredo (RFC 4380: its client's
#: address is on the inside of a NAT) and the other IETF protocol assignments of 2001::/23
_NEVER = tuple(ipaddress.ip_network(net) for net in (
    "64:ff9b:1::/48", "::/96", "fec0::/10", "fc00::/7", "2001::/23",  # 2001::/23 holds Teredo's 2001::/32
))
#: IPv6 ranges that carry an IPv4 address: it is judged as itself. NAT64's well-known prefix (RFC 6052,
#: the address in the last 32 bits), 6to4 (RFC 3056, in bits 16 to 48) and IPv4-mapped addresses
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4), None if it stands for none."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def refusal(address: str) -> str | None:
    """Why ``address`` (an IP, as ``getaddrinfo`` gives it) is no webhook's receiver, None if it may be.

    Only global unicast addresses are allowed. An IPv6 address that embeds an IPv4 one (mapped
    ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``, 6to4 ``2002:aabb:ccdd::``) is judged by that IPv4
    address, so a private, loopback, link-local or metadata address cannot be reached through it; the
    IPv4-compatible ``::a.b.c.d``, NAT64's local-use prefix, site-local, unique-local and Teredo
    addresses are refused whatever they hold."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in net for net in _NEVER):
            return f"{ip} is a local or transitional IPv6 address"
        inner = embedded_ipv4(ip)
        if inner is not None and (not inner.is_global or inner.is_multicast):
            return f"{ip} stands for the IPv4 address {inner}, which is private or local"
    if not ip.is_global or ip.is_multicast:
        return f"{ip} is a private, loopback, link-local or otherwise non-public address"
    return None




def resolve(url: str) -> tuple[str, int, list[str]]:
    """The URL's host, port and addresses, all checked: a private, loopback or link-local
    address is refused unless ``WEBHOOKS_ALLOW_PRIVATE`` is on."""
    check_url(url)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise RefusedAddress(f"the host name {parts.hostname} could not be found") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not _allow_private():
        for address in addresses:  # every one: a name with one private address among public ones is refused
            why = refusal(address)
            if why is not None:
                raise RefusedAddress(f"the address leads to a private or local network, which webhooks may not "
                                     f"reach ({parts.hostname}: {why})")
    return parts.hostname, port, addresses


def post(url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    """POST ``body`` to ``url``: connect within 3 s, everything within about 10 s; a redirect is
    an answer like any other (not followed)."""
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    def left() -> float:
        return max(0.05, TOTAL_TIMEOUT - (time.monotonic() - started))

    try:
        host, port, addresses = resolve(url)
    except RefusedAddress as exc:
        return Outcome(None, "", elapsed_ms(), str(exc))
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    connection = None
    try:
        sock = None
        last: OSError | None = None
        for address in addresses:
            try:
                sock = socket.create_connection((address, port), timeout=min(CONNECT_TIMEOUT, left()))
                break
            except OSError as exc:
                last = exc
        if sock is None:
            raise last or OSError("no address to connect to")
        sock.settimeout(left())
        if parts.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            connection = http.client.HTTPSConnection(host, port, timeout=left())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=left())
        connection.sock = sock
        connection.request("POST", path, body=body, headers=headers)
        sock.settimeout(left())
        response = connection.getresponse()
        kept = b""
        while len(kept) < RESPONSE_KEEP and time.monotonic() - started < TOTAL_TIMEOUT:
            sock.settimeout(left())
            chunk = response.read1(RESPONSE_KEEP - len(kept)) if hasattr(response, "read1") else response.read(RESPONSE_KEEP)
            if not chunk:
                break
            kept += chunk
        return Outcome(response.status, kept.decode("utf-8", "replace"), elapsed_ms(), "")
    except (TimeoutError, socket.timeout):
        return Outcome(None, "", elapsed_ms(), "no answer in time")
    except ssl.SSLError as exc:
        return Outcome(None, "", elapsed_ms(), f"secure connection failed: {exc}"[:500])
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(None, "", elapsed_ms(), f"could not reach it: {exc or type(exc).__name__}"[:500])
    finally:
        if connection is not None:
            connection.close()
