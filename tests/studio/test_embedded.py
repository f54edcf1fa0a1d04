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
