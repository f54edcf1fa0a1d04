"""studio.db: one connection pool per process, processes named in pg_stat_activity, the pool's
settings, and a health check that says why the server refuses."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, connection

from studio.db import base as db_base
from studio.db.base import DatabaseWrapper
from studio.health import check_database
from studio.settings.base import database_settings

pytestmark = pytest.mark.django_db

POOL_VARIABLES = ("DATABASE_POOL", "DATABASE_POOL_MIN_SIZE", "DATABASE_POOL_MAX_SIZE", "DATABASE_POOL_TIMEOUT")


def pooled(alias: str, *, user: str | None = None, **options: Any) -> DatabaseWrapper:
    """A connection to the test database through a pool of its own (the test settings have none)."""
    settings_dict = {**connection.settings_dict, "OPTIONS": dict(options), "CONN_HEALTH_CHECKS": False}
    settings_dict["OPTIONS"].setdefault("pool", {"min_size": 0, "max_size": 2, "timeout": 2.0})
    if user is not None:
        settings_dict["USER"] = user
    return DatabaseWrapper(settings_dict, alias=alias)


@pytest.fixture
def wrappers() -> Iterator[list[DatabaseWrapper]]:
    made: list[DatabaseWrapper] = []
    yield made
    for wrapper in made:
        wrapper.close()
        wrapper.close_pool()


def admin_connection() -> psycopg.Connection[Any]:
    params = {key: value for key, value in connection.get_connection_params().items() if key != "cursor_factory"}
    return psycopg.connect(**params, autocommit=True)


# Settings


@pytest.fixture
def pool_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in POOL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_pool_is_on_by_default_with_no_persistent_connections(pool_environment: pytest.MonkeyPatch) -> None:
    config = database_settings("postgres://user@db.example:5432/orchestra")["default"]
    assert config["ENGINE"] == "studio.db"
    assert config["CONN_MAX_AGE"] == 0
    assert config["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 8, "timeout": 10.0}
    pool_environment.setenv("DATABASE_POOL_MAX_SIZE", "20")
    pool_environment.setenv("DATABASE_POOL_TIMEOUT", "3")
    pool = database_settings("postgres://user@db.example:5432/orchestra")["default"]["OPTIONS"]["pool"]
    assert pool == {"min_size": 1, "max_size": 20, "timeout": 3.0}


def test_without_the_pool_each_use_opens_and_closes_its_own(pool_environment: pytest.MonkeyPatch) -> None:
    pool_environment.setenv("DATABASE_POOL", "false")
    config = database_settings("postgres://user@db.example:5432/orchestra?application_name=mine")["default"]
    assert config["CONN_MAX_AGE"] == 0
    assert config["OPTIONS"] == {"application_name": "mine"}


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"DATABASE_POOL_MAX_SIZE": "0"}, "DATABASE_POOL_MAX_SIZE=0"),
        ({"DATABASE_POOL_MIN_SIZE": "5", "DATABASE_POOL_MAX_SIZE": "2"}, "DATABASE_POOL_MIN_SIZE=5"),
        ({"DATABASE_POOL_TIMEOUT": "0"}, "DATABASE_POOL_TIMEOUT=0"),
        ({"DATABASE_POOL_MAX_SIZE": "lots"}, "DATABASE_POOL_MAX_SIZE='lots' is not an integer"),
        ({"DATABASE_POOL": "maybe"}, "DATABASE_POOL='maybe' is not a boolean"),
    ],
)
def test_bad_pool_settings_are_named(
    pool_environment: pytest.MonkeyPatch, variables: dict[str, str], named: str
) -> None:
    for name, value in variables.items():
        pool_environment.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=named):
        database_settings("postgres://user@db.example:5432/orchestra")


# The backend


def test_connections_name_their_process(monkeypatch: pytest.MonkeyPatch, wrappers: list[DatabaseWrapper]) -> None:
    monkeypatch.setenv("ORCHESTRA_PROCESS", "web")
    wrappers.append(wrapper := pooled("named"))
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == f"orchestra web {os.getpid()}"
    # A name DATABASE_URL gives is kept.
    wrappers.append(given := pooled("given", application_name="mine"))
    assert given.get_connection_params()["application_name"] == "mine"


def test_a_forked_process_makes_its_own_pool_and_leaves_the_parents_alone(wrappers: list[DatabaseWrapper]) -> None:
    """What a Celery pool process does when it starts (the Django fixup closes the pool it
    sees) must not end the parent's pooled sessions: the child sees a pool of its own."""
    wrappers.append(wrapper := pooled("forked"))
    wrapper.ensure_connection()
    parent_pool, session = wrapper.pool, wrapper.connection.info.backend_pid
    wrapper.close()  # back to the pool, still open
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            verdict = b"own pool" if wrapper.pool is not parent_pool else b"the parent's pool"
            wrapper.close_pool()
        except BaseException as error:
            verdict = repr(error).encode()
        os.write(write, verdict)
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write)
    assert os.read(read, 200) == b"own pool"
    os.close(read)
    # The parent gets its idle session back, alive.
    wrapper.ensure_connection()
    assert wrapper.connection.info.backend_pid == session
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def _cut(wrapper: DatabaseWrapper) -> int:
    """End the server session of the wrapper's connection once it is back in the pool; its pid."""
    wrapper.ensure_connection()
    session = wrapper.connection.info.backend_pid
    wrapper.close()  # back to the pool
    with admin_connection() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [session])
    return session


