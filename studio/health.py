"""Reachability of the studio's dependencies, for GET /api/health and `up`."""

from __future__ import annotations

from typing import Any

import redis
from django.conf import settings
from django.db import connection

from workers.celery import app as celery_app


def _failure(exc: BaseException) -> dict[str, Any]:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {"ok": False, "error": f"{type(exc).__name__}: {first_line}"[:300]}


def check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:  # any failure means "not reachable"
        return _failure(exc)


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


def health() -> dict[str, Any]:
    report: dict[str, Any] = {"db": check_database(), "redis": check_redis(), "worker": check_worker()}
    report["status"] = "ok" if all(part["ok"] for part in report.values()) else "degraded"
    return report
