"""ReviewHub settings, read from environment variables.

With nothing set, ReviewHub runs embedded: SQLite, an in-memory channel layer,
and agent steps run in a thread of the web process. Set DATABASE_URL (PostgreSQL)
and REDIS_URL (Celery broker and Channels layer) for the production-like mode.

With DEBUG off (the default) the settings are production ones: a SECRET_KEY is
required and cookies are Secure, except for the embedded demo (REVIEWHUB_DEMO,
which `manage.py demo` sets for itself) and plain-HTTP trials
(REVIEWHUB_INSECURE_HTTP).
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from runtime.layers import redis_channel_layer
from runtime.periodic import Periodic, beat_schedule

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


def kept_secret_key(path: Path) -> str:
    """A random key made once and kept in a file only its owner reads (the embedded demo's)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    key = get_random_secret_key()
    with os.fdopen(fd, "w") as file:
        file.write(key)
    return key


def secret_key(*, local: bool) -> str:
    """SECRET_KEY from the environment; without one, only a local process (DEBUG or the demo) starts."""
    key = env_str("SECRET_KEY").strip()
    if key:
        return key
    if not local:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it to a long random value (every process of one ReviewHub shares it); "
            "DEBUG=1 or REVIEWHUB_DEMO=1 keep a random development key in the var/ directory instead."
        )
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    return kept_secret_key(VAR_DIR / "secret_key")


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """The header a TLS-terminating proxy sets to "https": "X-Forwarded-Proto" -> ("HTTP_X_FORWARDED_PROTO", ...)."""
    header = env_str(name).strip()
    if not header:
        return None
    return "HTTP_" + header.upper().replace("-", "_"), "https"


DEBUG = env_bool("DEBUG", False)
# The embedded demo (`manage.py demo` sets this for itself, see manage.py): plain HTTP on
# 127.0.0.1, a random key kept in var/, and New run on behalf of the demo's agent account.
DEMO = env_bool("REVIEWHUB_DEMO", False)
SECRET_KEY = secret_key(local=DEBUG or DEMO)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

# HTTPS. With DEBUG off, cookies are Secure and HSTS is sent, unless REVIEWHUB_INSECURE_HTTP=1
# (a trial over plain HTTP; the demo's default). HSTS is only ever sent on HTTPS responses.
HTTPS = not DEBUG and not env_bool("REVIEWHUB_INSECURE_HTTP", DEMO)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
# Off by default: a proxy that terminates TLS usually redirects, and without SECURE_PROXY_SSL_HEADER
# Django behind it would see every request as plain HTTP and redirect forever.
SECURE_SSL_REDIRECT = HTTPS and env_bool("SECURE_SSL_REDIRECT", False)
SECURE_PROXY_SSL_HEADER = proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
# Load balancers and orchestrators probe over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]

INSTALLED_APPS = [
    "daphne",
    "approvals.apps.AdminConfig",  # django.contrib.admin, whose every ModelAdmin asks approvals/access/
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "channels",
    "ninja",
    "approvals",
    "agents",
    "remote",
    "agui",
    "shop",
    "ops",
    "gateway",
    "practice",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "reviewhub.staticfiles.StaticFilesMiddleware",  # WhiteNoise, async-capable
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
# The agent API's requests (under /api/, bearer tokens, JSON) take this chain instead (runtime/handler.py says
# what is left out and why): no sessions, CSRF, user, messages or htmx; the same headers and Host check.
API_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
]

from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    # Not covered by default-src: where a <base> may point, where forms may post, plugins, framing.
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "object-src": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
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
                "approvals.web.context_processors.queue_count",
            ],
        },
    },
]

