"""`manage.py up` end to end: embedded services, health, Ctrl-C, and data kept on restart."""

from __future__ import annotations

import http.cookiejar
import json
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from providers.ports import free_port
from tests.support.up import UpProcess

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


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


def children_of(data_dir: Path) -> dict[str, int]:
    """The pids `up` records for its children in .data/services.env."""
    lines = (data_dir / "services.env").read_text().splitlines()
    pairs = (line.partition("=") for line in lines)
    return {key.removeprefix("CHILD_"): int(value) for key, _, value in pairs if key.startswith("CHILD_")}


def health_of(base: str) -> dict[str, Any]:
    try:
        return json.loads(urllib.request.urlopen(f"{base}/api/health", timeout=10).read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())


def wait_health(base: str, ok: bool, part: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = health_of(base)
        if report.get(part, {}).get("ok") is ok:
            return report
        time.sleep(0.2)
    raise AssertionError(f"/api/health's {part} never became ok={ok}: {report}")


def test_up_answers_a_users_own_prompt_with_the_local_model_and_restarts_what_dies(tmp_path: Path) -> None:
    """A fresh `up`: the local model is served and healthy, a prompt no recording answers gets
    its answer through /v1; then the worker and the model server, each killed with SIGKILL, are
    started again while /api/health reports them down, and /v1 answers again."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    up = Up(tmp_path, port)
    try:
        password = up.wait_for(r"with password '([^']+)'").group(1)
        up.wait_for(r"Orchestra Studio is up at")
        assert "Local model: smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf)" in "".join(up.lines)
        health = health_of(base)
        assert health["status"] == "ok" and health["model"]["ok"] and health["model"]["model"] == "smollm2"
        api = client(base, "admin", password)
        body = json.dumps({"name": "test"}).encode()
        token = json.loads(api.open(urllib.request.Request(f"{base}/api/tokens", body, method="POST")).read())["token"]

        def ask() -> str:
            openai = OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=120)
            completion = openai.chat.completions.create(
                model="orchestra", messages=[{"role": "user", "content": "What is 6*7?"}]
            )
            return completion.choices[0].message.content or ""

        assert ask().strip()

        for name in ("worker", "model"):
            os.kill(children_of(tmp_path)[name], signal.SIGKILL)
            up.wait_for(rf"The {name} process exited unexpectedly \(code -9\); starting it again")
            down = wait_health(base, False, name)
            assert down["status"] == "degraded"
            up.wait_for(rf"Started the {name} process again")
            wait_health(base, True, name)
        assert up.process.poll() is None
        assert ask().strip()
    finally:
        assert up.stop() == 0


def test_a_model_host_serves_the_local_model_alone(tmp_path: Path) -> None:
    """`up --role model`: llama.cpp's server on the shipped model, no database, no Redis; it
    prints the URL that web and worker hosts set, and Ctrl-C stops it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(ORCHESTRA_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings.dev")
    up = UpProcess(["--role", "model", "--port", str(port)], env)
    try:
        url = up.wait_for(r"local model smollm2 is served at (\S+) ").group(1)
        assert url == f"http://127.0.0.1:{port}/v1"
        assert f"ORCHESTRA_LOCAL_MODEL_URL={url}" in "".join(up.lines)
        listed = json.loads(urllib.request.urlopen(f"{url}/models", timeout=10).read())
        assert [entry["id"] for entry in listed["data"]] == ["smollm2"]
    finally:
        assert up.stop() == 0
    assert not (tmp_path / "postgres").exists() and not (tmp_path / "redis").exists()  # no embedded service
