"""One buyer's keep-alive HTTP/1.1 connection, with its token; JSON in and out."""

from __future__ import annotations

import http.client
import json
import socket
from typing import NamedTuple


class Reply(NamedTuple):
    status: int
    data: object  # the JSON body (None when empty)
    headers: dict  # lower-case names


class Client:
    """Keep-alive HTTP/1.1 with the buyer's token; reconnects once on a dropped connection."""

    def __init__(self, port: int, token: str | None, timeout: float = 30.0):
        self.port, self.timeout = port, timeout
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.conn: http.client.HTTPConnection | None = None
        self.reconnects = 0

    def request(self, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> Reply:
        payload = json.dumps(body).encode() if body is not None else None
        h = dict(self.headers)
        if payload is not None:
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=payload, headers=h)
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.will_close:
                    self.conn.close()
                    self.conn = None
                try:
                    data = json.loads(raw) if raw else None
                except ValueError:
                    data = {"raw": raw[:200].decode(errors="replace")}
                return Reply(resp.status, data, {k.lower(): v for k, v in resp.getheaders()})
            except (http.client.HTTPException, ConnectionError, socket.timeout, OSError):
                # a kept-alive connection the server closed: the requests are safe to repeat (GETs, and
                # POSTs carry an Idempotency-Key, which the product and the baseline both honour)
                self.conn.close()
                self.conn = None
                self.reconnects += 1
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def wait_applied(headers: dict) -> bool:
    """Whether the server says it honoured ``Prefer: wait`` (RFC 7240: ``Preference-Applied: wait=5``)."""
    applied = headers.get("preference-applied", "")
    return any(item.strip().split("=", 1)[0].strip().lower() == "wait" for item in applied.split(","))
