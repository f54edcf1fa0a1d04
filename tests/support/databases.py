"""Databases for tests that run the studio in other processes: a new one of its own
(`manage.py up`), or pytest-django's test database as another process reaches it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql


@contextmanager
def scratch_database() -> Iterator[str]:
    """A new, empty database on the server of DATABASE_URL; yields its URL and drops it after."""
    server = os.environ["DATABASE_URL"]
    name = f"orchestra_scratch_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def child_database_url(application_name: str) -> str:
    """The test database (pytest-django's), as a process of its own reaches it, naming itself."""
    from django.db import connection

    parts = urlsplit(os.environ["DATABASE_URL"])
    query = {**dict(parse_qsl(parts.query)), "application_name": application_name}
    return parts._replace(path=f"/{connection.settings_dict['NAME']}", query=urlencode(query)).geturl()
