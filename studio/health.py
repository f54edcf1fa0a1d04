"""Reachability of the studio's dependencies, for GET /api/health and `up`."""

from __future__ import annotations

from typing import Any

import psycopg
import redis
from django.conf import settings
from django.db import connection
from psycopg_pool import PoolTimeout

from providers.local_model import check
from studio.queues import app as celery_app
from studio.unavailable import first_line

DATABASE_WAIT_S = 2.0


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error": first_line(exc)}


def check_database(wait_s: float = DATABASE_WAIT_S) -> dict[str, Any]:
    """`SELECT 1` on a connection of this process's pool, waiting at most `wait_s` for one.
    When none comes, a connection of its own asks the server why (for example "sorry, too
    many clients already"): the pool would only say that it waited."""
    pool = getattr(connection, "pool", None)  # studio.db's; None with DATABASE_POOL=false
    try:
        if pool is None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        else:
            pool.open()
            with pool.connection(timeout=wait_s) as pooled:
                pooled.execute("SELECT 1")
        return {"ok": True}
    except PoolTimeout as exc:
        return _failure(_refusal() or exc)
    except Exception as exc:  # any failure means "not reachable"
        return _failure(exc)


def _refusal() -> Exception | None:
    """The server's answer to a new connection, if it refuses one."""
    try:
        psycopg.connect(**connection.get_connection_params(), connect_timeout=2).close()
    except Exception as exc:
        return exc
    return None


def check_redis() -> dict[str, Any]:
    if not settings.REDIS_URL:
        return {"ok": False, "error": "REDIS_URL is not set."}
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        client.close()
        return {"ok": True}
    except Exception as exc:
        return _failure(exc)


def check_worker(timeout: float = 1.0) -> dict[str, Any]:
    """Ask the workers to answer a broadcast ping through the broker; the first reply suffices."""
    try:
        replies = celery_app.control.ping(timeout=timeout, limit=1)
    except Exception as exc:
        return _failure(exc)
    if not replies:
        return {"ok": False, "error": f"No Celery worker answered within {timeout:g} s."}
    return {"ok": True, "workers": sorted(name for reply in replies for name in reply)}


def check_model() -> dict[str, Any] | None:
    """The local model's server (providers/local_model.py), where this studio has one: None when
    ORCHESTRA_LOCAL_MODEL is off or no server is known (a web host without ORCHESTRA_LOCAL_MODEL_URL)."""
    if not settings.ORCHESTRA_LOCAL_MODEL or not settings.ORCHESTRA_LOCAL_MODEL_URL:
        return None
    return check(settings.ORCHESTRA_LOCAL_MODEL_URL, settings.ORCHESTRA_LOCAL_MODEL_NAME)


def health() -> dict[str, Any]:
    report: dict[str, Any] = {"db": check_database(), "redis": check_redis(), "worker": check_worker()}
    model = check_model()
    if model is not None:
        report["model"] = model
    report["status"] = "ok" if all(part["ok"] for part in report.values()) else "degraded"
    return report
