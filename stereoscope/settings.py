"""Settings, all from the environment. See .env.example."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from stereoscope.app_names import PROJECT_APPS

BASE_DIR = Path(__file__).resolve().parent.parent


def load_dotenv(path):
    """Read KEY=VALUE lines from .env without overriding the real environment."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            os.environ.setdefault(key.strip(), value.strip().strip('"').strip("'"))


load_dotenv(BASE_DIR / ".env")
DATA_DIR = Path(os.environ.get("STEREOSCOPE_DATA_DIR", BASE_DIR / "data"))
# A local sentence-embedding model folder (transformers) for trained classifiers; empty = TF-IDF features.
EMBEDDING_MODEL_PATH = os.environ.get("STEREOSCOPE_EMBEDDING_MODEL", "")
DATA_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name, default=False):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name, default=""):
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env_bool("STEREOSCOPE_REQUIRE_SECRET", False):
        raise ImproperlyConfigured("SECRET_KEY must be set in production.")
    # The embedded default keeps a per-install key in the data directory.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally, so /api/docs/ works offline
    "django_htmx",
    "axes",  # throttles failed logins (stereoscope/throttle.py)
    "stereoscope",
    *PROJECT_APPS,
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "stereoscope.error_views.OutOfRangeInputMiddleware",
    "stereoscope.error_views.MethodNotAllowedPageMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 answer
]

# Failed logins are throttled per username and per address (django-axes; see stereoscope/throttle.py). Staff unlock
# with `manage.py axes_reset_username NAME` or `axes_reset_ip ADDRESS`, or in the admin (Access attempts).
AUTHENTICATION_BACKENDS = [
    "stereoscope.throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", 10))
AXES_COOLOFF_TIME = float(os.environ.get("LOGIN_LOCKOUT_HOURS", 1))  # hours; staff can unlock sooner
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks: per username, and per address
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # failures are kept, successful logins are not
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "stereoscope.throttle.lockout_response"
AXES_VERBOSE = False  # stereoscope.throttle logs each lockout itself

ROOT_URLCONF = "stereoscope.urls"
WSGI_APPLICATION = "stereoscope.wsgi.application"
ASGI_APPLICATION = "stereoscope.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "stereoscope.context_processors.navigation",
            ],
        },
    },
]

DEFAULT_SQLITE = f"sqlite:///{DATA_DIR / 'stereoscope.sqlite3'}"
DATABASE_URL = os.environ.get("DATABASE_URL") or DEFAULT_SQLITE
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=int(os.environ.get("CONN_MAX_AGE", "0")))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server and the worker read and write side by side.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so that a worker process in integration tests sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_stereoscope.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "study-list"
LOGOUT_REDIRECT_URL = "login"
PASSWORD_RESET_TIMEOUT = int(os.environ.get("INVITATION_TIMEOUT_SECONDS", 7 * 24 * 3600))  # invitation links

# E-mail (invitation links). Without EMAIL_HOST or EMAIL_BACKEND the link is only shown to the inviting admin.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 25))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "stereoscope@localhost")
SEND_INVITATION_EMAILS = bool(os.environ.get("EMAIL_HOST") or os.environ.get("EMAIL_BACKEND"))

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", DATA_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", DATA_DIR / "media"))
EXPORT_ROOT = Path(os.environ.get("EXPORT_ROOT", DATA_DIR / "exports"))

# --- Security (production values when DEBUG is off) -------------------------------------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("USE_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Celery ---------------------------------------------------------------------------------
BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # The embedded default: a broker that needs no server, shared by the web server and the worker.
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.05,  # a job waits this long at most for the worker to see it
    }
