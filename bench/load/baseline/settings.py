"""Settings of the baseline project: production-like, and the product's database settings.

``DATABASE_URL`` (PostgreSQL in the bench; SQLite works for a test), ``REDIS_URL`` (Celery's broker and
the waits; without it tasks run eagerly, for a test), ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``,
``DB_LOCK_TIMEOUT_MS`` as in ``market/settings.py``; Celery acknowledges late, prefetches one, as the product.
"""

import os

import dj_database_url

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or "baseline-only-" + "x" * 40
DEBUG = False
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1").split(",") if h.strip()]
ALLOWED_HOSTS.append("testserver")

INSTALLED_APPS = ["rest_framework", "bench.load.baseline"]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
ROOT_URLCONF = "bench.load.baseline.urls"
WSGI_APPLICATION = "bench.load.baseline.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True

# as market/settings.py: persistent connections (60 s) with a health check, and a lock timeout
DATABASES = {"default": dj_database_url.config(default="sqlite:///:memory:", conn_max_age=60, conn_health_checks=True)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = (
        f"-c lock_timeout={int(os.environ.get('DB_LOCK_TIMEOUT_MS', '3000'))}"
    )

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["bench.load.baseline.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": [],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,  # django.contrib.auth is not installed
}

REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ROUTES = {"baseline.release": {"queue": "releases"}}
WAIT_MAX = 10.0  # seconds a Prefer: wait may hold a request

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
