"""The suite never relies on `up`'s default port 8000 being free (tests/conftest.py holds it)."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

from tests.conftest import UP_DEFAULT_PORT


def test_port_8000_is_taken_while_the_suite_runs(up_default_port_held: ThreadingHTTPServer | None) -> None:
    """Something listens on 127.0.0.1:8000 for every test: the suite's holder, or a studio the
    developer runs beside the tests. A test that starts `up` without a port of its own fails."""
    with socket.create_connection(("127.0.0.1", UP_DEFAULT_PORT), timeout=5):
        pass
    if up_default_port_held is not None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{UP_DEFAULT_PORT}/api/health", timeout=5)
        except urllib.error.HTTPError as answer:
            assert answer.code == 503
            assert b"held by the test suite" in answer.read()
        else:
            raise AssertionError("the holder of port 8000 answered 200")
