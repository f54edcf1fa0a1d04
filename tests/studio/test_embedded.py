"""The embedded PostgreSQL and Redis start, serve, stop, and keep their data."""

from __future__ import annotations

import dj_database_url
import psycopg
import pytest
import redis

from studio import embedded

pytestmark = pytest.mark.integration


def _connect(url: str) -> psycopg.Connection:
    config = dj_database_url.parse(url)
    return psycopg.connect(host=config["HOST"], user=config["USER"], dbname=config["NAME"], autocommit=True)


def test_embedded_services_keep_data_across_restarts(tmp_path) -> None:
    services = embedded.start(tmp_path, database=True, redis=True)
    try:
        with _connect(services.env["DATABASE_URL"]) as conn:
            conn.execute("CREATE TABLE kept (value text)")
            conn.execute("INSERT INTO kept VALUES ('still here')")
        client = redis.Redis.from_url(services.env["REDIS_URL"])
        client.set("kept", "yes")
        client.close()
    finally:
        services.stop()

    services = embedded.start(tmp_path, database=True, redis=True)
    try:
        with _connect(services.env["DATABASE_URL"]) as conn:
            assert conn.execute("SELECT value FROM kept").fetchone() == ("still here",)
        client = redis.Redis.from_url(services.env["REDIS_URL"])
        assert client.get("kept") == b"yes"
        client.close()
    finally:
        services.stop()


def test_only_missing_services_start(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://example/db")
    monkeypatch.delenv("REDIS_URL", raising=False)
    services = embedded.start_missing(tmp_path)
    try:
        assert set(services.env) == {"REDIS_URL"}
        assert services.postgres is None
    finally:
        services.stop()


HOLDER = """
import sys, time
from pathlib import Path
from studio import embedded
services = embedded.start(Path(sys.argv[1]), database=True, redis=False)
print(services.postgres.get_pid(), flush=True)
time.sleep(600)
"""


def test_a_killed_holder_does_not_keep_postgresql_running(tmp_path) -> None:
    """pgserver stops its server when its last holder lets go, by a list of pids in the data
    folder; a holder killed with SIGKILL (a `make up` killed so) never leaves that list. The
    next start drops it, so the server stops with the rest."""
    import contextlib
    import json
    import subprocess
    import sys
    from pathlib import Path

    import psutil

    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], cwd=root, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    postmaster = int(holder.stdout.readline())
    holder.kill()
    holder.wait()
    handles = tmp_path / "postgres" / ".handle_pids.json"
    assert holder.pid in json.loads(handles.read_text()) and psutil.pid_exists(postmaster)

    services = embedded.start(tmp_path, database=True, redis=False)
    assert holder.pid not in json.loads(handles.read_text())
    services.stop()
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(postmaster).wait(timeout=30)
    assert not psutil.pid_exists(postmaster)
