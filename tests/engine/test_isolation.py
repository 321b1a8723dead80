"""The mathematics imports without Django, so it runs and benchmarks alone."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_engine_modules_do_not_import_django():
    code = (
        "import sys, releases.engine.mechanism, releases.engine.mechanisms, releases.engine.path, releases.engine.postprocess;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'django');"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
