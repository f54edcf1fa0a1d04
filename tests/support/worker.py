"""A real Celery worker (threads) on the real Redis broker, stopped only once it is quiet.

A transactional test flushes the database after its fixtures end. A task still running
then (a follow-up step of a run, say) holds locks that the flush's TRUNCATE deadlocks
against, so the worker drains its requests first, and nothing else may still be using
the database when it is handed back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from celery.contrib.testing.worker import start_worker
from celery.worker import state
from django.db import connection

from workers.celery import QUEUES, app

QUIET_S = 0.3


@contextmanager
def running_worker(concurrency: int = 2, database: bool = True, timeout: float = 30) -> Iterator[object]:
    with start_worker(app, pool="threads", concurrency=concurrency, queues=list(QUEUES), perform_ping_check=False) as w:
        yield w
        wait_until(lambda: not state.active_requests and not state.reserved_requests, timeout)
    if database:
        wait_until(no_other_busy_session, timeout)


def wait_until(quiet: object, timeout: float) -> None:
    """Wait until `quiet()` has held for QUIET_S; give up silently after `timeout`."""
    deadline = time.monotonic() + timeout
    since = None
    while time.monotonic() < deadline:
        if quiet():  # type: ignore[operator]
            since = since or time.monotonic()
            if time.monotonic() - since >= QUIET_S:
                return
        else:
            since = None
        time.sleep(0.05)


def no_other_busy_session() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'"
        )
        return cursor.fetchone()[0] == 0
