"""A run's WebSocket through a real HAProxy in front of two web processes (issue 28).

Two uvicorn processes serve studio.asgi on loopback, against the test database and Redis,
behind HAProxy (Debian's). A client watches a run through web host A, then reconnects
through web host B with `?after=<last seq seen>`: every event of the run arrives exactly
once, in order, with no gap, whichever host wrote the notification. HAProxy routes by a
`pin` query parameter (a test-only rule) and names the server that answered in a response
header, so the test knows each socket really went through the host it asked for.

Events are appended by this process, so they reach the web processes only through the
Redis channel layer (live) or PostgreSQL (the replay after `after`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from studio.services.events import run_event_append, run_events_append
from studio.services.tokens import token_create
from tests.factories import RunFactory, UserFactory
from tests.support.databases import child_database_url

HAPROXY = shutil.which("haproxy") or next(
    (path for path in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.path.exists(path)), None
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (make pytest installs Debian's haproxy)"),
]

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ("web-a", "web-b")
START_TIMEOUT_S = 60
RECV_TIMEOUT_S = 15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def haproxy_config(port: int, backends: dict[str, int]) -> str:
    """A frontend on `port` that sends `?pin=<host>` to that host, anything else to either."""
    # A TCP check: /api/health also pings Celery workers, and this test runs none.
    servers = "\n".join(f"    server {name} 127.0.0.1:{p} check inter 500ms" for name, p in backends.items())
    pins = "\n".join(f"    use-server {name} if {{ urlp(pin) -m str {name} }}" for name in backends)
    return f"""
global
    maxconn 256

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout tunnel 60s

frontend studio
    bind 127.0.0.1:{port}
    default_backend web

backend web
    balance roundrobin
    http-response set-header X-Served-By %s
{pins}
{servers}
"""


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited ({process.returncode}): {log.read_text()[-3000:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listened on {port} within {START_TIMEOUT_S} s: {log.read_text()[-3000:]}")


@pytest.fixture
def balanced(tmp_path: Path) -> Iterator[str]:
    """Two web processes behind HAProxy; yields HAProxy's base URL once both pass its check."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "studio.settings.test",
        "DATABASE_URL": child_database_url("ws-haproxy"),
        "LOG_LEVEL": "WARNING",
    }
    ports = {name: free_port() for name in HOSTS}
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name, port in ports.items():
            log = tmp_path / f"{name}.log"
            command = [
                sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1",
                "--port", str(port), "--lifespan", "off", "--log-level", "warning",
            ]  # fmt: skip
            with log.open("wb") as out:
                processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT))
            _wait_listening(port, processes[-1], log)
        lb_port = free_port()
        config = tmp_path / "haproxy.cfg"
        config.write_text(haproxy_config(lb_port, ports))
        assert HAPROXY is not None
        with (tmp_path / "haproxy.log").open("wb") as out:
            processes.append(
                subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT)
            )
        _wait_listening(lb_port, processes[-1], tmp_path / "haproxy.log")
        url = f"http://127.0.0.1:{lb_port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        served: set[str] = set()
        while served != set(HOSTS):  # both up in HAProxy's eyes: each pin answers from its host
            assert time.monotonic() < deadline, f"HAProxy did not reach both hosts (only {served})"
            for name in HOSTS:
                try:
                    response = httpx.get(f"{url}/api/health", params={"pin": name}, timeout=5)
                except httpx.HTTPError:
                    continue
                if response.headers.get("x-served-by") == name:
                    served.add(name)
            time.sleep(0.2)
        yield url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _receive_until(socket_: object, last: int, seqs: list[int]) -> None:
    """Append each event's seq to `seqs` until the event numbered `last` arrives."""
    while not seqs or seqs[-1] < last:
        message = json.loads(await asyncio.wait_for(socket_.recv(), timeout=RECV_TIMEOUT_S))  # type: ignore[attr-defined]
        assert message["kind"] == "event", message
        seqs.append(message["seq"])


def _notes(run_id: int, first: int, count: int) -> None:
    run_events_append(
        run_id=run_id, events=[("node.noted", {"key": "root", "n": n}) for n in range(first, first + count)]
    )


async def _watch_across_hosts(url: str, token: str, run_id: int) -> tuple[list[int], list[int], list[str]]:
    """Watch through web-a, leave, let events pass, resume through web-b after the last seq seen."""
    from channels.db import database_sync_to_async as sync_to_async  # closes its connection after
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    headers = {"Authorization": f"Bearer {token}"}
    ws = url.replace("http://", "ws://")
    served: list[str] = []
    first: list[int] = []
    async with connect(
        f"{ws}/ws/runs/{run_id}/?pin=web-a&after=0", additional_headers=headers, origin=Origin(url), open_timeout=15
    ) as socket_a:
        served.append(socket_a.response.headers.get("X-Served-By", ""))  # type: ignore[union-attr]
        await _receive_until(socket_a, 3, first)  # replayed from PostgreSQL
        for n in range(3):  # live, one commit (one notification) each
            await sync_to_async(run_event_append)(run_id=run_id, type="node.noted", payload={"key": "root", "n": n})
        await _receive_until(socket_a, 6, first)
    # Written while no socket is open: only the replay on B can deliver them.
    await sync_to_async(_notes)(run_id, 100, 4)
    second: list[int] = []
    async with connect(
        f"{ws}/ws/runs/{run_id}/?pin=web-b&after={first[-1]}",
        additional_headers=headers,
        origin=Origin(url),
        open_timeout=15,
    ) as socket_b:
        served.append(socket_b.response.headers.get("X-Served-By", ""))  # type: ignore[union-attr]
        await _receive_until(socket_b, 10, second)
        await sync_to_async(_notes)(run_id, 200, 5)
        await sync_to_async(run_event_append)(
            run_id=run_id, type="run.finished", payload={"status": "succeeded", "reason": "done"}
        )
        await _receive_until(socket_b, 16, second)
    return first, second, served


def test_a_websocket_resumes_through_the_other_web_host_with_no_gap(balanced: str) -> None:
    user = UserFactory()
    token = token_create(user=user, name="ws-haproxy")[1]
    run = RunFactory(owner=user, task__owner=user)
    _notes(run.pk, 0, 3)  # seq 1-3, before anyone watches

    first, second, served = asyncio.run(_watch_across_hosts(balanced, token, run.pk))

    assert served == ["web-a", "web-b"], f"HAProxy sent the sockets to {served}"
    assert first == [1, 2, 3, 4, 5, 6], first
    assert second == list(range(7, 17)), second
    run.refresh_from_db()
    # Every event of the run, once each, in order, across the switch.
    assert first + second == list(range(1, run.last_seq + 1))
