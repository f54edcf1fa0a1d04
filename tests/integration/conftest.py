"""A real Celery worker (threads) on the real Redis broker, for end-to-end runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.worker import running_worker


@pytest.fixture
def celery_worker() -> Iterator[object]:
    with running_worker(concurrency=8) as worker:
        yield worker
