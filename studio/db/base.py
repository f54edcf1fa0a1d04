"""Django's PostgreSQL backend, with its connection pool kept per process.

Django keeps one psycopg pool per database alias in a class attribute. A process forked after
its parent had used the database (a Celery pool process replaced after a crash, say) would
then take connections from the parent's pool: sockets the two processes share. Here every
process makes pools of its own, and a child never touches the pools it inherited, not even to
close them: closing would end the parent's sessions.

Every connection also names its process in `application_name` (`orchestra <role> <pid>`,
unless DATABASE_URL sets one), so `pg_stat_activity` tells whose it is; `<role>` is
ORCHESTRA_PROCESS (`web` and `worker` under `manage.py up`).

A pooled connection is checked (psycopg_pool's check: one empty query, a round trip) before
it is handed out only if it sat in the pool CHECK_IDLE_S or longer: one handed back a moment
ago is as good as it was then, and every /v1 request took one, so the check was a round trip
in each. One that fails its check is dropped (the pool makes another) and the next is taken.
A connection cut less than CHECK_IDLE_S after it was handed back (PostgreSQL restarted just
then) fails the query that uses it, as any query during the restart does, and is dropped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

# pid -> alias -> psycopg_pool.ConnectionPool; entries of other pids are a parent's, left alone.
_POOLS: dict[int, dict[str, Any]] = {}

CHECK_IDLE_S = 1.0
# When each pooled connection was last handed back (time.monotonic()).
_handed_back: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
_handed_back_lock = threading.Lock()


def application_name() -> str:
    return f"orchestra {os.environ.get('ORCHESTRA_PROCESS') or 'process'} {os.getpid()}"


class DatabaseWrapper(base.DatabaseWrapper):
    if TYPE_CHECKING:  # Django's, missing from its stubs
        pool: Any

        def close_pool(self) -> None: ...

    @property
    def _connection_pools(self) -> dict[str, Any]:
        """What Django's `pool` and `close_pool` read and write: this process's pools only."""
        return _POOLS.setdefault(os.getpid(), {})

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        params.setdefault("application_name", application_name())
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        """A connection from the pool, checked first unless it was handed back a moment ago
        (see the module's docstring); without a pool, a new one, as Django makes it."""
        connection = super().get_new_connection(conn_params)
        if self.pool is None:
            return connection
        tries_left = self.pool.max_size  # more than the connections that can be broken
        while True:
            with _handed_back_lock:
                handed_back = _handed_back.pop(connection, None)
            if handed_back is not None and time.monotonic() - handed_back < CHECK_IDLE_S:
                return connection
            try:
                ConnectionPool.check_connection(connection)
                return connection
            except Exception as error:  # broken while it waited: the pool drops it and makes another
                self.pool.putconn(connection)
                if not tries_left:
                    raise
                tries_left -= 1
                log.info("a pooled connection failed its check (%s); taking another", error)
                connection = super().get_new_connection(conn_params)

    def _close(self) -> None:
        if self.pool is not None and self.connection is not None:
            with _handed_back_lock:
                _handed_back[self.connection] = time.monotonic()
        super()._close()  # type: ignore[misc]  # Django's, missing from its stubs
