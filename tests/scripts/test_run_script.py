"""scripts/run.sh, the first run: it stops with a clear message when its port is taken (before installing or
starting anything), its readiness probe (scripts/ready.py) is not fooled by another program answering on the
port, and the demo's file broker folder is its own, never the tests'."""

import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class _Answers(BaseHTTPRequestHandler):
    """Another program's web server: 200 and the same body for any path."""

    body = b"<html>someone else's site</html>"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def other_server():
    """An HTTP server on a free port of 127.0.0.1 that answers every request; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_taken_port_stops_the_run_with_a_clear_message_and_starts_nothing(other_server, tmp_path):
    """A copy of the script in an empty folder: had it gone past the port check it would have made a .venv
    there and installed into it (the old script went on, said "ready" on the other program's answer)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    port = other_server.server_address[1]
    env = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "run.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"port {port} is in use by another program; set PORT=... to use another" in done.stderr
    assert "ready" not in out.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scripts"]  # no .venv, no database, no broker folder


def test_the_readiness_probe_is_not_fooled_by_another_server_on_the_port(other_server, tmp_path):
    """The probe's server process exits (as runserver does when it cannot bind) while another program answers
    200 on the port: not ready, and the server's last lines are shown."""
    log = tmp_path / "server.log"
    log.write_text("Performing system checks...\nError: That port is already in use.\n")
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])  # never reaped: a zombie
    url = f"http://127.0.0.1:{other_server.server_address[1]}/"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "ready.py"), url, "a-token", str(ours.pid),
                           str(log)], capture_output=True, text=True, timeout=60)
    ours.wait()
    assert done.returncode == 1
    assert "the web server stopped during start-up" in done.stderr
    assert "Error: That port is already in use." in done.stderr
    assert "ready" not in done.stdout.lower()


class _Echoes(_Answers):
    """A server that knows the token: the script's own."""

    def do_GET(self):
        self.body = b"the-token" if self.path == "/-/run-token" else b"a page"
        super().do_GET()


def test_the_readiness_probe_accepts_its_own_servers_token(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echoes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "ready.py"), url, "the-token",
                               str(alive.pid), str(tmp_path / "log")], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        wrong = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "ready.py"), url, "another-token",
                                  str(alive.pid), str(tmp_path / "log")], stdout=subprocess.PIPE)
        with pytest.raises(subprocess.TimeoutExpired):  # still waiting: a wrong token is never ready
            wrong.wait(timeout=2)
        wrong.kill()
        wrong.wait()
    finally:
        alive.kill()
        alive.wait()
        server.shutdown()
        server.server_close()


def test_the_server_echoes_the_run_token_only_when_the_script_set_one(client, settings):
    settings.RUN_TOKEN = "0123abcd"
    answer = client.get("/-/run-token")
    assert answer.status_code == 200 and answer.content == b"0123abcd"
    settings.RUN_TOKEN = ""
    assert client.get("/-/run-token").status_code == 404


def _broker_dir(**env):
    code = "import market.settings as s; print(s.BROKER_DIR)"
    environ = {k: v for k, v in os.environ.items() if k != "BROKER_FOLDER"} | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_demo_and_the_tests_use_different_broker_folders():
    from django.conf import settings

    assert _broker_dir() == str(ROOT / ".broker" / "run")  # the demo's (scripts/run.sh sets the same)
    assert _broker_dir(BROKER_FOLDER="/tmp/elsewhere") == "/tmp/elsewhere"
    # the tests' own, one per process (market/settings_test.py), outside the demo's .broker/
    assert settings.BROKER_DIR.is_relative_to(ROOT / ".broker-tests")
    assert not settings.BROKER_DIR.is_relative_to(ROOT / ".broker")
