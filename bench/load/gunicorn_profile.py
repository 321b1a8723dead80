"""Gunicorn config of ``bench.load --profile``: profile each worker's requests
(``bench.load.server_profile.WsgiProfiler``) and write the figures when it exits.
Every other setting comes from the command line."""

from bench.load.server_profile import WsgiProfiler


def post_worker_init(worker):
    worker.wsgi = WsgiProfiler(worker.wsgi, role="web")


def worker_exit(server, worker):
    if isinstance(getattr(worker, "wsgi", None), WsgiProfiler):
        worker.wsgi.dump()
