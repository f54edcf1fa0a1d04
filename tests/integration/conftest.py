"""A real Celery worker (threads) on the real Redis broker, for end-to-end runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from workers.celery import QUEUES, app


@pytest.fixture
def celery_worker() -> Iterator[object]:
    with start_worker(app, pool="threads", concurrency=8, queues=list(QUEUES), perform_ping_check=False) as worker:
        yield worker