# Database: PostgreSQL through DATABASE_URL, else SQLite (WAL) in var/. Celery workers keep their
# connection between tasks for WORKER_CONN_MAX_AGE seconds (reviewhub/celery.py); in web processes the request
# slots' threads do (WEB_CONN_MAX_AGE, below), and the thread that works out the live pushes
# (approvals/live/fanout.py), for PUSH_CONN_MAX_AGE seconds; any other thread opens one per request.
WORKER_CONN_MAX_AGE = env_int("WORKER_CONN_MAX_AGE", 300)
PUSH_CONN_MAX_AGE = env_int("PUSH_CONN_MAX_AGE", 300)
# HTTP requests an ASGI process works on at once (runtime/slots.py), each on one of as many threads that keep
# their database connection between requests for WEB_CONN_MAX_AGE seconds; the others wait in the event loop
# (0: no limit, and a new thread and connection per request, as Django does under ASGI). Two: one runs Python
# while the other waits for PostgreSQL; more only take turns at the GIL and starve the event loop (the live
# pushes, the responses). A streamed admin export holds its slot until it is sent.
WEB_REQUEST_SLOTS = env_int("WEB_REQUEST_SLOTS", 2)
WEB_CONN_MAX_AGE = env_int("WEB_CONN_MAX_AGE", 300)
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
    CHANNEL_LAYERS = {"default": redis_channel_layer(REDIS_URL)}  # pub/sub: runtime/layers.py says why
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
# Leases: a claim on a model turn holds for TURN_LEASE_SECONDS and its worker renews it while it waits for
# the model (approvals/services/runs.py turn_renew); a turn whose worker went quiet this long is taken over by
# the sweep. A claim on a tool's execution holds for EXECUTION_LEASE_SECONDS and its claimer renews it while
# the body runs (approvals/services/leases.py).
TURN_LEASE_SECONDS = env_int("TURN_LEASE_SECONDS", 10)
EXECUTION_LEASE_SECONDS = env_int("EXECUTION_LEASE_SECONDS", 6)
# The sweep: how often it runs, how long an approved call or an idle run may sit before it is
# resumed, and after how many resumptions without progress the run is failed with the reason.
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", 3)
SWEEP_GRACE_SECONDS = env_int("SWEEP_GRACE_SECONDS", 10)
SWEEP_MAX_ATTEMPTS = env_int("SWEEP_MAX_ATTEMPTS", 5)
# Redis hands an unacknowledged task to another worker after this long.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("BROKER_VISIBILITY_TIMEOUT", 600)}
# Reviewers who chose an email digest get one this often, when something new waits for them.
NOTIFY_DIGEST_MINUTES = env_int("NOTIFY_DIGEST_MINUTES", 15)
# Insight proposes a rule learned from decisions (approvals/insight/learned.py) only with at least this many plain
# approvals under it in its window.
LEARN_MIN_CALLS = env_int("LEARN_MIN_CALLS", 20)
# How often the heads of the run chains that changed are anchored into the global audit chain (docs/audit.md).
AUDIT_ANCHOR_SECONDS = env_int("AUDIT_ANCHOR_SECONDS", 60)
# Periodic work (runtime/periodic.py): Celery beat's schedule and the embedded default's loop, one table.
PERIODIC_WORK = {
    "anchor-audit-heads": Periodic("agents.tasks.anchor_audit", float(AUDIT_ANCHOR_SECONDS), expires=True),
    "expire-overdue-calls": Periodic("agents.tasks.expire_overdue", 30.0),
    "webhook-deliveries-due": Periodic("remote.tasks.deliver_due", 60.0),
    "unclaimed-approvals": Periodic("remote.tasks.flag_unclaimed", float(SWEEP_INTERVAL_SECONDS), expires=True),
    "email-digests": Periodic("ops.tasks.email_digests", 60.0 * NOTIFY_DIGEST_MINUTES),
    "sweep-stuck-runs": Periodic("agents.tasks.sweep", float(SWEEP_INTERVAL_SECONDS), expires=True),
    "agui-stalled-exchanges": Periodic("agui.tasks.sweep_exchanges", float(SWEEP_INTERVAL_SECONDS), expires=True),
    "plant-practice-calls": Periodic("practice.tasks.plant_due", float(env_int("PRACTICE_PLANT_SECONDS", 30)), True),
}
CELERY_BEAT_SCHEDULE = beat_schedule(PERIODIC_WORK)

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
# Runs of agents that run elsewhere (the agent API) go on through this seam instead: it marks the run running
# (their long-polls and webhooks are told by the remote advancer's outbox); their agents execute their own calls.
REVIEWHUB_REMOTE_RESUME = env_str("REVIEWHUB_REMOTE_RESUME", "remote.resume.run_decided")
# Runs of AG-UI agents (agui/): the decisions resume the agent with a RunAgentInput, from a background task.
REVIEWHUB_AGUI_RESUME = env_str("REVIEWHUB_AGUI_RESUME", "agui.resume.run_decided")
# Which of the settings above resumes a run is its advancer's to say (approvals/advancers.py, registered by each app).
# An AG-UI agent that cannot be reached is tried again this many times, this many seconds apart, then the run fails.
AGUI_CONNECT_ATTEMPTS = env_int("AGUI_CONNECT_ATTEMPTS", 5)
AGUI_RETRY_SECONDS = float(env_str("AGUI_RETRY_SECONDS", "5"))
AGUI_TIMEOUT_SECONDS = float(env_str("AGUI_TIMEOUT_SECONDS", "300"))
# An approved call a remote agent has not reported on this long is flagged (trail, run page) by the sweep.
REMOTE_REPORT_SECONDS = env_int("REMOTE_REPORT_SECONDS", 3600)
# An approved call a remote agent read and has not claimed this long after is flagged (trail, card): its tool may
# run without the gate (remote/unclaimed.py). Two leases by default.
REMOTE_CLAIM_SECONDS = env_int("REMOTE_CLAIM_SECONDS", 2 * EXECUTION_LEASE_SECONDS)
REVIEWHUB_API_MAX_BODY_BYTES = env_int("REVIEWHUB_API_MAX_BODY_BYTES", 256 * 1024)
# Long-polls re-read their call this often besides being woken by a decision (a lost wake-up costs this much).
REVIEWHUB_WAIT_RECHECK_SECONDS = float(env_str("REVIEWHUB_WAIT_RECHECK_SECONDS", "2"))
# Webhook targets: loopback, private and link-local addresses are refused unless this is set (tests, one machine).
REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = env_bool("REVIEWHUB_WEBHOOK_ALLOW_PRIVATE", False)
REVIEWHUB_WEBHOOK_TIMEOUT_SECONDS = float(env_str("REVIEWHUB_WEBHOOK_TIMEOUT_SECONDS", "5"))
# Where ReviewHub is reached, for links in webhooks (the API's answers use the request's own host).
REVIEWHUB_PUBLIC_URL = env_str("REVIEWHUB_PUBLIC_URL", "")
REVIEW_EXPIRY_SECONDS = env_int("REVIEW_EXPIRY_SECONDS", 3600)
# In the embedded demo only, New run starts runs on behalf of the demo's agent account, so that one
# person can start a run and decide its calls (nobody decides the calls of a run they requested).
# Anywhere else the requester is the logged-in user, whatever the environment says.
REVIEWHUB_DEMO_RUNS_AS = env_str("REVIEWHUB_DEMO_RUNS_AS", "ops-agent") if DEMO else ""


