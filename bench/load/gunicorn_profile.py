"""Gunicorn config of ``bench.load --profile``: profile each worker's requests
(``bench.load.server_profile.WsgiProfiler``) and write the figures when it exits.
Every other setting is production's (``market/gunicorn_conf.py``) or the command line's."""

from bench.load.server_profile import WsgiProfiler
from market.gunicorn_conf import *  # noqa: F401,F403 - production's settings, then the profiler's hooks


def post_worker_init(worker):
    worker.wsgi = WsgiProfiler(worker.wsgi, role="web")


def worker_exit(server, worker):
    if isinstance(getattr(worker, "wsgi", None), WsgiProfiler):
        worker.wsgi.dump()
