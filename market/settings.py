"""Settings, all from the environment (cookiecutter-django style).

``DJANGO_ENV``        ``development`` (default) or ``production``
``DJANGO_SECRET_KEY`` required in production
``DATABASE_URL``      e.g. ``postgres://user@host:5432/name``; default: SQLite in the project folder
``REDIS_URL``         Celery broker and shared cache; default: a broker on the file system
``REDIS_COOLDOWN``, ``REDIS_CONNECT_TIMEOUT``, ``REDIS_SOCKET_TIMEOUT`` the cache's breaker and
                      timeouts (market/core/cache.py, docs/operations.md)
``BROKER_FOLDER``     the file-system broker's folder when REDIS_URL is unset; default ``.broker/run``
``DJANGO_ALLOWED_HOSTS`` comma-separated, production only
``DB_LOCK_TIMEOUT_MS`` PostgreSQL: the longest wait for a row lock (default 3000)
``GRADUAL_ENCRYPTION_KEYS`` keys for encryption at rest: ``id:base64-32-bytes,...``, the first seals
                      (market/core/crypto.py); unset: a key derived from the secret key (development only)
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


ENVIRONMENT = os.environ.get("DJANGO_ENV", "development")
PRODUCTION = ENVIRONMENT == "production"
DEBUG = env_bool("DJANGO_DEBUG", not PRODUCTION)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production")
    SECRET_KEY = "insecure-development-key-never-use-in-production-0123456789abcdef"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "" if PRODUCTION else "localhost,127.0.0.1,[::1],testserver")

INSTALLED_APPS = [
    "django.contrib.admin",
    # before django.contrib.auth: its changepassword command (which revokes API keys) overrides Django's
    "market.accounts",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "market.core",
    "market.catalog",
    "market.ledger",
    "market.trading",
    "market.trust",
    "releases",
    "market.webhooks",
    "market.web",
    "market.api",
]

MIDDLEWARE = [
    "market.core.timing.ServerTimingMiddleware",  # first: its figure covers everything below it
    "market.core.outages.RetryReadsMiddleware",  # a read whose database connection was lost runs once more
    "django.middleware.security.SecurityMiddleware",
    "market.core.csp.ContentSecurityPolicyMiddleware",  # on every response, static files included
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "market.web.edge.UploadSlotMiddleware",  # before CSRF: an upload over its limits is refused before its body is read
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "market.web.middleware.NotFoundMiddleware",
    "market.api.middleware.ApiHeadersMiddleware",  # RateLimit-*, Deprecation/Sunset on API answers
]

ROOT_URLCONF = "market.urls"
WSGI_APPLICATION = "market.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # {{ x|level }} everywhere: levels shown without trailing zeros or exponent
            "builtins": ["market.web.templatetags.levels"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "market.web.context.marketplace",
            ],
        },
    }
]

# --- database: PostgreSQL through psycopg 3, or SQLite with nothing installed
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=60, conn_health_checks=True
    )
}
#: how long a statement waits for a row lock before giving up (PostgreSQL); the services run a
#: transaction that gave up again (market.core.locks.retrying), then answer 409 with Retry-After
DB_LOCK_TIMEOUT_MS = int(os.environ.get("DB_LOCK_TIMEOUT_MS", "3000"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = f"-c lock_timeout={DB_LOCK_TIMEOUT_MS}"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # one writer at a time, waiting instead of failing, so web and worker can share the file
    DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 30}
    DATABASES["default"]["CONN_MAX_AGE"] = 0

# --- Celery: Redis when REDIS_URL is set, else a broker that needs no server
REDIS_URL = os.environ.get("REDIS_URL", "")
#: the file-system broker's folder (without REDIS_URL): ``BROKER_FOLDER``, default ``.broker/run`` (the demo's,
#: scripts/run.sh); the tests set a temporary folder of their own, so a running demo never takes their tasks
BROKER_DIR = Path(os.environ.get("BROKER_FOLDER") or BASE_DIR / ".broker" / "run").resolve()
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        # a task not acknowledged this long after delivery (its worker died) is
        # delivered again; it must exceed the longest release (milliseconds here)
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "600")),
        # how often workers look for such tasks: every interval x throttle seconds
        "unacked_restore_interval": float(os.environ.get("CELERY_UNACKED_RESTORE_INTERVAL", "10")),
        "unacked_restore_throttle": int(os.environ.get("CELERY_UNACKED_RESTORE_THROTTLE", "6")),
        # a hung Redis must not hold a purchase's answer: publishing gives up within these
        # (a worker's blocking pop waits 1 s at a time, well within them)
        "socket_connect_timeout": float(os.environ.get("REDIS_CONNECT_TIMEOUT", "0.5")),
        "socket_timeout": float(os.environ.get("CELERY_REDIS_SOCKET_TIMEOUT", "2")),
    }
    if REDIS_URL
    else {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
    }
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True  # a task is acknowledged when it has finished ...
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # ... and re-queued if its worker dies
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# a purchase must not hang when the broker is down: it stays queued and the sweeper sends it later
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
#: a release still pending after this many seconds is queued again by the sweeper (a lost task); a purchase
#: whose task could not be handed to the broker (``Purchase.unsent``) is sent by the next sweep, every
#: RELEASE_SWEEP_EVERY seconds (one indexed query), at most RELEASE_SWEEP_BATCH at a time
RELEASE_SWEEP_AFTER = int(os.environ.get("RELEASE_SWEEP_AFTER", "120"))
RELEASE_SWEEP_EVERY = float(os.environ.get("RELEASE_SWEEP_EVERY", "10"))
RELEASE_SWEEP_BATCH = int(os.environ.get("RELEASE_SWEEP_BATCH", "500"))
CELERY_BEAT_SCHEDULE = {
    # a sweep not started before the next one is due is dropped (expires): sweeps never pile up
    "sweep-pending-releases": {"task": "trading.sweep_pending", "schedule": RELEASE_SWEEP_EVERY,
                               "options": {"expires": RELEASE_SWEEP_EVERY}},
    "sweep-webhook-deliveries": {"task": "webhooks.sweep", "schedule": 60.0},
    # on the ingest queue, behind the files being read
    "sweep-processing-datasets": {"task": "catalog.sweep_processing", "schedule": 60.0, "options": {"expires": 60}},
    "sweep-preparing-listings": {"task": "catalog.sweep_preparing", "schedule": 60.0, "options": {"expires": 60}},
    # resumable uploads past their expiry, and their parts (market/catalog/chunks.py; on the ingest queue)
    "sweep-upload-sessions": {"task": "catalog.uploads_sweep", "schedule": 900.0, "options": {"expires": 900}},
}
# Three queues, each served by its own worker (scripts/run.sh, docs/operations.md): releases on the
# default "celery" queue; webhooks on "webhooks" (a slow receiver never holds up a release); reading
# uploaded datasets on "ingest" (a large or hostile file never holds up a release either)
CELERY_TASK_ROUTES = {"webhooks.*": {"queue": "webhooks"}, "catalog.*": {"queue": "ingest"}}

# --- cache (throttling, remembered API keys, sign-in failures): Redis when available so all
# processes share it, behind a circuit breaker (market/core/cache.py): a Redis error sends the
# process to its own memory for REDIS_COOLDOWN seconds, and a dead Redis costs milliseconds
CACHES = {
    "default": (
        {
            "BACKEND": "market.core.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                "COOLDOWN": float(os.environ.get("REDIS_COOLDOWN", "5")),
                "socket_connect_timeout": float(os.environ.get("REDIS_CONNECT_TIMEOUT", "0.5")),
                "socket_timeout": float(os.environ.get("REDIS_SOCKET_TIMEOUT", "0.5")),
            },
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# --- who is asking: proxies of our own in front of the app, each appending to
# X-Forwarded-For; 0 = none, the client is the socket's address (market/core/clients.py)
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_COUNT must be 0 (no proxy) or the number of trusted proxies")
# --- sign-ins limited per account, across addresses (market/accounts/signin.py): this many
# failures within the window lock the account for the lockout's seconds
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "10"))
LOGIN_FAILURE_WINDOW = int(os.environ.get("LOGIN_FAILURE_WINDOW", "900"))
LOGIN_LOCKOUT_SECONDS = int(os.environ.get("LOGIN_LOCKOUT_SECONDS", "900"))
if min(LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW, LOGIN_LOCKOUT_SECONDS) < 1:
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW and LOGIN_LOCKOUT_SECONDS must be at least 1")

# --- sign-ins limited per client address too (market/accounts/signin.py): after this many failed
# sign-ins from one address within the window, its attempts are refused (429) without looking at the password
LOGIN_ADDRESS_LIMIT = int(os.environ.get("LOGIN_ADDRESS_LIMIT", "30"))
LOGIN_ADDRESS_WINDOW = int(os.environ.get("LOGIN_ADDRESS_WINDOW", "900"))
if min(LOGIN_ADDRESS_LIMIT, LOGIN_ADDRESS_WINDOW) < 1:
    raise ImproperlyConfigured("LOGIN_ADDRESS_LIMIT and LOGIN_ADDRESS_WINDOW must be at least 1")

# --- the web edge: what a slow or greedy client may hold (docs/operations.md, "Web servers").
# Request bodies (market/core/bodies.py): an upload (multipart) must arrive within UPLOAD_BODY_TIMEOUT
# seconds, any other body (JSON, a form) within REQUEST_BODY_TIMEOUT; after BODY_RATE_GRACE seconds at
# an average of at least BODY_MIN_RATE bytes a second. Else 408, and the connection closes.
UPLOAD_BODY_TIMEOUT = float(os.environ.get("UPLOAD_BODY_TIMEOUT", "600"))
REQUEST_BODY_TIMEOUT = float(os.environ.get("REQUEST_BODY_TIMEOUT", "15"))
BODY_MIN_RATE = int(os.environ.get("BODY_MIN_RATE", str(64 * 1024)))
BODY_RATE_GRACE = float(os.environ.get("BODY_RATE_GRACE", "10"))
#: uploads being received at once (market/web/edge.py): per owner, and in the whole deployment
UPLOAD_MAX_CONCURRENT_PER_OWNER = int(os.environ.get("UPLOAD_MAX_CONCURRENT_PER_OWNER", "2"))
UPLOAD_MAX_CONCURRENT = int(os.environ.get("UPLOAD_MAX_CONCURRENT", "4"))
#: threads of one web process (gunicorn gthread, market/gunicorn_conf.py reads the same variable)
WEB_THREADS = int(os.environ.get("GUNICORN_THREADS", "8"))
#: ``Prefer: wait`` held open at once (market/trading/waits.py): per buyer, and per web process
#: (default: all its threads but an eighth of them, and at least 2: a wait holds its thread idle, and the
#: threads kept serve the other requests, each a few milliseconds long: 6 of 8 threads, 28 of 32); beyond
#: them the answer comes at once, without waiting
WAIT_MAX_PER_BUYER = int(os.environ.get("WAIT_MAX_PER_BUYER", "2"))
WAIT_MAX_PER_PROCESS = int(os.environ.get("WAIT_MAX_PER_PROCESS", str(max(1, WEB_THREADS - max(2, WEB_THREADS // 8)))))
if min(UPLOAD_BODY_TIMEOUT, REQUEST_BODY_TIMEOUT, UPLOAD_MAX_CONCURRENT_PER_OWNER, UPLOAD_MAX_CONCURRENT) <= 0:
    raise ImproperlyConfigured("the body timeouts and upload concurrency limits must be positive")

# --- the API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "market.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "market.api.pagination.CursorPagination",
    "PAGE_SIZE": 20,
    # every limit of a request (user or client address, and the view's scope) in one Redis round trip
    "DEFAULT_THROTTLE_CLASSES": ["market.api.throttling.RateLimits"],
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,  # for any DRF code that still reads it
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("THROTTLE_USER", "600/minute"),
        "purchases": os.environ.get("THROTTLE_PURCHASES", "120/minute"),
        "auth": os.environ.get("THROTTLE_AUTH", "20/minute"),
    },
    # JSON bodies only, within size and depth limits; the views that take forms say so
    "DEFAULT_PARSER_CLASSES": ["market.api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "market.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Gradual buyer API",
    "DESCRIPTION": "Buy differentially private answers step by step: every level is read off one shared noise path.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # the one PATCH (dataset columns) documents its body as it is: its fields required as in POST
    "COMPONENT_SPLIT_PATCH": False,
    "ENUM_NAME_OVERRIDES": {
        "PurchaseStatusEnum": "market.trading.models.Purchase.Status",
        "ListingEngineEnum": "market.catalog.models.Listing.Engine",
        "ListingMechanismEnum": "market.catalog.models.Listing.Mechanism",
        "NewListingMechanismEnum": "market.catalog.services.listings.NEW_MECHANISMS",
        "ApiKeyStatusEnum": "market.accounts.models.KEY_STATUSES",
        "DatasetStatusEnum": ["processing", "ready", "failed"],
        "ColumnTypeEnum": "market.catalog.spec.columns.TYPES",
        "MissingPolicyEnum": "market.catalog.spec.columns.MISSING",
        "WebhookDeliveryStatusEnum": "market.webhooks.models.Delivery.Status",
    },
    "POSTPROCESSING_HOOKS": [
        "market.api.schema.named_schemas",  # one component per kind of statistic and price curve
        "drf_spectacular.hooks.postprocess_schema_enums",
        "market.api.schema.strict_inputs",
        "market.api.schema.one_blank",
        "market.api.schema.operation_links",  # stateful fuzzing follows these
        "market.api.throttling.schema_headers",  # RateLimit-* and Retry-After on the answers
    ],
}

# --- API keys (market/accounts/keys.py): only an HMAC of each secret is stored, under this pepper
API_KEY_PEPPER = os.environ.get("API_KEY_PEPPER", "")
API_KEY_MAX_ACTIVE = int(os.environ.get("API_KEY_MAX_ACTIVE", "100"))
#: a key made by POST auth/token/ (username + password) expires after this many days; 0 = never
API_KEY_SIGN_IN_DAYS = int(os.environ.get("API_KEY_SIGN_IN_DAYS", "90"))

# --- encryption at rest (market/core/crypto.py): data files, true answers and stored noise.
# Comma-separated id:base64(32 bytes); the first seals, all open. "dev" names the key derived from
# SECRET_KEY, the only key when this is empty (check --deploy warns about that in production).
GRADUAL_ENCRYPTION_KEYS = os.environ.get("GRADUAL_ENCRYPTION_KEYS", "")

# --- marketplace limits
#: an uploaded table (CSV or Parquet): streamed to storage in chunks, never whole in memory
UPLOAD_MAX_BYTES = int(os.environ.get("UPLOAD_MAX_BYTES", str(2 * 1024**3)))
UPLOAD_MAX_ROWS = int(os.environ.get("UPLOAD_MAX_ROWS", "10000000"))
UPLOAD_MAX_COLUMNS = int(os.environ.get("UPLOAD_MAX_COLUMNS", "100"))
# the privacy budget suggested at upload (the owner may keep it): the most all listings' ceilings may add up to
DATASET_DEFAULT_BUDGET = os.environ.get("DATASET_DEFAULT_BUDGET", "2")
#: a form's fields other than files (held in memory): at most this many bytes
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(2 * 1024 * 1024)))
#: an uploaded file larger than this goes to a temporary file, in chunks, and stops at UPLOAD_MAX_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "market.catalog.uploads.LimitedMemoryFileUploadHandler",
    "market.catalog.uploads.LimitedTemporaryFileUploadHandler",
]
FILE_UPLOAD_TEMP_DIR = os.environ.get("FILE_UPLOAD_TEMP_DIR") or None
FILE_UPLOAD_PERMISSIONS = 0o600
#: decrypted copies of datasets' files live in 0700 folders made here (default: the system's temporary folder)
DATASET_TEMP_DIR = os.environ.get("DATASET_TEMP_DIR") or None
#: Compute backends (market.catalog.backends, docs/operations.md): "duckdb" (embedded, the default) or "spark"
#: for every dataset; with COMPUTE_SPARK_FROM_ROWS, datasets of at least that many records go to Spark.
COMPUTE_BACKEND = os.environ.get("COMPUTE_BACKEND", "duckdb")
if COMPUTE_BACKEND not in ("duckdb", "spark"):
    raise ImproperlyConfigured(f"COMPUTE_BACKEND must be duckdb or spark, not {COMPUTE_BACKEND!r}")
COMPUTE_SPARK_FROM_ROWS = int(os.environ["COMPUTE_SPARK_FROM_ROWS"]) if os.environ.get("COMPUTE_SPARK_FROM_ROWS") else None
#: A new listing's answer is computed in the owner's request when DuckDB reads the dataset and it has at
#: most this many records (about a second); otherwise by a task on the ingest queue, the listing "preparing"
#: meanwhile (its budget reserved, hidden from buyers): market.catalog.services.listing_prepare.
LISTING_PREPARE_INLINE_ROWS = int(os.environ.get("LISTING_PREPARE_INLINE_ROWS", "1000000"))
#: the Spark cluster's master URL (local[2]: Spark inside the worker process) and extra Spark settings
SPARK_MASTER = os.environ.get("SPARK_MASTER", "local[2]")
SPARK_CONF = dict(item.split("=", 1) for item in env_list("SPARK_CONF") if "=" in item)
#: Ingestion (market.catalog.ingest, on the "ingest" queue). The memory one ingest worker process may use,
#: in MiB, the process itself included: DuckDB gets a quarter of it (and INGEST_THREADS threads), a batch of
#: decoded rows a 32nd; run the ingest worker with --max-memory-per-child at this figure (KiB) so a process that grew is replaced
INGEST_MEMORY_BUDGET_MB = int(os.environ.get("INGEST_MEMORY_BUDGET_MB", "512"))
INGEST_THREADS = int(os.environ.get("INGEST_THREADS", "1"))
#: a Parquet row group larger than this once uncompressed and decoded is refused (its footer says so, or
#: reading it shows it): readers hold a row group at a time, and 794 KB of repeated text can decode to 1 GB
INGEST_MAX_ROW_GROUP_BYTES = int(os.environ.get("INGEST_MAX_ROW_GROUP_BYTES", str(256 * 1024**2)))
#: a table larger than this once uncompressed (gzip CSV, Parquet decoded to text) is refused as soon as
#: the count passes it: compression makes uploads quicker, not tables larger than an uncompressed upload
UPLOAD_MAX_UNCOMPRESSED_BYTES = int(os.environ.get("UPLOAD_MAX_UNCOMPRESSED_BYTES", str(UPLOAD_MAX_BYTES)))
#: Resumable uploads (market/catalog/chunks.py, POST /api/v1/uploads/): a file sent in parts of at most
#: UPLOAD_PART_MAX_BYTES, each its own short request; at most UPLOAD_SESSIONS_PER_OWNER sessions open per
#: owner; a session not made into a dataset within UPLOAD_SESSION_TTL seconds is swept with its parts
UPLOAD_PART_MAX_BYTES = int(os.environ.get("UPLOAD_PART_MAX_BYTES", str(8 * 1024**2)))
UPLOAD_SESSIONS_PER_OWNER = int(os.environ.get("UPLOAD_SESSIONS_PER_OWNER", "4"))
UPLOAD_SESSION_TTL = int(os.environ.get("UPLOAD_SESSION_TTL", str(24 * 3600)))
#: a part's body (application/octet-stream) must arrive within this many seconds: a whole part at the
#: minimum rate after the grace period (8 MiB at 64 KB/s: 138 s), never more than an upload's limit
UPLOAD_PART_BODY_TIMEOUT = float(os.environ.get(
    "UPLOAD_PART_BODY_TIMEOUT", str(min(UPLOAD_BODY_TIMEOUT, BODY_RATE_GRACE + UPLOAD_PART_MAX_BYTES / BODY_MIN_RATE))))
if min(UPLOAD_PART_MAX_BYTES, UPLOAD_SESSIONS_PER_OWNER, UPLOAD_SESSION_TTL, UPLOAD_PART_BODY_TIMEOUT) <= 0:
    raise ImproperlyConfigured("the resumable upload settings must be positive")
#: datasets of one owner being read at once (uploads and column changes); one more upload is 429
INGEST_MAX_PROCESSING_PER_OWNER = int(os.environ.get("INGEST_MAX_PROCESSING_PER_OWNER", "2"))
#: seconds between two progress updates of a dataset being read
DATASET_PROGRESS_EVERY = float(os.environ.get("DATASET_PROGRESS_EVERY", "0.5"))
#: seconds one dataset's processing may take (the ingest task's soft time limit): past it the dataset is
#: failed with a plain reason and its temporary files removed; INGEST_HARD_LIMIT_AFTER seconds later the
#: worker's child is ended whatever it is doing (the hard limit; the sweeper below takes over)
INGEST_TIME_LIMIT = int(os.environ.get("INGEST_TIME_LIMIT", "1800"))
INGEST_HARD_LIMIT_AFTER = int(os.environ.get("INGEST_HARD_LIMIT_AFTER", "60"))
#: a dataset still processing whose progress has not moved for this many seconds lost its task (the broker was
#: down when it was sent, or the ingest worker died with it): the sweeper (catalog.sweep_processing, every
#: minute with the beat) queues it again, as a new run. Longer than the hard limit, so that a run still
#: going is never replaced; a dataset waiting in a long ingest queue for longer is sent again too (harmless:
#: the run that starts first does the work, the other finds its job replaced and writes nothing)
DATASET_SWEEP_AFTER = int(os.environ.get("DATASET_SWEEP_AFTER", str(INGEST_TIME_LIMIT + INGEST_HARD_LIMIT_AFTER + 120)))
#: processing runs handed out for one dataset (its first and the sweeper's re-queues) before it is failed
DATASET_MAX_ATTEMPTS = int(os.environ.get("DATASET_MAX_ATTEMPTS", "3"))
#: A listing still preparing this long after it was handed to a worker is handed out again (its task was
#: lost); one handed out LISTING_PREPARE_MAX_ATTEMPTS times is failed, its budget given back.
LISTING_PREPARE_SWEEP_AFTER = int(os.environ.get("LISTING_PREPARE_SWEEP_AFTER", str(DATASET_SWEEP_AFTER)))
LISTING_PREPARE_MAX_ATTEMPTS = int(os.environ.get("LISTING_PREPARE_MAX_ATTEMPTS", "3"))
#: JSON bodies of the API: larger is 413, nested deeper is 400 (market/api/parsers.py)
API_JSON_MAX_BYTES = int(os.environ.get("API_JSON_MAX_BYTES", str(256 * 1024)))
API_JSON_MAX_DEPTH = int(os.environ.get("API_JSON_MAX_DEPTH", "32"))
#: the demo "top up" button exists only when this is on
DEMO_MODE = env_bool("DEMO_MODE", not PRODUCTION)
#: scripts/run.sh's per-run random token, echoed at ``/-/run-token`` so that its readiness probe knows the
#: answer came from the server it started (market/web/site_views.py); unset: that path does not exist
RUN_TOKEN = os.environ.get("GRADUAL_RUN_TOKEN", "")
#: webhook endpoints may be on private, loopback or link-local addresses (development, the demo and
#: tests); off in production, where such an address is refused (market/webhooks/transport.py), whatever
#: DEBUG or DEMO_MODE say (``check --deploy`` fails if either this or DEMO_MODE is on in production)
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", (DEBUG or DEMO_MODE) and not PRODUCTION)
#: how buyers' wallets are funded (see market/ledger/payments.py)
PAYMENT_PROVIDER = os.environ.get("PAYMENT_PROVIDER", "market.ledger.payments.ManualFunding")
#: how owners' earnings are paid out (see market/ledger/payments.py)
PAYOUT_PROVIDER = os.environ.get("PAYOUT_PROVIDER", "market.ledger.payments.ManualPayout")

# --- static files, auth, i18n
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]  # charts are SVG drawn by the server (market/web/svg.py): no chart library
#: Static files as ``collectstatic`` leaves them: names with a hash of the content (cached for ten years,
#: "immutable") and gzip copies (brotli too, with the brotli package) that WhiteNoise sends to browsers
#: that take them. On in production; the demo (scripts/run.sh) collects them and turns it on. Off (the
#: tests, a bare runserver), files are served from the source folders as they are.
STATIC_COLLECTED = env_bool("STATIC_COLLECTED", PRODUCTION)
WHITENOISE_USE_FINDERS = not STATIC_COLLECTED  # serve from the source folders until collectstatic has run
WHITENOISE_AUTOREFRESH = DEBUG and not STATIC_COLLECTED
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or BASE_DIR / "media")
MEDIA_URL = "/media-never-served/"  # datasets' sealed files are never served
# Datasets' sealed files (market.catalog.files): the media folder, or any S3-compatible store when
# GRADUAL_STORAGE_URL (s3://bucket/prefix) or AWS_STORAGE_BUCKET_NAME is set (django-storages; the
# AWS_* variables: AWS_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_S3_REGION_NAME).
_storage_url = os.environ.get("GRADUAL_STORAGE_URL", "")
_bucket = os.environ.get("AWS_STORAGE_BUCKET_NAME", "")
if _storage_url.startswith("s3://") or _bucket:
    _where = _storage_url[len("s3://"):] if _storage_url else _bucket
    _bucket, _, _prefix = _where.partition("/")
    _DEFAULT_STORAGE = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _bucket,
            "location": _prefix.strip("/"),
            "endpoint_url": os.environ.get("AWS_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("AWS_S3_REGION_NAME") or None,
            "default_acl": "private",
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
else:
    _DEFAULT_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
STORAGES = {
    "default": _DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": (
            "market.core.static.CollectedStaticFiles"
            if STATIC_COLLECTED
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")
