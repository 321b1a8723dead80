"""The baseline's WSGI application, served by ``bench.load`` with the product's gunicorn command."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.load.baseline.settings")
application = get_wsgi_application()