elif CELERY_BROKER_URL.startswith("redis"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker rides out a broker outage or restart: it retries the connection for as long as it takes, and the tasks it
# runs go on (a job's units are leased and healed by the engine; nothing is cancelled mid-call). The worker runs
# without Celery's gossip, mingle and event heartbeats (stereoscope/celery.py): nothing here uses them, and their
# restart after a lost connection is where kombu's Redis transport failed ("AttributeError ... 'hostname'").
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A worker beats every WORKER_HEARTBEAT_SECONDS; one silent for WORKER_LIVE_SECONDS is dead: health turns degraded,
# its jobs show "Stalled", and its chunk leases are free to any live worker (stereoscope/worker_heartbeat.py).
WORKER_HEARTBEAT_SECONDS = float(os.environ.get("WORKER_HEARTBEAT_SECONDS", "3"))
WORKER_LIVE_SECONDS = float(os.environ.get("WORKER_LIVE_SECONDS", "10"))
# The job engine (stereoscope/jobs): a chunk lease lasts JOB_LEASE_SECONDS and is renewed about every second; a job
# whose workers died is picked up by a live worker's sweep within two lease periods. JOB_FANOUT tasks are sent per
# job so idle workers join it; JOB_WORKER_CONCURRENCY caps one process's calls per endpoint (empty: the endpoint's).
JOB_LEASE_SECONDS = float(os.environ.get("JOB_LEASE_SECONDS", "60"))
# The trash (stereoscope/trash.py): a deleted study is hidden and restorable by its admins for TRASH_RETENTION_DAYS;
# `manage.py purge_trash` (run it daily) then removes it for good. Site staff may purge earlier.
TRASH_RETENTION_DAYS = float(os.environ.get("TRASH_RETENTION_DAYS", "30"))
JOB_CHUNK_SIZE = int(os.environ.get("JOB_CHUNK_SIZE", "100"))
JOB_FANOUT = int(os.environ.get("JOB_FANOUT", "4"))
JOB_WORKER_CONCURRENCY = int(os.environ["JOB_WORKER_CONCURRENCY"]) if os.environ.get("JOB_WORKER_CONCURRENCY") else None
# Batch mode (generation/runs/batches.py): Celery beat polls open provider batches every BATCH_POLL_SECONDS (on
# BATCH_POLL_QUEUE when set). One batch holds at most BATCH_MAX_REQUESTS requests and BATCH_MAX_BYTES bytes; empty
# means the provider's own limits (OpenAI 50,000 / 200 MB, Anthropic 100,000 / 256 MB), a value only lowers them.
BATCH_POLL_SECONDS = float(os.environ.get("BATCH_POLL_SECONDS", "60"))
BATCH_MAX_REQUESTS = int(os.environ["BATCH_MAX_REQUESTS"]) if os.environ.get("BATCH_MAX_REQUESTS") else None
BATCH_MAX_BYTES = int(os.environ["BATCH_MAX_BYTES"]) if os.environ.get("BATCH_MAX_BYTES") else None
# After BATCH_SUBMIT_GRACE_SECONDS a batch still "submitting" (its worker died mid-upload) is sought at the provider.
BATCH_SUBMIT_GRACE_SECONDS = float(os.environ.get("BATCH_SUBMIT_GRACE_SECONDS", "600"))
CELERY_BEAT_SCHEDULE = {
    "poll-provider-batches": {
        "task": "generation.poll_batches",
        "schedule": BATCH_POLL_SECONDS,
        "options": {"queue": os.environ["BATCH_POLL_QUEUE"]} if os.environ.get("BATCH_POLL_QUEUE") else {},
    },
    # studies in the trash longer than TRASH_RETENTION_DAYS are purged (the same as `manage.py purge_trash`)
    "purge-trash": {"task": "stereoscope.purge_trash", "schedule": 6 * 3600.0},
}

# Shared counters (rate limits across workers). Redis when given, else the database cache.
REDIS_URL = os.environ.get("REDIS_URL") or (CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")

# --- Provider keys: only the *names* of the variables live here; values stay in the environment.
PROVIDER_KEY_VARIABLES = env_list("PROVIDER_KEY_VARIABLES", "OPENAI_API_KEY,ANTHROPIC_API_KEY")
# The highest spending cap (USD) a study's admins may set unless staff give the study its own limit; empty: none.
STUDY_SPENDING_CAP_LIMIT_USD = os.environ.get("STUDY_SPENDING_CAP_LIMIT_USD") or None
# Who may create studies: "any" signed-in user (default) or only site "staff"; others join studies they are invited to.
STUDY_CREATORS = os.environ.get("STUDY_CREATORS", "any").strip().lower()
if STUDY_CREATORS not in ("any", "staff"):
    raise ImproperlyConfigured(f"STUDY_CREATORS must be 'any' or 'staff', not {STUDY_CREATORS!r}.")
# Variables Django and the product read themselves: never usable as a provider key, whatever the allow-list says.
# A test keeps this list in step with every variable this file and the commands read.
PRODUCT_ENV_VARIABLES = [
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "DEBUG",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "CONN_MAX_AGE",
    "TIME_ZONE",
    "STATIC_ROOT",
    "MEDIA_ROOT",
    "EXPORT_ROOT",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "USE_X_FORWARDED_PROTO",
    "CELERY_TASK_ALWAYS_EAGER",
    "WORKER_HEARTBEAT_SECONDS",
    "WORKER_LIVE_SECONDS",
    "PROVIDER_KEY_VARIABLES",
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_LOCKOUT_HOURS",
    "LOG_LEVEL",
    "BIND",
    "WEB_CONCURRENCY",
    "CELERY_CONCURRENCY",
    "DEFAULT_FROM_EMAIL",
    "INVITATION_TIMEOUT_SECONDS",
    "STUDY_SPENDING_CAP_LIMIT_USD",
    "STUDY_CREATORS",
    "TRASH_RETENTION_DAYS",
]
# ... and every variable with one of these prefixes (DJANGO_SETTINGS_MODULE, STEREOSCOPE_ADMIN_PASSWORD, ...).
PRODUCT_ENV_PREFIXES = ["DJANGO_", "STEREOSCOPE_", "CELERY_", "DATABASE_", "POSTGRES", "PG", "EMAIL_", "JOB_", "BATCH_"]

# --- API -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "stereoscope.api_parsers.JSONObjectParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "stereoscope.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Stereoscope API",
    "DESCRIPTION": "Audit large language models for gender stereotypes.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],  # the schema and docs need sign-in
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several apps expose a "status" field with these shared choice sets; name them once.
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "generation.models.RunStatus",
        "OutputStatusEnum": "generation.models.OutputStatus",
        "ConnectionStatusEnum": "generation.models.ConnectionStatus",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
