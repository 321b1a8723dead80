#!/usr/bin/env bash
# Installs what the test suite needs into .venv (requirements-test.txt), then runs a tier of it
# (docs/testing.md):
#   bash scripts/test.sh          the default tier: not browser, not services, not slow; statistical
#                                 tests at the quick Monte Carlo size; parallel (pytest-xdist)
#   bash scripts/test.sh --all    everything: the parallel-safe tests in parallel, then the browser
#                                 and services tiers in one process
# Extra arguments go to pytest (for example: bash scripts/test.sh tests/engine -k relax; a folder
# of the browser or services tiers needs --all: bash scripts/test.sh --all tests/browser). TEST_PROCESSES sets
# the number of parallel processes (default: auto, one per core).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
all=0
if [ "${1:-}" = "--all" ]; then
    all=1
    shift
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
if [ "$all" = 1 ]; then  # the services tier's Spark backend and S3 server (requirements-services.txt)
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-services.txt
fi
processes=${TEST_PROCESSES:-auto}
if [ "$all" = 0 ]; then
    exec .venv/bin/python -m pytest -m "not browser and not services and not slow" -n "$processes" "$@"
fi
# pytest's exit status 5 is "no test selected" (say, --all tests/browser has no parallel part)
run() { local rc=0; .venv/bin/python -m pytest "$@" || rc=$?; [ "$rc" = 5 ] && rc=0; return "$rc"; }
status=0
run -m "not browser and not services" -n "$processes" "$@" || status=$?
# browser and services tests start servers, workers and processes of their own: one at a time
run -m "browser or services" "$@" || status=$?
exit "$status"
