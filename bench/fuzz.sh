#!/usr/bin/env bash
# A deeper schemathesis run than CI's (tests/fuzz/test_schema_fuzz.py): more examples per
# operation and longer stateful scenarios. Same checks; any failure is a bug to fix at its root.
#   FUZZ_MAX_EXAMPLES=1000 bash bench/fuzz.sh        (default 500; CI runs 25)
# Uses DATABASE_URL / REDIS_URL when set (PostgreSQL and Redis, as CI), else SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-500}"
PYTHON="${PYTHON:-.venv/bin/python}"
echo "fuzzing with FUZZ_MAX_EXAMPLES=$FUZZ_MAX_EXAMPLES"
exec "$PYTHON" -m pytest -p no:cacheprovider -q tests/fuzz "$@"
