"""The studio's database backend: PostgreSQL, one connection pool per process (`base.py`).

Settings name it as `ENGINE: "studio.db"`; Django loads `studio.db.base.DatabaseWrapper`.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


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
