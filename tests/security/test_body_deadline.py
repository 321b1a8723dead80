"""Request bodies within a deadline (market/core/bodies.py), on a real socket: a client sending a
byte now and then cannot keep a read blocked past the deadline, nor below the minimum rate."""

from __future__ import annotations

import io
import json
import socket
import threading
import time

import pytest

from market.core.bodies import BodyDeadlineMiddleware, BodyTimeout, DeadlineInput


class SocketBody:
    """Like gunicorn's body: ``read(n)`` returns once n bytes came (``recv`` after ``recv``)."""

    def __init__(self, sock):
        self.sock = sock

    def read(self, size):
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def readline(self, size=-1):
        return self.read(1)


@pytest.fixture
def trickle():
    """A connected pair; the client end sends a byte every 0.2 s until the test ends."""
    server, client = socket.socketpair()
    stop = threading.Event()

    def send():
        while not stop.wait(0.2):
            try:
                client.send(b"x")
            except OSError:
                return

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    yield server
    stop.set()
    sender.join()
    server.close()
    client.close()


def test_a_trickled_body_ends_at_its_deadline(trickle):
    body = DeadlineInput(SocketBody(trickle), timeout=1.0, min_rate=0, grace=0, sock=trickle)
    started = time.monotonic()
    with pytest.raises(BodyTimeout):
        body.read(64 * 1024)  # would take 3.6 hours at this pace
    took = time.monotonic() - started
    body.close()
    assert took < 2.5, took  # the deadline (1 s) and the watchdog's tick, not the body's pace
    assert body.expired


def test_a_body_under_the_minimum_rate_ends_after_the_grace_period(trickle):
    body = DeadlineInput(SocketBody(trickle), timeout=60, min_rate=1024, grace=0.5, sock=trickle)
    with pytest.raises(BodyTimeout):
        body.read(4096)  # 4 KB at 1 KB/s at least: due after 4 s; a byte every 0.2 s is far below
    body.close()
    assert time.monotonic() - body.started < 6


def test_a_body_that_comes_in_time_is_read_whole():
    data = b"a" * 300_000
    body = DeadlineInput(io.BytesIO(data), timeout=5, min_rate=64 * 1024, grace=1)
    assert body.read(len(data)) == data and body.read(10) == b""


def _app_reading_its_body(environ, start_response):
    try:
        environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    except OSError:
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [b"unreadable"]
    start_response("201 Created", [("Content-Type", "text/plain")])
    return [b"read"]


def test_the_wsgi_answer_is_408_in_the_api_s_error_shape_and_the_connection_closes(trickle):
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen.update(status=status, headers=dict(headers))

    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/purchases/", "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": "1000", "wsgi.input": SocketBody(trickle), "gunicorn.socket": trickle}
    from django.test import override_settings

    with override_settings(REQUEST_BODY_TIMEOUT=0.6, BODY_MIN_RATE=0):
        answer = b"".join(BodyDeadlineMiddleware(_app_reading_its_body)(environ, start_response))
    assert seen["status"].startswith("408") and seen["headers"]["Connection"] == "close"
    error = json.loads(answer)["error"]
    assert error["status"] == 408 and error["code"] == "request_timeout" and "Nothing was kept" in error["message"]
    # the reading side is shut: the server's next read sees the end at once, not the next trickled byte
    started = time.monotonic()
    while trickle.recv(1024):
        pass
    assert time.monotonic() - started < 0.5


def test_a_body_in_time_is_answered_by_the_application():
    seen = {}
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/x", "CONTENT_TYPE": "text/plain", "CONTENT_LENGTH": "5",
               "wsgi.input": io.BytesIO(b"hello")}
    answer = BodyDeadlineMiddleware(_app_reading_its_body)(environ, lambda s, h, e=None: seen.update(status=s))
    assert b"".join(answer) == b"read" and seen["status"].startswith("201")