def _session(wrapper: DatabaseWrapper) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_a_pooled_connection_cut_while_it_sat_idle_is_replaced(
    monkeypatch: pytest.MonkeyPatch, wrappers: list[DatabaseWrapper]
) -> None:
    monkeypatch.setattr(db_base, "CHECK_IDLE_S", 0.0)  # every connection has sat long enough to be checked
    wrappers.append(wrapper := pooled("cut-idle"))
    cut = _cut(wrapper)
    assert _session(wrapper) != cut  # checked, dropped, and a new session made: the caller sees no error


def test_a_connection_handed_back_a_moment_ago_goes_out_unchecked(
    monkeypatch: pytest.MonkeyPatch, wrappers: list[DatabaseWrapper]
) -> None:
    """No round trip for a connection just handed back; cut in that moment (PostgreSQL restarted
    just then), it fails the query that uses it, as any query during a restart does, and is
    dropped: the next use gets a new session."""
    monkeypatch.setattr(db_base, "CHECK_IDLE_S", 60.0)
    wrappers.append(wrapper := pooled("cut-recent"))
    cut = _cut(wrapper)
    with pytest.raises(OperationalError):
        _session(wrapper)
    wrapper.close()
    assert _session(wrapper) != cut


# Health


@pytest.fixture
def refused_role() -> Iterator[str]:
    """A role the server refuses every connection to (CONNECTION LIMIT 0)."""
    name = f"orchestra_refused_{os.getpid()}"
    with admin_connection() as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN CONNECTION LIMIT 0")
    try:
        yield name
    finally:
        with admin_connection() as admin:
            admin.execute(f"DROP ROLE IF EXISTS {name}")


def test_health_says_why_the_server_refuses(
    refused_role: str, monkeypatch: pytest.MonkeyPatch, wrappers: list[DatabaseWrapper]
) -> None:
    wrappers.append(wrapper := pooled("refused", user=refused_role))
    monkeypatch.setattr("studio.health.connection", wrapper)
    report = check_database(wait_s=0.5)
    assert report["ok"] is False
    assert "too many connections for role" in report["error"], report


def test_health_says_when_the_pool_has_no_connection_free(
    monkeypatch: pytest.MonkeyPatch, wrappers: list[DatabaseWrapper]
) -> None:
    wrappers.append(wrapper := pooled("busy", pool={"min_size": 0, "max_size": 1, "timeout": 2.0}))
    monkeypatch.setattr("studio.health.connection", wrapper)
    assert check_database(wait_s=1.0) == {"ok": True}
    wrapper.ensure_connection()  # takes the only one
    report = check_database(wait_s=0.3)
    assert report == {"ok": False, "error": "PoolTimeout: couldn't get a connection after 0.30 sec"}
