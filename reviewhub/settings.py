"""ReviewHub settings, read from environment variables.

With nothing set, ReviewHub runs embedded: SQLite, an in-memory channel layer,
and agent steps run in a thread of the web process. Set DATABASE_URL (PostgreSQL)
and REDIS_URL (Celery broker and Channels layer) for the production-like mode.
"""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


VAR_DIR = Path(env_str("REVIEWHUB_VAR_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "channels",
    "approvals",
    "agents",
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
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
}

ROOT_URLCONF = "reviewhub.urls"
ASGI_APPLICATION = "reviewhub.asgi.application"
WSGI_APPLICATION = None

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
                "approvals.context_processors.queue_count",
            ],
        },
    },
]

# Database: PostgreSQL through DATABASE_URL, else SQLite (WAL) in var/.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("SQLITE_PATH", str(VAR_DIR / "reviewhub.sqlite3")),
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": env_str("SQLITE_TEST_PATH", "") or None},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "approvals:queue"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True

# Redis: Celery broker and Channels layer. Without it: in-process.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8's default socket timeout equals channels-redis's blocking
            # read; a longer one keeps idle sockets open (channels_redis issue 422).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Celery. Without a broker, agent steps run in a thread of the web process.
TASKS_IN_PROCESS = env_bool("REVIEWHUB_TASKS_IN_PROCESS", not REDIS_URL)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "memory://")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# Three queues: model turns, tool execution (so a slow model never delays an approved call),
# and the periodic passes (deadlines, the sweep) on the default queue.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "reviewhub")
TURNS_QUEUE = env_str("CELERY_TURNS_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-turns")
TOOLS_QUEUE = env_str("CELERY_TOOLS_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-tools")
# Leases: a model turn or a tool execution whose worker went quiet this long is taken over
# by the sweep. Each must be longer than the longest legitimate turn or tool run (README).
TURN_LEASE_SECONDS = env_int("TURN_LEASE_SECONDS", 300)
EXECUTION_LEASE_SECONDS = env_int("EXECUTION_LEASE_SECONDS", 120)
# The sweep: how often it runs, how long an approved call or an idle run may sit before it is
# resumed, and after how many resumptions without progress the run is failed with the reason.
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", 30)
SWEEP_GRACE_SECONDS = env_int("SWEEP_GRACE_SECONDS", 60)
SWEEP_MAX_ATTEMPTS = env_int("SWEEP_MAX_ATTEMPTS", 5)
# Redis hands an unacknowledged task to another worker after this long.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("BROKER_VISIBILITY_TIMEOUT", 600)}
CELERY_BEAT_SCHEDULE = {
    "expire-overdue-calls": {"task": "agents.tasks.expire_overdue", "schedule": 30.0},
    "sweep-stuck-runs": {
        "task": "agents.tasks.sweep",
        "schedule": float(SWEEP_INTERVAL_SECONDS),
        "options": {"expires": float(SWEEP_INTERVAL_SECONDS)},  # a pass queued while no worker ran is dropped
    },
}

# The model, reached through the openai package. Without OPENAI_API_KEY the
# scripted demo model that ships with ReviewHub is used.
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_MODEL = env_str("OPENAI_MODEL", "reviewhub-demo" if not OPENAI_API_KEY else "gpt-4o-mini")
OPENAI_TIMEOUT = float(env_str("OPENAI_TIMEOUT", "60"))
OPENAI_MAX_RETRIES = env_int("OPENAI_MAX_RETRIES", 3)
MODEL_RETRY_BACKOFF = float(env_str("MODEL_RETRY_BACKOFF", "1.0"))
AGENT_MAX_STEPS = env_int("AGENT_MAX_STEPS", 12)

# How a decision resumes a run: a dotted path to a callable taking a run id.
# approvals/ knows nothing of agents; this is the one seam between them.
REVIEWHUB_RESUME = env_str("REVIEWHUB_RESUME", "agents.dispatch.enqueue_advance")
REVIEW_EXPIRY_SECONDS = env_int("REVIEW_EXPIRY_SECONDS", 3600)

# Outgoing email: written to files in var/outbox by default (EMAIL_BACKEND to change).
MAILERS = {
    "default": {
        "BACKEND": env_str("EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend"),
        "OPTIONS": {"file_path": env_str("EMAIL_FILE_PATH", str(VAR_DIR / "outbox"))}
        if "filebased" in env_str("EMAIL_BACKEND", "filebased")
        else {},
    }
}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "support@shop.example")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {
        "reviewhub": {"level": env_str("LOG_LEVEL", "INFO")},
        "agents": {"level": env_str("LOG_LEVEL", "INFO")},
        "approvals": {"level": env_str("LOG_LEVEL", "INFO")},
    },
}
