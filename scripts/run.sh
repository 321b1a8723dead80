#!/usr/bin/env bash
# Installs what is needed into .venv, prepares the database with demo data, and
# runs the marketplace: the web server on http://$HOST:$PORT (default
# http://127.0.0.1:8000), a Celery worker for releases (with the sweepers' schedule), one
# for webhooks and one reading uploaded datasets, then prints the address to open once the
# server answers. Ctrl-C stops them all.
# With DATABASE_URL and REDIS_URL set it uses PostgreSQL and Redis; without,
# SQLite and a broker on the file system. The demo runs with DEBUG off (its
# visitors see the site's own 404 and 500 pages, never Django's debug pages);
# DJANGO_DEBUG=1 turns it on while developing.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
host=${HOST:-127.0.0.1}
port=${PORT:-8000}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
export DEMO_MODE="${DEMO_MODE:-1}"
export DJANGO_DEBUG="${DJANGO_DEBUG:-0}"
# static files as production serves them: hashed names cached for a year, gzip copies (market/settings.py)
export STATIC_COLLECTED="${STATIC_COLLECTED:-1}"
[ "$STATIC_COLLECTED" = 0 ] || .venv/bin/python manage.py collectstatic --noinput --verbosity 0
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py seed_demo
mkdir -p .broker
.venv/bin/celery -A market.celery:app worker --beat --schedule .broker/beat-schedule \
    --loglevel=INFO --concurrency=2 --queues=celery --hostname=releases@%h &
worker=$!
# webhooks on a worker of their own: a slow or failing receiver never holds up a release
.venv/bin/celery -A market.celery:app worker --loglevel=INFO --concurrency=2 --queues=webhooks --hostname=webhooks@%h &
hooks=$!
# uploaded datasets on a worker of their own, one at a time, within a memory budget (KiB for Celery),
# at a lower CPU priority: a large or hostile file never holds up a release (docs/operations.md, Ingestion)
nice -n 10 .venv/bin/celery -A market.celery:app worker --loglevel=INFO --concurrency=1 --queues=ingest --hostname=ingest@%h \
    --max-memory-per-child=$(( ${INGEST_MEMORY_BUDGET_MB:-512} * 1024 )) &
ingester=$!
server=
stop() {
    trap - EXIT INT TERM
    kill $server "$worker" "$hooks" "$ingester" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$worker" 2>/dev/null || kill -0 "$hooks" 2>/dev/null || kill -0 "$ingester" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL "$worker" "$hooks" "$ingester" 2>/dev/null || true  # a worker stuck in its warm shutdown after 10 s
    wait 2>/dev/null || true
}
trap stop EXIT INT TERM
# --nostatic: WhiteNoise serves the collected files (runserver's own handler would serve the sources)
.venv/bin/python manage.py runserver --noreload --nostatic "$host:$port" &
server=$!
# the address to open: a wildcard host listens on every interface, this machine's included
case "$host" in
    0.0.0.0 | "::" | "[::]") shown=127.0.0.1 ;;
    *:*) shown="[${host#[}"; shown="${shown%]}]" ;;
    *) shown=$host ;;
esac
url="http://$shown:$port/"
.venv/bin/python - "$url" "$server" <<'PY'
import os, sys, time, urllib.error, urllib.request

url, server = sys.argv[1], int(sys.argv[2])
while True:
    try:
        urllib.request.urlopen(url, timeout=5)
        break
    except urllib.error.HTTPError:
        break  # it answers
    except OSError:
        try:
            os.kill(server, 0)
        except OSError:
            sys.exit("the web server did not start")
        time.sleep(0.2)
PY
echo "Gradual is ready: open $url"
wait "$server"
