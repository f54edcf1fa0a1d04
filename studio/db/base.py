"""Django's PostgreSQL backend, with its connection pool kept per process.

Django keeps one psycopg pool per database alias in a class attribute. A process forked after
its parent had used the database (a Celery pool process replaced after a crash, say) would
then take connections from the parent's pool: sockets the two processes share. Here every
process makes pools of its own, and a child never touches the pools it inherited, not even to
close them: closing would end the parent's sessions.

Every connection also names its process in `application_name` (`orchestra <role> <pid>`,
unless DATABASE_URL sets one), so `pg_stat_activity` tells whose it is; `<role>` is
ORCHESTRA_PROCESS (`web` and `worker` under `manage.py up`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from django.db.backends.postgresql import base

# pid -> alias -> psycopg_pool.ConnectionPool; entries of other pids are a parent's, left alone.
_POOLS: dict[int, dict[str, Any]] = {}


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
