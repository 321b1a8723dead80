"""Settings for the test suite: the marketplace's settings (``market.settings``, read from the same
environment), with what tests need instead of editing the environment in a conftest.

pytest reads this module (``DJANGO_SETTINGS_MODULE`` in ``pytest.ini``), and so do the worker processes
tests start (they inherit that variable). Under pytest-xdist each test process (``PYTEST_XDIST_WORKER``
= gw0, gw1, ...) gets its own broker folder, media folder and Redis database, so parallel processes never
take each other's tasks, files or cache entries; the database is per process already (pytest-django adds
the worker's name to the test database's)."""

import os
import re

from market.settings import *  # noqa: F401,F403 - the marketplace's settings, overridden below
from market.settings import BASE_DIR, CACHES, CELERY_BROKER_TRANSPORT_OPTIONS, REDIS_URL, REST_FRAMEWORK, STORAGES

#: gw0, gw1, ... under pytest-xdist; "main" in a single process
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
_INDEX = int(WORKER[2:]) if WORKER.startswith("gw") and WORKER[2:].isdigit() else 0

# tests create many users: a fast hasher instead of PBKDF2's deliberate slowness
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# generous limits, so that tests exercise behaviour, not the throttle (the throttle's own tests set
# their rates with the ``settings`` fixture)
_GENEROUS = "100000/minute"
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": dict.fromkeys(REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], _GENEROUS)}


def _redis_database(url: str, index: int) -> str:
    """The same Redis server, database number + index (mod 16): each xdist process has its own."""
    match = re.match(r"^(redis://[^/]*)(?:/(\d+))?(.*)$", url)
    if not match or index == 0:
        return url
    base = int(match.group(2) or 0)
    return f"{match.group(1)}/{(base + index) % 16}{match.group(3)}"


if REDIS_URL:
    REDIS_URL = _redis_database(REDIS_URL, _INDEX)
    CELERY_BROKER_URL = REDIS_URL
    CACHES = {"default": {**CACHES["default"], "LOCATION": REDIS_URL}}

# the tests' own broker folder (never the one ``scripts/run.sh``'s marketplace uses), one per process
BROKER_DIR = BASE_DIR / ".broker-tests" / WORKER
if not REDIS_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **CELERY_BROKER_TRANSPORT_OPTIONS,
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
    }
    for _folder in ("queue", "processed", "control"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)

# the tests' own media folder, one per process, unless the run names one (or files go to S3)
if not os.environ.get("MEDIA_ROOT"):
    MEDIA_ROOT = BASE_DIR / ".media-tests" / WORKER
    if STORAGES["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage":
        STORAGES = {**STORAGES, "default": {**STORAGES["default"], "OPTIONS": {**STORAGES["default"].get("OPTIONS", {}), "location": MEDIA_ROOT}}}
