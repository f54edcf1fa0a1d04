"""Settings shared by every environment. Values that vary are read in `env.py`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from studio.settings.env import (
    BASE_DIR,
    DATA_DIR,  # noqa: F401 - a setting: checkpoints and other artifacts live under it
    broker_kind,
    broker_transport_options,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    metrics_networks,
    redis_settings,
)

DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "servestatic.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "ninja",
    "studio",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "studio.not_found.StaticMiddleware",  # servestatic's; a missing file is a 404
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studio.unavailable.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "studio.urls"
ASGI_APPLICATION = "studio.asgi.application"
WSGI_APPLICATION = "studio.wsgi.application"
AUTH_USER_MODEL = "studio.User"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Django's ModelBackend, with failed logins throttled (the API's and the admin's).
AUTHENTICATION_BACKENDS = ["studio.services.throttle.ThrottledModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT: Path | None = BASE_DIR / "staticfiles"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
# The shipped recorded outcomes (and their prices.json): what training, evaluation and the demo pool read.
OUTCOMES_DIR = BASE_DIR / "data" / "outcomes"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "servestatic.storage.CompressedStaticFilesStorage"},
}

# Bodies bigger than this are refused with 413 before any view reads them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ORCHESTRA_MAX_BODY_BYTES", 2 * 1024 * 1024)


def database_pool() -> dict[str, Any] | None:
    """psycopg's pool options (DATABASE_POOL_*), or None with DATABASE_POOL=false. Each process
    (the web server, every Celery worker process) holds at most max_size connections, however
    many requests or threads it serves; a request that finds them all busy waits up to
    `timeout` seconds, then gets a 503."""
    if not env_bool("DATABASE_POOL", True):
        return None
    min_size = env_int("DATABASE_POOL_MIN_SIZE", 1)
    max_size = env_int("DATABASE_POOL_MAX_SIZE", 8)
    timeout = env_int("DATABASE_POOL_TIMEOUT", 10)
    if not 0 <= min_size <= max_size or max_size < 1 or timeout < 1:
        raise ImproperlyConfigured(
            f"DATABASE_POOL_MIN_SIZE={min_size}, DATABASE_POOL_MAX_SIZE={max_size}, DATABASE_POOL_TIMEOUT={timeout}: "
            "need 0 <= min <= max, max >= 1 and a timeout of at least 1 second."
        )
    return {"min_size": min_size, "max_size": max_size, "timeout": float(timeout)}


def database_settings(url: str | None) -> dict[str, Any]:
    """PostgreSQL through `studio.db` (Django's backend with a pool per process). No persistent
    connections: under ASGI each request runs in a thread of its own, and a connection kept
    there outlives the thread, never reused nor closed. With the pool, closing a connection
    hands it back; with DATABASE_POOL=false (an external pooler such as PgBouncer), each
    request or task opens its own and closes it at the end."""
    if url is None:
        # No database configured yet (e.g. `manage.py up` before it starts one);
        # any query fails with Django's "DATABASES is improperly configured".
        return {"default": {"ENGINE": "django.db.backends.dummy"}}
    config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True))
    if config["ENGINE"] == "django.db.backends.postgresql":
        config["ENGINE"] = "studio.db"
    pool = database_pool()
    if pool is not None:
        config.setdefault("OPTIONS", {})["pool"] = pool
        # studio.db checks a pooled connection that sat idle, not every one it hands out.
        config["CONN_HEALTH_CHECKS"] = False
    return {"default": config}


DATABASE_URL = env_str("DATABASE_URL")
REDIS_URL = env_str("REDIS_URL")
DATABASES = database_settings(DATABASE_URL)
# Celery's broker when it is not REDIS_URL's Redis: RabbitMQ (amqp://user:password@host:5672/vhost)
# or another Redis. The channel layer, the cache and Celery's results stay in REDIS_URL's Redis.
_broker_url = env_str("CELERY_BROKER_URL")

# Filled in from REDIS_URL (and CELERY_BROKER_URL) by `apply_redis` below.
CELERY_BROKER_URL = _broker_url or ""
CELERY_RESULT_BACKEND = ""
CHANNEL_LAYERS: dict[str, Any] = {}
CACHES: dict[str, Any] = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def apply_redis(namespace: dict[str, Any], url: str | None) -> None:
    """Point Celery, Channels and the cache at REDIS_URL (in the given settings module); Celery's
    broker is CELERY_BROKER_URL's when that is set."""
    if url is not None:
        namespace.update(redis_settings(url, _broker_url))


apply_redis(globals(), REDIS_URL)

CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "workers"
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A message sent while the broker restarts waits for it (up to about 11 s) instead of failing
# at once (Celery's default gives up after about 1 s). Beyond that, the sender logs the
# failure and the recovery sweep (ORCHESTRA_RECOVERY_INTERVAL_S) picks the run up.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 8, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# "redis" or "amqp" (RabbitMQ); None for a scheme the start check refuses (studio.queues.broker_problem).
ORCHESTRA_BROKER_KIND = broker_kind(_broker_url) if _broker_url else "redis"
# With acks_late, a task whose worker died is redelivered: by Redis after the visibility
# timeout (CELERY_VISIBILITY_TIMEOUT; keep it above CELERY_TASK_TIME_LIMIT, or a task still
# running when it passes is delivered twice), by RabbitMQ as soon as the worker's connection
# closes. RabbitMQ gets publisher confirms instead (see broker_transport_options).
_visibility_timeout = env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(
    ORCHESTRA_BROKER_KIND, visibility_timeout=_visibility_timeout
)
# An attempt still `running` this long after it started has lost its worker (a live one is
# stopped by the time limit; with Redis only a dead one's message comes back, after the
# visibility timeout): a redelivered message may run it again. A `queued` attempt this old whose
# message was lost (a step killed between COMMIT and sending) is sent again by the next step.
# RabbitMQ redelivers at once, while the first delivery may still be running (its connection
# dropped, the worker did not), so there only the time limit bounds it.
ORCHESTRA_ATTEMPT_STALE_S = env_int(
    "ORCHESTRA_ATTEMPT_STALE_S",
    CELERY_TASK_TIME_LIMIT if ORCHESTRA_BROKER_KIND == "amqp" else min(CELERY_TASK_TIME_LIMIT, _visibility_timeout),
)
# Every this many seconds one worker queues `workers.runs_recover`, which steps every run still
# pending or running that recorded no event for as long: a step whose message was lost while
# Redis or PostgreSQL was away is taken again, and attempts lost with it are sent again. 0: off.
ORCHESTRA_RECOVERY_INTERVAL_S = env_int("ORCHESTRA_RECOVERY_INTERVAL_S", 30)
# The same sweep pings the workers that training jobs and evaluations are running on; the jobs
# of one that has answered no ping for this many seconds are marked failed (it is gone for
# good: no worker of its name started again to clean up). 0: off.
ORCHESTRA_WORKER_SILENT_S = env_int("ORCHESTRA_WORKER_SILENT_S", 120)
# Celery's Django fixup closes database connections around every task unless told to reuse
# them; a new PostgreSQL session per task cost about a third of the throughput (bench/throughput.py).
# With the pool, a prefork process's fixup also closes its whole pool each time it does so.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)

# Provider API keys are encrypted at rest with these Fernet keys (comma-separated;
# the first encrypts, all decrypt, so keys can be rotated).
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEY", [])

# Login throttling (studio/services/throttle.py): after this many failed logins for one
# username, or from one client address, within the window (seconds from the first failure),
# further logins are refused with 429 until the window ends. Counted in the cache (Redis).
ORCHESTRA_LOGIN_MAX_FAILURES = env_int("ORCHESTRA_LOGIN_MAX_FAILURES", 5)
ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP = env_int("ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP", 50)
ORCHESTRA_LOGIN_WINDOW_S = env_int("ORCHESTRA_LOGIN_WINDOW_S", 900)

# Task text longer than this is refused with 422.
ORCHESTRA_MAX_TASK_CHARS = env_int("ORCHESTRA_MAX_TASK_CHARS", 100_000)
# Provider calls: per-call timeout, and retries of transient errors (429, 5xx, timeouts).
ORCHESTRA_PROVIDER_TIMEOUT_S = env_int("ORCHESTRA_PROVIDER_TIMEOUT_S", 60)
ORCHESTRA_PROVIDER_MAX_RETRIES = env_int("ORCHESTRA_PROVIDER_MAX_RETRIES", 3)
# A running collection whose runner gave no sign of life this long is queued again (it resumes).
ORCHESTRA_COLLECTION_QUIET_S = env_int("ORCHESTRA_COLLECTION_QUIET_S", 60)
# Simulated latency of replay/ calls: off, recorded, fixed:S, uniform:A,B, or recorded+uniform:A,B.
ORCHESTRA_REPLAY_LATENCY: str = env_str("ORCHESTRA_REPLAY_LATENCY", "off") or "off"
# Attempts go to the workers in batches of up to this many (one Celery message); a worker
# runs a batch's calls concurrently on up to ORCHESTRA_ATTEMPT_THREADS threads.
ORCHESTRA_ATTEMPT_BATCH = env_int("ORCHESTRA_ATTEMPT_BATCH", 16)
ORCHESTRA_ATTEMPT_THREADS = env_int("ORCHESTRA_ATTEMPT_THREADS", 16)
# The OpenAI-compatible endpoint: the pool a request without `pool` runs on, and how long it waits.
ORCHESTRA_DEFAULT_POOL: str = env_str("ORCHESTRA_DEFAULT_POOL", "replay-demo") or "replay-demo"
ORCHESTRA_OPENAI_WAIT_S = env_int("ORCHESTRA_OPENAI_WAIT_S", 300)
# The local model (providers/local_model.py): `up` serves a real small LLM (SmolLM2-135M, shipped in a
# PyPI wheel) through llama.cpp's OpenAI-compatible server, and the demo pool calls it. _URL points
# at a server that already runs instead (llama.cpp, Ollama, vLLM: its OpenAI base URL); _NAME is
# the model it serves. _PORT 0 takes a free port at each start. _PRICE is USD per million tokens,
# in and out (docs/configuration.md derives it from measured CPU time per token).
ORCHESTRA_LOCAL_MODEL = env_bool("ORCHESTRA_LOCAL_MODEL", True)
ORCHESTRA_LOCAL_MODEL_URL: str = env_str("ORCHESTRA_LOCAL_MODEL_URL", "") or ""
# Whether the environment named the server (studio.settings.dev may adopt the one a running `up`
# serves, from its services file; `up` starts its own unless the environment named one).
ORCHESTRA_LOCAL_MODEL_URL_GIVEN = bool(ORCHESTRA_LOCAL_MODEL_URL)
ORCHESTRA_LOCAL_MODEL_NAME: str = env_str("ORCHESTRA_LOCAL_MODEL_NAME", "smollm2") or "smollm2"
ORCHESTRA_LOCAL_MODEL_FILE: str = env_str("ORCHESTRA_LOCAL_MODEL_FILE", "") or ""
ORCHESTRA_LOCAL_MODEL_PORT = env_int("ORCHESTRA_LOCAL_MODEL_PORT", 0)
ORCHESTRA_LOCAL_MODEL_THREADS = env_int("ORCHESTRA_LOCAL_MODEL_THREADS", 1)
ORCHESTRA_LOCAL_MODEL_CONTEXT = env_int("ORCHESTRA_LOCAL_MODEL_CONTEXT", 2048)
ORCHESTRA_LOCAL_MODEL_PRICE = env_float("ORCHESTRA_LOCAL_MODEL_PRICE", 0.25)
# /v1's fast path (studio/services/fast_path.py): a request the policy delegates to one pair is
# called in the server's process, on up to ORCHESTRA_FAST_THREADS threads at once, and recorded
# after the answer; off: every request takes the full machinery (Celery steps and workers).
ORCHESTRA_FAST_PATH = env_bool("ORCHESTRA_FAST_PATH", True)
ORCHESTRA_FAST_THREADS = env_int("ORCHESTRA_FAST_THREADS", 64)
# A fast run is written by a worker just after its answer; a read of it (the run, its tree, its
# events, its WebSocket) that comes first waits for it this long at most, then answers 503.
ORCHESTRA_FAST_READ_WAIT_S = env_float("ORCHESTRA_FAST_READ_WAIT_S", 5.0)
# The function that calls a pair there (studio/services/calls.py; a test may name its own).
ORCHESTRA_ATTEMPT_EXECUTOR = "studio.services.calls.execute_here"
# GET /metrics (studio/metrics.py): allowed from these addresses (comma-separated, CIDR or
# single), or from anywhere with `Authorization: Bearer $ORCHESTRA_METRICS_TOKEN`.
ORCHESTRA_METRICS_ALLOW = metrics_networks(env_str("ORCHESTRA_METRICS_ALLOW", "127.0.0.1,::1") or "")
ORCHESTRA_METRICS_TOKEN: str = env_str("ORCHESTRA_METRICS_TOKEN", "") or ""
# `manage.py bootstrap` (run by `up`) queues the demo policy's training on first start.
ORCHESTRA_DEMO_POLICY = env_bool("ORCHESTRA_DEMO_POLICY", True)
# The demo policy shipped with the repository (orchestrator.ship_policy), installed instead of
# training one where it was built from these outcomes; set and empty: always train.
ORCHESTRA_SHIPPED_POLICY = os.environ.get(
    "ORCHESTRA_SHIPPED_POLICY", str(BASE_DIR / "data" / "checkpoints" / "demo-policy.pt")
)
# Check every run event against its payload's schema as it is written (studio/event_schemas.py);
# on in the tests, where a drifting payload then fails the test that wrote it.
ORCHESTRA_CHECK_EVENTS = env_bool("ORCHESTRA_CHECK_EVENTS", False)

NINJA_PAGINATION_PER_PAGE = 50
NINJA_PAGINATION_MAX_LIMIT = 200

LOGIN_URL = "/admin/login/"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "skip_health_probe": {"()": "studio.logfilters.SkipHealthProbe"},
        "redact_secrets": {"()": "studio.logfilters.RedactSecrets"},
    },
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["skip_health_probe", "redact_secrets"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own default handlers would print every record a second time.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "pgserver": {"level": "WARNING"},
        # litellm logs request details, keys included, at DEBUG; its loggers have their own
        # handler, so they blank the keys themselves too.
        "LiteLLM": {"level": "WARNING", "filters": ["redact_secrets"]},
        "LiteLLM Router": {"filters": ["redact_secrets"]},
        "LiteLLM Proxy": {"filters": ["redact_secrets"]},
        "httpx": {"level": "WARNING"},
    },
}
