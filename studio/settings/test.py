"""The test suite: always on real PostgreSQL and Redis.

`make test` starts embedded ones when DATABASE_URL / REDIS_URL are unset.
"""

from cryptography.fernet import Fernet

from studio.settings.base import *  # noqa: F403
from studio.settings.base import DATABASE_URL, REDIS_URL
from studio.settings.env import env_required

_HINT = "Run the tests with `make test`, which starts embedded services when it is unset."
env_required("DATABASE_URL", _HINT)
env_required("REDIS_URL", _HINT)
assert DATABASE_URL is not None and REDIS_URL is not None

# No pool in the test process: pytest-django drops the test database at the end, which an
# idle pooled connection would hold open. Connections close after each use (CONN_MAX_AGE 0),
# so threads (asgiref, Celery's test worker) never hold one either. The pooled settings are
# tested in processes of their own (tests/integration/test_connection_bound.py).
DATABASES["default"].get("OPTIONS", {}).pop("pool", None)  # noqa: F405

DEBUG = False
SECRET_KEY = "test-only-not-a-secret"  # noqa: S105 - test settings, never deployed
# A server a test starts in a process of its own gets the test's keys (FIELD_ENCRYPTION_KEY).
FIELD_ENCRYPTION_KEYS = FIELD_ENCRYPTION_KEYS or [Fernet.generate_key().decode()]  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
CELERY_TASK_TIME_LIMIT = 60
CELERY_TASK_SOFT_TIME_LIMIT = 50

# Serve static files straight from the apps, without collectstatic.
SERVESTATIC_USE_FINDERS = True
STATIC_ROOT = None

# A fresh cache namespace per test session: run ids restart with each test database. A server
# that a test starts in a process of its own shares the test's (ORCHESTRA_TEST_CACHE_PREFIX).
CACHES["default"]["KEY_PREFIX"] = (  # noqa: F405
    __import__("os").environ.get("ORCHESTRA_TEST_CACHE_PREFIX")
    or f"orchestra-test-{__import__('uuid').uuid4().hex[:8]}"
)

# Many tests fail a login on purpose, all from one address; the throttle's own tests set
# the limits they exercise.
ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP = 100_000

# Every run event written is checked against its payload's schema (studio/event_schemas.py).
ORCHESTRA_CHECK_EVENTS = True

# No background recovery sweep in the in-process test workers: a sweep landing between two
# tests would step runs of the next one. Its logic is tested directly (test_scheduling).
ORCHESTRA_RECOVERY_INTERVAL_S = 0

# Tests of the demo policy's training expect it trained; those of the shipped one name it.
ORCHESTRA_SHIPPED_POLICY = ""
