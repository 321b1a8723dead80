"""The suite's root: tiers by folder, the shared fixture plugins, and the fixtures every folder uses.

Configuration is in pytest.ini (markers, ``--strict-markers``, the test settings module
``market.settings_test``); docs/testing.md describes the tiers. Nothing here edits the environment or
imports Django: ``pytest tests/engine -p no:django`` runs the engine's tests without it."""

import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent

#: folders whose every test is in a tier (the marker), besides any mark of its own
FOLDER_TIERS = {
    "browser": ("browser", "services"),  # Chromium, a live server and a Celery worker
    "faults": ("services",),  # real PostgreSQL, Redis, worker processes, redis-server
    "bench": ("services", "slow"),  # load against gunicorn and workers
    "clients": ("services",),
    "spark": ("services",),  # a Spark session (local[2], a JVM) and an S3 server on loopback  # the client against a live server and a Celery worker
    "fuzz": ("slow",),  # the API fuzzed from its schema: minutes
}
#: fixtures that start a real Celery worker (tests/fixtures/workers.py) or use a real broker
SERVICE_FIXTURES = {"worker", "late_worker", "workers", "broker"}


def _django_configured() -> bool:
    """pytest-django sets Django up before conftests load; under ``-p no:django`` nothing does."""
    conf = sys.modules.get("django.conf")
    return bool(conf and conf.settings.configured)


# fixtures shared across folders (instead of conftests importing each other's): only with Django
pytest_plugins = ["tests.fixtures.market", "tests.fixtures.workers"] if _django_configured() else []


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
        for marker in FOLDER_TIERS.get(parts[0], ()) if len(parts) > 1 else ():
            item.add_marker(marker)
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("services")


@pytest.fixture
def rng(request):
    """A generator with a fixed seed derived from the test's name (tests only)."""
    seed = sum(map(ord, request.node.nodeid)) * 7919 + 20261121
    return np.random.default_rng(seed)


@pytest.fixture
def report(capsys):
    """Print a figure into the test output even when pytest captures it."""

    def _report(*lines):
        with capsys.disabled():
            for line in lines:
                print(f"\n    {line}", end="")
            print()

    return _report
