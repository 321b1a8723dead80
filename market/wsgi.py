import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

from market.core.bodies import BodyDeadlineMiddleware  # noqa: E402 - after the settings module is named

# every request body within its deadline: a slow client never holds a web thread (market/core/bodies.py)
application = BodyDeadlineMiddleware(get_wsgi_application())
