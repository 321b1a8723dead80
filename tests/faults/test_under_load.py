"""The fault test under load (``tests/faults/under_load.py``): buyers purchase while a release
worker is killed, Redis is down for 10 s, the database's sessions are terminated and a Parquet
file that expands to 1 GB is uploaded; then no charge was answered 5xx, every purchase is final
(released, or failed and refunded), every invariant holds and releases stayed fast during the
upload. About 3 minutes, on servers of its own (a database named after DATABASE_URL's with
``_under_load``, a redis-server on a spare port); the figures go to the test's tmp dir and, when
``FAULTS_JSON`` names a file, there too (e.g. ``bench/results/faults.json``).
"""

import os
import shutil
from pathlib import Path

import pytest

from .conftest import needs_services
from .load_checks import print_summary
from .under_load import config_from_database_url, run, write_json

pytestmark = [
    needs_services,
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server (a Redis of its own to stop)"),
]


def test_faults_under_load(tmp_path):
    config = config_from_database_url(os.environ["DATABASE_URL"])
    report = run(config, tmp_path / "faults")
    write_json(report, tmp_path / "faults.json")
    if os.environ.get("FAULTS_JSON"):
        write_json(report, Path(os.environ["FAULTS_JSON"]))
    print_summary(report)
    failed = [f"{name}: {check['detail']}" for name, check in report["checks"].items() if not check["ok"]]
    assert not failed, "\n".join(failed)

