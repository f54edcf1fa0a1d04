"""`manage.py up` end to end: embedded services, health, Ctrl-C, and data kept on restart."""

from __future__ import annotations

import http.cookiejar
import json
import os
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.support.up import UpProcess

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def Up(data_dir: Path, port: int) -> UpProcess:  # noqa: N802 - reads as the class it was
    """`make up`'s `manage.py up` on embedded services under `data_dir`."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(ORCHESTRA_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="studio.settings.dev")
    env.update(ORCHESTRA_DEMO_POLICY="false")  # its training takes minutes; tests/studio/test_bootstrap.py
    env.pop("ORCHESTRA_ADMIN_PASSWORD", None)
    return UpProcess(["--port", str(port), "--concurrency", "1"], env)


def client(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    token = json.loads(opener.open(f"{base}/api/auth/csrf").read())["csrf_token"]
    opener.addheaders = [("X-CSRFToken", token), ("Content-Type", "application/json")]
    body = json.dumps({"username": username, "password": password}).encode()
    opener.open(urllib.request.Request(f"{base}/api/auth/login", body, method="POST"))
    # Logging in rotates the CSRF token, as it should.
    rotated = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    opener.addheaders = [("X-CSRFToken", rotated or ""), ("Content-Type", "application/json")]
    return opener


def test_up_serves_stops_and_keeps_data(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    first = Up(tmp_path, port)
    try:
        password = first.wait_for(r"with password '([^']+)'").group(1)
        first.wait_for(r"Orchestra Studio is up at")
        # The web server and the worker's two processes (--concurrency 1), 8 connections each.
        first.wait_for(r"Database connections: at most 8 per process, 24 for these 3 processes \(the server allows")
        health = json.loads(urllib.request.urlopen(f"{base}/api/health").read())
        assert health["status"] == "ok"
        assert health["db"]["ok"] and health["redis"]["ok"] and health["worker"]["ok"]
        api = client(base, "admin", password)
        body = json.dumps({"text": "kept across restarts"}).encode()
        created = json.loads(api.open(urllib.request.Request(f"{base}/api/tasks", body, method="POST")).read())
    finally:
        assert first.stop() == 0
    assert "Stopped; the embedded services' data is kept in" in "".join(first.lines)

    second = Up(tmp_path, port)
    try:
        second.wait_for(r"Orchestra Studio is up at")
        assert not any("Created admin user" in line for line in second.lines)
        api = client(base, "admin", password)
        task = json.loads(api.open(f"{base}/api/tasks/{created['id']}").read())
        assert task["text"] == "kept across restarts"
    finally:
        assert second.stop() == 0


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        up = Up(tmp_path, busy.getsockname()[1])
        assert up.process.wait(timeout=60) != 0
    assert "already in use" in "".join(up.lines)
