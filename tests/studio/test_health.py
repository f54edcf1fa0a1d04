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


def test_the_local_model_is_checked_where_the_studio_has_one(anonymous_api, monkeypatch, settings) -> None:
    """No local model known (a web host without ORCHESTRA_LOCAL_MODEL_URL, or turned off): no
    `model` part. One that does not answer: 503, saying where and why."""
    import socket

    monkeypatch.setattr("studio.health.check_worker", lambda: {"ok": True, "workers": ["w"]})
    settings.ORCHESTRA_LOCAL_MODEL_URL = ""
    body = anonymous_api.get("/health").json_body
    assert "model" not in body and body["status"] == "ok"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    settings.ORCHESTRA_LOCAL_MODEL_URL = url
    response = anonymous_api.get("/health")
    assert response.status_code == 503
    model = response.json_body["model"]
    assert model["ok"] is False and model["url"] == url
    assert model["error"].startswith(f"The local model server at {url} does not answer (")
    settings.ORCHESTRA_LOCAL_MODEL = False
    assert "model" not in anonymous_api.get("/health").json_body
