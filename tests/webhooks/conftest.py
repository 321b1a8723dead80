"""Webhook tests: a real HTTP receiver on 127.0.0.1 (a thread), recording every request; it can be
told to fail the next N requests, to hold each answer a while (or until the test lets it go), or to
redirect."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from tests.fixtures.market import (  # noqa: F401
    STATISTICS, api, buyer, eager_celery, fund, listing, make_csv, make_listing, owner, seeded_noise, users,
)


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    started: float
    finished: float | None = None


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    requests: list = field(default_factory=list)
    fail_next: int = 0
    fail_status: int = 500
    hold: float = 0.0
    redirect_to: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Event = field(default_factory=threading.Event)
    #: set to let held answers go at once (``hold`` is then the most a request waits)
    let_go: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str = "/hook") -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def wait_for(self, count: int, timeout: float = 60.0) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.02)
        raise AssertionError(f"the receiver got {len(self.requests)} request(s), not {count}, within {timeout}s")


def _handler(receiver: Receiver):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            record = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length), time.monotonic())
            with receiver.lock:
                receiver.requests.append(record)
                failing = receiver.fail_next > 0
                if failing:
                    receiver.fail_next -= 1
            receiver.arrived.set()
            if receiver.hold:
                receiver.let_go.wait(receiver.hold)
            if receiver.redirect_to:
                self.send_response(302)
                self.send_header("Location", receiver.redirect_to)
                self.end_headers()
            else:
                self.send_response(receiver.fail_status if failing else 200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"failing on purpose" if failing else b"thanks")
            record.finished = time.monotonic()

        def log_message(self, *args):
            pass

    return Handler


@pytest.fixture
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), None)
    recv = Receiver(server)
    server.RequestHandlerClass = _handler(recv)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield recv
    recv.let_go.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def clock(monkeypatch):
    """The webhooks' clock, moved by the test (``clock.advance(seconds=...)``)."""
    from market.webhooks import services

    class Clock:
        def __init__(self):
            self.now = timezone.now()

        def advance(self, **kw):
            self.now += timedelta(**kw)

    c = Clock()
    monkeypatch.setattr(services, "_now", lambda: c.now)
    return c
