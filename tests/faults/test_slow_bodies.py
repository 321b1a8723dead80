"""Slow uploads under a real gunicorn (production settings, market/gunicorn_conf.py): 20 connections
from one owner's key, each announcing a 2 GB multipart upload and sending a byte a second, do not
stop a GET of the API from being answered at once; each slow request ends by its deadline (408),
or at once (429) past the owner's upload slots."""

from __future__ import annotations

import http.client
import os
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from market.accounts.services import api_key_create

from .conftest import ROOT, database_url, needs_services, owner, users  # noqa: F401 - fixtures

DEADLINE = 4.0
SLOW = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gunicorn(transactional_db):
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_ENV": "production", "DJANGO_SECRET_KEY": settings.SECRET_KEY, "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "0", "DEMO_MODE": "0", "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL, "API_KEY_PEPPER": settings.API_KEY_PEPPER,
        "GUNICORN_WORKERS": "1", "GUNICORN_THREADS": "4", "UPLOAD_BODY_TIMEOUT": str(DEADLINE),
        "UPLOAD_MAX_CONCURRENT_PER_OWNER": "2", "UPLOAD_MAX_CONCURRENT": "4",
        **{f"THROTTLE_{scope}": "100000/minute" for scope in ("USER", "ANON", "PURCHASES", "AUTH")},
    }
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / "slow-bodies-gunicorn.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "market.wsgi:application", "-c", "market/gunicorn_conf.py",
         "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log, stderr=log,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, "gunicorn exited; see slow-bodies-gunicorn.log"
            try:
                if _get(port)[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _get(port) -> tuple[int, float]:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/api/v1/listings/?page_size=1")
    status = conn.getresponse().status
    conn.close()
    return status, time.monotonic() - started


def _slow_upload(port, token) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/v1/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {token}\r\n".encode()
        + b"Content-Type: multipart/form-data; boundary=xyz\r\nContent-Length: 2147483648\r\n\r\n--xyz\r\n"
    )
    return sock


@needs_services
def test_slow_uploads_hold_no_thread_past_their_deadline(gunicorn, owner):
    cache.clear()  # no upload slot left from another run
    _, token = api_key_create(user=owner, name="slow")
    started = time.monotonic()
    open_ = {_slow_upload(gunicorn, token): i for i in range(SLOW)}
    answers: dict[int, tuple[int, float]] = {}
    gets = []
    poller = selectors.DefaultSelector()
    for sock in open_:
        poller.register(sock, selectors.EVENT_READ)
    next_byte = time.monotonic() + 1
    while open_ and time.monotonic() - started < DEADLINE + 10:
        if not gets and time.monotonic() - started > 1.0:
            gets.append(_get(gunicorn))  # while the slow bodies are arriving
        for key, _ in poller.select(timeout=0.1):
            sock = key.fileobj
            data = b""
            try:
                data = sock.recv(4096)
            except OSError:
                pass
            status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1") else 0
            answers[open_.pop(sock)] = (status, time.monotonic() - started)
            poller.unregister(sock)
            sock.close()
        if time.monotonic() >= next_byte:
            next_byte += 1
            for sock in list(open_):
                try:
                    sock.send(b"-")  # one byte a second
                except OSError:
                    pass
    for sock in open_:
        sock.close()
    assert not open_, f"{len(open_)} slow requests still open after {DEADLINE + 10} s"
    assert gets and gets[0][0] == 200 and gets[0][1] < 2.0, gets
    statuses = sorted(status for status, _ in answers.values())
    assert statuses == [408] * 2 + [429] * (SLOW - 2), statuses  # two uploads at once per owner, each to its deadline
    assert all(at < DEADLINE + 2 for _, at in answers.values()), answers
    assert all(at < 2 for status, at in answers.values() if status == 429), answers
    assert _get(gunicorn)[0] == 200
