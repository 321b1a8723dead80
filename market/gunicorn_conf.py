"""Gunicorn's production settings: ``gunicorn market.wsgi:application -c market/gunicorn_conf.py``.

Threads (gthread), so that a buyer waiting on ``Prefer: wait`` holds an idle thread, not a
process. What a slow or greedy client may hold is bounded in the application
(``market/core/bodies.py``: a body's deadline; ``market/web/edge.py``: upload slots;
``market/trading/waits.py``: open waits) and here: the request line and headers' sizes, and
the keep-alive of an idle connection. Every value can be set from the environment
(``GUNICORN_*``) or overridden on the command line. See docs/operations.md, "Web servers".
"""

import os


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = _int("GUNICORN_WORKERS", 2)
#: the settings read the same variable (WEB_THREADS): at most half of them hold a Prefer: wait
threads = _int("GUNICORN_THREADS", 8)
#: a worker silent this long (all its threads stuck) is killed and replaced
timeout = _int("GUNICORN_TIMEOUT", 120)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 20)
keepalive = _int("GUNICORN_KEEPALIVE", 30)
backlog = _int("GUNICORN_BACKLOG", 2048)
#: connections each worker keeps (in use or idle in keep-alive)
worker_connections = _int("GUNICORN_WORKER_CONNECTIONS", 1000)
#: a request line, a header count and a header's size past which the answer is 400, before Django
limit_request_line = _int("GUNICORN_LIMIT_REQUEST_LINE", 4094)
limit_request_fields = _int("GUNICORN_LIMIT_REQUEST_FIELDS", 100)
limit_request_field_size = _int("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", 8190)
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")
