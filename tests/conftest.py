import atexit
import os
import shutil
import tempfile

import django
import numpy as np
import pytest

# Django for the marketplace's tests (the engine's tests need none). Set up at
# import, before the conftests below this folder import models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
# a file-system broker folder of the tests' own, one per test session, never the demo's
# .broker/run (scripts/run.sh): a running demo's workers must not take the tests' tasks. Worker processes
# started by tests inherit it.
if not os.environ.get("BROKER_FOLDER"):
    os.environ["BROKER_FOLDER"] = tempfile.mkdtemp(prefix="gradual-test-broker-")
    atexit.register(shutil.rmtree, os.environ["BROKER_FOLDER"], ignore_errors=True)
# generous limits so that tests exercise behaviour, not the throttle
for scope in ("USER", "ANON", "PURCHASES", "AUTH"):
    os.environ.setdefault(f"THROTTLE_{scope}", "100000/minute")
django.setup()


@pytest.fixture(scope="session", autouse=True)
def _fresh_cache():
    """Start from an empty cache: sign-in lockouts and throttle counts kept in Redis by an
    earlier run must not decide this one's answers."""
    from django.core.cache import cache

    cache.clear()


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


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests create many users: a fast hasher instead of PBKDF2's deliberate slowness."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_configure(config):
    config.addinivalue_line("markers", "queued_datasets: datasets are processed on commit, as in production")


@pytest.fixture(autouse=True)
def _datasets_processed_at_once(request, monkeypatch):
    """A test's transaction never commits, so an uploaded dataset's processing (queued on commit)
    would never run: it runs at once instead, in place of the queuing. Tests of the queuing itself
    are marked ``queued_datasets`` and commit with ``django_capture_on_commit_callbacks``."""
    if request.node.get_closest_marker("queued_datasets"):
        return
    from market.catalog import services

    monkeypatch.setattr(services, "_queue_on_commit", lambda pk, job: services.dataset_process(dataset_id=pk, job=job))
