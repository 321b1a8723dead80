#!/usr/bin/env bash
# Installs what the test suite needs into .venv, then runs the whole suite.
# Extra arguments go to pytest (for example: bash scripts/test.sh -k relax).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
exec .venv/bin/python -m pytest tests "$@"
