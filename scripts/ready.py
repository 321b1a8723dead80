"""scripts/run.sh's readiness probe: waits until the web server the script started answers.

    python scripts/ready.py URL TOKEN PID LOG

Ready means the answer at ``URL + "-/run-token"`` is ``TOKEN``, the per-run random value the script gave its
server (market/web/site_views.py): another program on the port cannot know it. While waiting, the server
process ``PID`` must stay alive; if it exits, this says so with the last lines of its output (``LOG``) and
exits non-zero. Only the standard library: it runs before anything else is known to work.
"""

import os
import sys
import time
import urllib.error
import urllib.request


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child that has exited but not yet been reaped is a zombie: dead for us
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def last_lines(path: str, n: int = 20) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def answer(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read(200).decode("utf-8", "replace")
    except urllib.error.HTTPError:
        return None  # something answers, but not with the token
    except OSError:
        return None


def main(url: str, token: str, pid: int, log: str) -> int:
    probe = url.rstrip("/") + "/-/run-token"
    while True:
        if answer(probe) == token and alive(pid):
            return 0
        if not alive(pid):
            lines = last_lines(log)
            print("the web server stopped during start-up" + ("; its last lines:\n" + lines if lines else ""),
                  file=sys.stderr, end="" if lines.endswith("\n") else "\n")
            return 1
        time.sleep(0.2)


if __name__ == "__main__":
    url, token, pid, log = sys.argv[1:5]
    sys.exit(main(url, token, int(pid), log))
