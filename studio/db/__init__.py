"""The studio's database backend: PostgreSQL, one connection pool per process (`base.py`).

Settings name it as `ENGINE: "studio.db"`; Django loads `studio.db.base.DatabaseWrapper`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def connection_release() -> None:
    """Hand this thread's connection back to the process's pool (without a pool: close it).
    Django does so after each request and the workers after each task; code that uses the
    database elsewhere (a thread of its own, a Celery worker's parent) calls this when done,
    or the connection stays taken until the thread ends. Inside a transaction it does nothing:
    the transaction's owner ends it. Never raises: a broken connection is dropped all the same."""
    from django.db import connection

    if connection.in_atomic_block:
        return
    try:
        connection.close()
    except Exception:
        log.warning("could not hand back the database connection", exc_info=True)


def releasing(work: Callable[P, T]) -> Callable[P, T]:
    """`work`, handing this thread's connection back once it returns or raises
    (`connection_release`): for database work that runs outside Django's request cycle."""

    @functools.wraps(work)
    def released(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return work(*args, **kwargs)
        finally:
            connection_release()

    return released
