"""A database of its own for a test that runs the studio in other processes (`manage.py up`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

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
