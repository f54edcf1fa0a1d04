"""Shared fixtures. Tests run on real PostgreSQL and Redis (see `make test`)."""

from __future__ import annotations

import errno
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from studio.models import Role, User
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """A channel layer of its own for each test. A process serves one event loop, but tests
    each run their own: a layer shared between them keeps a receive lock that a consumer of an
    earlier test's loop took, and the next test's consumer fails on it ("bound to a different
    event loop"), as it did once in a full run."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()


UP_DEFAULT_PORT = 8000  # `manage.py up`'s, and so `make up`'s


class _Held(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"Port 8000 is held by the test suite (tests/conftest.py): a test must take a free port.\n"
        self.send_response(503)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_HEAD = do_GET  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session", autouse=True)
def up_default_port_held() -> Iterator[ThreadingHTTPServer | None]:
    """Port 8000 on 127.0.0.1 held for the whole run, as a developer's `make up` beside the tests
    holds it: a test or a server it starts that relies on the default port fails here, not only
    on a machine where the studio runs. It answers 503 saying so. Where something listens there
    already, that is the same check, and it is left alone (None)."""
    try:
        server = ThreadingHTTPServer(("127.0.0.1", UP_DEFAULT_PORT), _Held)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        yield None
        return
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="port-8000-held", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser tests run last and are marked `browser`: Playwright's event loop must not
    be open while asyncio tests run (tests/browser/conftest.py)."""
    browser = [item for item in items if "tests/browser/" in item.nodeid or item.nodeid.startswith("browser/")]
    for item in browser:
        item.add_marker(pytest.mark.browser)
    items[:] = [item for item in items if item not in browser] + browser


class Api:
    """A JSON client for /api/ acting as one user (session) or anonymously."""

    def __init__(self, client: Client, headers: dict[str, str] | None = None) -> None:
        self.client = client
        self.headers = headers or {}

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        kwargs: dict[str, Any] = {"headers": self.headers}
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = "application/json"
        elif params:
            kwargs["data"] = params
        response = getattr(self.client, method)(f"/api{path}", **kwargs)
        response.json_body = response.json() if response.content else None
        return response

    def get(self, path: str, **params: Any) -> Any:
        return self.call("get", path, **params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("post", path, body if body is not None else {})

    def patch(self, path: str, body: Any) -> Any:
        return self.call("patch", path, body)

    def delete(self, path: str) -> Any:
        return self.call("delete", path)


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def make(role: Role = Role.VIEWER, **fields: Any) -> User:
        return UserFactory(role=role, **fields)

    return make


@pytest.fixture
def api_as(make_user: Callable[..., User]) -> Callable[..., Api]:
    """`api_as(role)` or `api_as(user=...)`: an API client logged in by session."""

    def make(role: Role = Role.VIEWER, user: User | None = None) -> Api:
        client = Client()
        client.force_login(user or make_user(role))
        return Api(client)

    return make


@pytest.fixture
def anonymous_api(db: None) -> Api:
    return Api(Client())


@pytest.fixture
def admin_api(api_as: Callable[..., Api]) -> Api:
    return api_as(Role.ADMIN)
