"""Request bodies have a deadline: a slow client never holds a web thread longer than it.

:class:`BodyDeadlineMiddleware` wraps the WSGI application (``market/wsgi.py``)
and gives every request that has a body a :class:`DeadlineInput` in place of
``wsgi.input``. A body must arrive within its time limit, counted from the
start of the request (``UPLOAD_BODY_TIMEOUT`` for multipart uploads,
``UPLOAD_PART_BODY_TIMEOUT`` for a part of a resumable upload,
``REQUEST_BODY_TIMEOUT``, small, for any other body such as JSON), and,
after a grace period (``BODY_RATE_GRACE`` seconds), at an average of at least
``BODY_MIN_RATE`` bytes a second.

Under gunicorn a read blocks in the socket's ``recv``, and a client sending
one byte a second makes each ``recv`` return in time while the read as a
whole never ends. So two things bound a read: the socket's timeout, set to
the time left before each read (``environ["gunicorn.socket"]``), for a client
that sends nothing; and one watchdog thread per process that shuts the
socket's reading side when a read is still blocked at its deadline, which
wakes the ``recv`` at once, for a client that trickles. Either way the read
raises :class:`BodyTimeout`, the partial body is dropped with the request
(Django's temporary upload files are deleted when closed), whatever the
application answered is replaced by a 408 (in the API's error shape under
``/api/``), and the connection closes (its reading side is shut, so gunicorn
cannot keep it alive). Slots the request held are given back as its views
and middleware unwind.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

from django.conf import settings
from django.http import UnreadablePostError

from .errors import error_body

log = logging.getLogger(__name__)

#: the most one read of the underlying stream asks for: a deadline is checked between pieces
PIECE = 64 * 1024
#: how often the watchdog looks at the reads in progress, in seconds
TICK = 0.2


class BodyTimeout(UnreadablePostError):
    """The request body did not arrive within its time limit or at its minimum rate."""


class _Watchdog:
    """One thread per process: shuts the socket of a read still blocked past its deadline."""

    def __init__(self):
        self._lock = threading.Lock()
        self._inputs: set[DeadlineInput] = set()
        self._pid = None

    def add(self, body: "DeadlineInput") -> None:
        with self._lock:
            self._inputs.add(body)
            if self._pid != os.getpid():  # first use in this process (gunicorn forks its workers)
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="body-deadline-watchdog", daemon=True).start()

    def discard(self, body: "DeadlineInput") -> None:
        with self._lock:
            self._inputs.discard(body)

    def _run(self) -> None:
        while True:
            time.sleep(TICK)
            now = time.monotonic()
            with self._lock:
                due = [body for body in self._inputs if body.reading and now >= body.read_deadline()]
            for body in due:
                body.expire()


_watchdog = _Watchdog()


class DeadlineInput:
    """``wsgi.input`` read within a deadline and a minimum average rate (see the module's docstring)."""

    def __init__(self, stream, *, timeout: float, min_rate: float, grace: float, sock=None):
        self.stream = stream
        self.timeout = timeout
        self.min_rate = min_rate
        self.grace = grace
        self.sock = sock
        self.started = time.monotonic()
        self.received = 0
        self.reading = False
        self.expired = False
        self._asked = 0  # bytes the read in progress asked for
        self._prior_timeout = sock.gettimeout() if sock is not None else None
        if sock is not None:
            _watchdog.add(self)

    def read_deadline(self) -> float:
        """When the read in progress must have ended: the time limit, or earlier if even its whole
        piece would leave the average under the minimum rate (never within the grace period)."""
        at_rate = self.started + max(self.grace, (self.received + self._asked) / self.min_rate) if self.min_rate else float("inf")
        return min(self.started + self.timeout, at_rate)

    def expire(self) -> None:
        """Past the deadline: later reads fail, and a blocked one is woken (the socket's reading side shut)."""
        if self.expired:
            return
        self.expired = True
        log.warning("a request body did not arrive in time: %d bytes in %.1f s", self.received, time.monotonic() - self.started)
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass

    def _timeout(self) -> BodyTimeout:
        return BodyTimeout(f"the request body did not arrive within {self.timeout:g} seconds "
                           f"(or at {self.min_rate:g} bytes a second)")

    def _guarded(self, read, size):
        if self.expired:
            raise self._timeout()
        self._asked = size if size and size > 0 else PIECE
        now = time.monotonic()
        if now >= self.read_deadline():
            self.expire()
            raise self._timeout()
        if self.sock is not None:
            try:
                self.sock.settimeout(max(self.read_deadline() - now, 0.01))
            except OSError:
                pass
        self.reading = True
        try:
            data = read(size)
        except OSError as exc:
            if self.expired or time.monotonic() >= self.read_deadline():
                self.expire()
                raise self._timeout() from exc
            raise
        finally:
            self.reading = False
            self._asked = 0
        if self.expired:  # woken by the watchdog: what came is partial
            raise self._timeout()
        self.received += len(data)
        return data

    def read(self, size=-1):
        parts = []
        left = size if size is not None and size >= 0 else None
        while left is None or left > 0:
            data = self._guarded(self.stream.read, PIECE if left is None else min(left, PIECE))
            if not data:
                break
            parts.append(data)
            if left is not None:
                left -= len(data)
        return b"".join(parts)

    def readline(self, size=-1):
        return self._guarded(self.stream.readline, size)

    def readlines(self, hint=-1):
        return list(iter(self.readline, b""))

    def __iter__(self):
        return iter(self.readline, b"")

    def close(self) -> None:
        """The request is over: no more watching; the socket's own timeout back."""
        _watchdog.discard(self)
        if self.sock is not None and not self.expired:
            try:
                self.sock.settimeout(self._prior_timeout)
            except OSError:
                pass


def body_refused(environ) -> None:
    """An answer is made without reading the request's body (e.g. an upload over its limits): under
    gunicorn, shut the socket's reading side, so the server neither drains a body a client may
    trickle in for seconds nor keeps the connection alive; the answer is still sent."""
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def _has_body(environ) -> bool:
    if environ.get("HTTP_TRANSFER_ENCODING", "").strip():
        return True
    try:
        return int(environ.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return False


def timeout_for(environ) -> float:
    """The time limit of a request's body: uploads (multipart) get ``UPLOAD_BODY_TIMEOUT``, a part of a
    resumable upload (``application/octet-stream``, at most ``UPLOAD_PART_MAX_BYTES``)
    ``UPLOAD_PART_BODY_TIMEOUT``, any other body (JSON, a form) the small ``REQUEST_BODY_TIMEOUT``."""
    content_type = environ.get("CONTENT_TYPE", "").lower()
    if content_type.startswith("multipart/"):
        return settings.UPLOAD_BODY_TIMEOUT
    if content_type.startswith("application/octet-stream"):
        return settings.UPLOAD_PART_BODY_TIMEOUT
    return settings.REQUEST_BODY_TIMEOUT


def _timed_out_answer(environ, body: DeadlineInput):
    message = (f"The request body did not arrive in time: at most {body.timeout:g} seconds, and at least "
               f"{body.min_rate / 1024:g} KB a second after the first {body.grace:g} seconds. Nothing was kept.")
    if environ.get("PATH_INFO", "").startswith("/api/"):
        return "application/json", json.dumps(error_body(408, "request_timeout", message)).encode()
    return "text/plain; charset=utf-8", message.encode()


class BodyDeadlineMiddleware:
    """WSGI middleware: every request body within its deadline (see the module's docstring)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if not _has_body(environ) or "wsgi.input" not in environ:
            return self.app(environ, start_response)
        body = DeadlineInput(
            environ["wsgi.input"], timeout=timeout_for(environ), min_rate=settings.BODY_MIN_RATE,
            grace=settings.BODY_RATE_GRACE, sock=environ.get("gunicorn.socket"),
        )
        environ["wsgi.input"] = body
        answer, writes = [], []

        def held(status, headers, exc_info=None):  # the answer is sent once the body's fate is known
            answer[:] = [status, headers, exc_info]
            return write

        def write(data):  # the legacy write() callable (Django does not use it)
            if not writes:
                writes.append(start_response(*answer))
            writes[0](data)

        try:
            result = self.app(environ, held)
        except Exception:
            if not body.expired:
                raise
            result = None
        finally:
            body.close()
        if not body.expired:
            if not writes:
                start_response(*answer)
            return result
        if result is not None and hasattr(result, "close"):
            result.close()  # the application's own answer (a 400, a 403 without the form's token): not sent
        content_type, payload = _timed_out_answer(environ, body)
        start_response("408 Request Timeout", [("Content-Type", content_type), ("Content-Length", str(len(payload))),
                                               ("Connection", "close")])
        return [payload]
