#!/usr/bin/env bash
# Installs what is needed into .venv, then runs the engine benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
exec .venv/bin/python -m bench.engine "$@"
