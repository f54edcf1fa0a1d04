"""The database steps of `manage.py up`: migrations and bootstrap, one web host at a time
(a PostgreSQL advisory lock); a worker host's wait until they are applied; and the line on the
connections the studio's processes may hold."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper

from studio.settings.base import database_pool
from studio.unavailable import first_line

# pg_advisory_lock key held while a web host migrates and bootstraps ("ORCH").
MIGRATION_LOCK = 0x4F524348
MIGRATIONS_WAIT_S = 300


@contextmanager
def migration_lock(database_url: str, waiting: Callable[[], None]) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock while the block runs, so that web hosts started together
    migrate and bootstrap one after the other (the next finds nothing left to do). `waiting()`
    is called once if another host holds it."""
    try:
        conn = psycopg.connect(database_url, autocommit=True, connect_timeout=10)
    except psycopg.Error as error:
        raise CommandError(f"DATABASE_URL: cannot connect to PostgreSQL ({first_line(error)}).") from None
    with conn:
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()[0]:  # type: ignore[index]
            waiting()
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def unapplied_migrations() -> int:
    """How many migrations the database still lacks (Django's plan for `migrate`)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    finally:
        connection.close()
        close_pool = getattr(connection, "close_pool", None)  # `up` itself keeps no pool open
        if close_pool is not None:
            close_pool()


def connection_budget(database_url: str, processes: int) -> str:
    """A line on the PostgreSQL connections the studio's processes may hold at most (the web
    server, the worker's parent and its pool processes), next to what the server allows."""
    pool = database_pool()
    if pool is None:
        return "Database connections: no pool (DATABASE_POOL=false); each request and task opens its own."
    bound = pool["max_size"] * processes
    these = "this process" if processes == 1 else f"these {processes} processes"
    line = f"Database connections: at most {pool['max_size']} per process, {bound} for {these}"
    try:
        with psycopg.connect(database_url, connect_timeout=5) as conn:
            allowed = int(conn.execute("SHOW max_connections").fetchone()[0])  # type: ignore[index]
            allowed -= int(conn.execute("SHOW superuser_reserved_connections").fetchone()[0])  # type: ignore[index]
    except (psycopg.Error, ValueError, TypeError):
        return line + "."
    if bound > allowed:
        return line + f". WARNING: the server allows only {allowed}; lower DATABASE_POOL_MAX_SIZE or --concurrency."
    return line + f" (the server allows {allowed})."


def prepare_database(env: dict[str, str], stdout: OutputWrapper) -> None:
    """Migrations and bootstrap, one web host at a time; then the static files, which each
    web host serves from its own disk (production settings: STATIC_ROOT)."""
    manage = str(Path(settings.BASE_DIR) / "manage.py")

    def waiting() -> None:
        stdout.write("Another web host is migrating the database; waiting for it to finish.")

    with migration_lock(env["DATABASE_URL"], waiting):
        run_step([sys.executable, manage, "migrate", "--noinput", "-v", "0"], env)
        run_step([sys.executable, manage, "bootstrap"], env)
    if settings.STATIC_ROOT:
        run_step([sys.executable, manage, "collectstatic", "--noinput", "-v", "0"], env)


def wait_migrated(wait_s: int, stdout: OutputWrapper) -> None:
    """A worker host never migrates (its code may be newer than the web hosts'): it waits
    until the database has every migration it knows of, which a web host applies."""
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            pending, why = unapplied_migrations(), ""
        except Exception as error:  # the database is away or refuses us: say so if it lasts
            pending, why = -1, first_line(error)
        if pending == 0:
            return
        if time.monotonic() >= deadline:
            state = f"{pending} migration(s) not applied" if pending > 0 else f"not reachable ({why})"
            raise CommandError(
                f"The database in DATABASE_URL is {state} after {wait_s} s; start a web host "
                "(manage.py up --role web), which applies them, or run manage.py migrate."
            )
        if not said:
            stdout.write("Waiting for a web host to apply the database's migrations (manage.py up --role web).")
            said = True
        time.sleep(2.0)


def run_step(command: list[str], env: dict[str, str]) -> None:
    result = subprocess.run(command, env=env, cwd=settings.BASE_DIR, check=False)
    if result.returncode != 0:
        raise CommandError(f"`{' '.join(command[1:])}` failed (exit {result.returncode}); see above.")
