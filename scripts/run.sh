#!/usr/bin/env bash
# Installs what runs the marketplace (requirements.txt) into .venv, prepares the database with
# demo data, and runs the marketplace: the web server on http://$HOST:$PORT (default
# http://127.0.0.1:8000), a Celery worker for releases (with the sweepers' schedule), one
# for webhooks and one reading uploaded datasets, then prints the address to open once its
# own server answers (its process, its token). A port already taken stops it before it
# installs or starts anything. Ctrl-C stops them all.
# With DATABASE_URL and REDIS_URL set it uses PostgreSQL and Redis; without,
# SQLite and a broker on the file system. The demo runs with DEBUG off (its
# visitors see the site's own 404 and 500 pages, never Django's debug pages);
# DJANGO_DEBUG=1 turns it on while developing.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
host=${HOST:-127.0.0.1}
port=${PORT:-8000}
# the port first, before installing or starting anything: taken by another program, stop here
if ! "$python" - "$host" "$port" <<'PY'
import errno, socket, sys

host, port = sys.argv[1].strip("[]"), sys.argv[2]
if not port.isdigit() or not 0 < int(port) < 65536:
    sys.exit(f"PORT={port} is not a port number (1 to 65535)")
try:
    addresses = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
except OSError as exc:
    sys.exit(f"HOST={host} is not an address of this machine ({exc})")
for family, kind, proto, _, address in addresses:
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
        try:
            s.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                sys.exit(f"port {port} is in use by another program; set PORT=... to use another")
            sys.exit(f"cannot listen on {host}:{port}: {exc.strerror}")
PY
then
    exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
# what runs the marketplace only (tests and tooling: requirements-test.txt, scripts/test.sh)
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
# without REDIS_URL: a broker folder of the demo's own (market/settings.py), never the tests' (they use a
# temporary one), so these workers never take a test's tasks
export BROKER_FOLDER="${BROKER_FOLDER:-$PWD/.broker/run}"
mkdir -p "$BROKER_FOLDER"
export DEMO_MODE="${DEMO_MODE:-1}"
export DJANGO_DEBUG="${DJANGO_DEBUG:-0}"
# static files as production serves them: hashed names cached for a year, gzip copies (market/settings.py)
export STATIC_COLLECTED="${STATIC_COLLECTED:-1}"
[ "$STATIC_COLLECTED" = 0 ] || .venv/bin/python manage.py collectstatic --noinput --verbosity 0
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py seed_demo
.venv/bin/celery -A market.celery:app worker --beat --schedule "$BROKER_FOLDER/beat-schedule" \
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
log=$(mktemp "${TMPDIR:-/tmp}/gradual-server.XXXXXX")
stop() {
    trap - EXIT INT TERM
    kill $server "$worker" "$hooks" "$ingester" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$worker" 2>/dev/null || kill -0 "$hooks" 2>/dev/null || kill -0 "$ingester" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL "$worker" "$hooks" "$ingester" 2>/dev/null || true  # a worker stuck in its warm shutdown after 10 s
    wait 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT INT TERM
# a random token for this run, which only this server echoes (at /-/run-token): "ready" means its answer
token=$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(16))')
# --nostatic: WhiteNoise serves the collected files (runserver's own handler would serve the sources)
GRADUAL_RUN_TOKEN=$token .venv/bin/python manage.py runserver --noreload --nostatic "$host:$port" > >(tee -a "$log") 2>&1 &
server=$!
# the address to open: a wildcard host listens on every interface, this machine's included
case "$host" in
    0.0.0.0 | "::" | "[::]") shown=127.0.0.1 ;;
    *:*) shown="[${host#[}"; shown="${shown%]}]" ;;
    *) shown=$host ;;
esac
url="http://$shown:$port/"
# ready when this server process is alive and the token comes back from it; if it exits first, its last
# lines say why (scripts/ready.py)
if ! .venv/bin/python scripts/ready.py "$url" "$token" "$server" "$log"; then
    exit 1
fi
echo "Gradual is ready: open $url"
wait "$server"
