"""A process that has not loaded its tasks modules yet (a new web worker) hands the first purchases'
release tasks to the broker even when many threads send at once: each finds its task by name
(``market.core.queueing.task``). Before, Celery's autodiscovery ran in the first thread only, and
the threads that asked meanwhile got "never registered": their purchases waited for the sweeper.
Run in a process of its own, as only a fresh process shows it. No database or broker is used."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, threading
os.environ["DJANGO_SETTINGS_MODULE"] = "market.settings"
import django
django.setup()
import sys
from market.core import queueing
assert "market.trading.tasks" not in sys.modules  # the process has not loaded its tasks yet
n = 8
barrier, found, errors = threading.Barrier(n), [], []
def send():
    barrier.wait()
    try:
        found.append(queueing.task("trading.release_purchase").name)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=send) for _ in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"found": found, "errors": errors}))
"""


def test_threads_of_a_fresh_process_all_find_the_release_task():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DJANGO_SECRET_KEY": "test"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # (without the lock, 6 or 7 of the 8 threads failed, in each of 5 tries)
    assert result == {"found": ["trading.release_purchase"] * 8, "errors": []}
