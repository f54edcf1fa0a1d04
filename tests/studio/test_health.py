from __future__ import annotations

import pytest

from studio.health import check_database, check_redis

pytestmark = pytest.mark.django_db


def test_health_without_a_worker_is_503_and_says_so(anonymous_api, monkeypatch) -> None:
    # No worker listens on the broker in this test, so the broadcast ping gets no reply.
    monkeypatch.setattr("studio.health.check_worker", lambda: {"ok": False, "error": "No Celery worker answered."})
    response = anonymous_api.get("/health")
    assert response.status_code == 503
    body = response.json_body
    assert body["status"] == "degraded"
    assert body["db"] == {"ok": True}
    assert body["redis"] == {"ok": True}
    assert body["worker"]["ok"] is False


def test_database_and_redis_are_reachable() -> None:
    assert check_database() == {"ok": True}
    assert check_redis() == {"ok": True}


def test_unreachable_redis_is_reported(settings) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    report = check_redis()
    assert report["ok"] is False
    assert "ConnectionError" in report["error"]