def mailer(backend: str) -> dict:
    """The default mailer: files in EMAIL_FILE_PATH, or SMTP configured by EMAIL_HOST and friends."""
    if backend.endswith("filebased.EmailBackend"):
        return {"BACKEND": backend, "OPTIONS": {"file_path": env_str("EMAIL_FILE_PATH", str(VAR_DIR / "outbox"))}}
    if not backend.endswith("smtp.EmailBackend"):
        return {"BACKEND": backend}
    options = {
        "host": env_str("EMAIL_HOST", "localhost"),
        "port": env_int("EMAIL_PORT", 25),
        "username": env_str("EMAIL_HOST_USER"),
        "password": env_str("EMAIL_HOST_PASSWORD"),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
    }
    return {"BACKEND": backend, "OPTIONS": options}


# Outgoing email: SMTP in production; files in var/outbox for DEBUG and the demo (EMAIL_BACKEND to change).
LOCAL_EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
SMTP_EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
MAILERS = {"default": mailer(env_str("EMAIL_BACKEND", LOCAL_EMAIL_BACKEND if DEBUG or DEMO else SMTP_EMAIL_BACKEND))}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "support@shop.example")

# Every event of the audit trail, once committed, is logged, counted and notified (ops/).
REVIEWHUB_OBSERVERS = ["ops.logs.event_logged", "ops.metrics.event_counted", "ops.observers.event_notified"]
# Timings (a model call, a live push's fan-out) go to the metrics.
REVIEWHUB_MEASURE = "ops.metrics.measured"
# Whether a reviewer wants a browser notification of a call (the queue socket's pushes ask).
REVIEWHUB_BROWSER_PREFERENCES = "ops.preferences.browser_by_user"
# Links in mail and chat point here.
REVIEWHUB_SITE_URL = env_str("REVIEWHUB_SITE_URL", "http://127.0.0.1:8000")

# /metrics: for a scraper with this bearer token, or from these networks (CIDRs). Neither: nobody.
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", "")

# Slack (ops/slack.py): the bot's token and the app's signing secret; without a token, nothing is posted.
SLACK_BOT_TOKEN = env_str("SLACK_BOT_TOKEN")
SLACK_SIGNING_SECRET = env_str("SLACK_SIGNING_SECRET")
SLACK_API_URL = env_str("SLACK_API_URL")  # the SDK's default when empty; tests point it at a stand-in

# Logs: LOG_FORMAT=json writes one JSON object per line (python-json-logger); else plain text.
LOG_FORMAT = env_str("LOG_FORMAT", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json" if LOG_FORMAT == "json" else "text"}
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {
        "reviewhub": {"level": env_str("LOG_LEVEL", "INFO")},
        "agents": {"level": env_str("LOG_LEVEL", "INFO")},
        "approvals": {"level": env_str("LOG_LEVEL", "INFO")},
        "ops": {"level": env_str("LOG_LEVEL", "INFO")},
    },
}

# The MCP gateway (gateway/): progress notifications this often while a call waits for review; the tools it
# lists are re-read from the database at most this often between listings.
REVIEWHUB_MCP_PROGRESS_SECONDS = float(env_str("REVIEWHUB_MCP_PROGRESS_SECONDS", "5"))
REVIEWHUB_MCP_CATALOG_SECONDS = float(env_str("REVIEWHUB_MCP_CATALOG_SECONDS", "2"))
