#!/usr/bin/env bash
# Installs what is needed into .venv, prepares the database with demo data, and
# runs the marketplace: the web server on http://127.0.0.1:8000 and a Celery
# worker (with the sweeper's schedule). Ctrl-C stops both.
# With DATABASE_URL and REDIS_URL set it uses PostgreSQL and Redis; without,
# SQLite and a broker on the file system.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
export DEMO_MODE="${DEMO_MODE:-1}"
# static files as production serves them: hashed names cached for a year, gzip copies (market/settings.py)
export STATIC_COLLECTED="${STATIC_COLLECTED:-1}"
[ "$STATIC_COLLECTED" = 0 ] || .venv/bin/python manage.py collectstatic --noinput --verbosity 0
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py seed_demo
mkdir -p .broker
.venv/bin/celery -A market.celery:app worker --beat --schedule .broker/beat-schedule \
    --loglevel=INFO --concurrency=2 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT INT TERM
# --nostatic: WhiteNoise serves the collected files (runserver's own handler would serve the sources)
.venv/bin/python manage.py runserver --nostatic "${HOST:-127.0.0.1}:${PORT:-8000}"
