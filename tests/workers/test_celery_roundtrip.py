"""A real task crosses the real Redis broker to a real (in-process) Celery worker."""

from __future__ import annotations

import uuid

import pytest

from studio.health import check_worker
from tests.support.worker import running_worker
from workers.celery import QUEUES, app
from workers.tasks import ping

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def worker():
    with running_worker(concurrency=2, database=False) as w:
        yield w


def test_ping_travels_through_redis(worker) -> None:
    nonce = uuid.uuid4().hex
    result = ping.delay(nonce).get(timeout=20)
    assert result["nonce"] == nonce
    assert result["queue"] == "workers"


def test_health_sees_the_worker(worker) -> None:
    report = check_worker(timeout=5)
    assert report["ok"], report


def test_broker_is_redis() -> None:
    assert app.conf.broker_url.split(":")[0] in {"redis", "rediss", "redis+socket"}
    assert app.conf.task_serializer == "json"
    assert set(QUEUES) == {"orchestrator", "workers", "training"}
