"""PostgreSQL connections stay within the configured bound, whatever the traffic (issue 22).

The web server (uvicorn) and two Celery workers, one prefork and one on threads, run as
processes of their own under the production settings, with DATABASE_POOL_MAX_SIZE=3. A few
hundred requests go through the ASGI server, eight at a time: /v1 chat completions with the
official `openai` client (their runs go to a scripted OpenAI-compatible endpoint; half of them
with a deadline, which the fast path leaves to the full machinery: the run written, started and
waited for under /v1's own handler, which sends no `request_finished`), run and tree reads, run
lists, and WebSocket watches (Channels consumers). A thread samples
pg_stat_activity all along. Persistent connections under ASGI (the settings before the fix)
leave one behind in a request's thread now and then, and Celery's threads keep one each:
this test then sees more than the bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
import redis
from django.conf import settings
from openai import OpenAI

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio.models import Admissibility, Primitive
from studio.services.pools import endpoint_create
from studio.services.tokens import token_create
from tests.factories import PoolFactory, UserFactory
from tests.support.databases import child_database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BOUND = 3  # DATABASE_POOL_MAX_SIZE of every process under test
PREFORK = 2  # pool processes of the prefork worker, besides its parent
CHATS = 64
CLIENTS = 8
WATCHES = 16
REDIS_DB = 11  # a database of its own: nothing else consumes its queues


def with_redis_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = {**dict(parse_qsl(parts.query)), "db": str(db)}
        # not geturl(): it drops the empty host, and redis-py refuses "unix:/path"
        return f"unix://{parts.path}?{urlencode(query)}"
    return parts._replace(path=f"/{db}").geturl()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Sampler:
    """Connections to the test database per application name, every 20 ms; keeps the maxima."""

    def __init__(self) -> None:
        self.peak: Counter[str] = Counter()
        self.samples = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        parts = urlsplit(child_database_url("bound-sampler"))
        with psycopg.connect(parts.geturl(), autocommit=True) as conn:
            while not self.stopped.wait(0.02):
                rows = conn.execute(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name LIKE 'bound-%%' GROUP BY 1"
                ).fetchall()
                for name, count in rows:
                    self.peak[name] = max(self.peak[name], count)
                self.samples += 1

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Starts the web server and the workers; yields a function that returns the base URL
    once all answer, and stops them at the end."""
    port = free_port()
    redis_url = with_redis_db(os.environ["REDIS_URL"], REDIS_DB)
    redis.Redis.from_url(redis_url).flushdb()
    base = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "studio.settings.production",
        "SECRET_KEY": "connection-bound-test",
        "FIELD_ENCRYPTION_KEY": ",".join(settings.FIELD_ENCRYPTION_KEYS),
        "REDIS_URL": redis_url,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback: no TLS proxy in front
        "DATABASE_POOL_MAX_SIZE": str(BOUND),
        "ORCHESTRA_RECOVERY_INTERVAL_S": "0",
        "LOG_LEVEL": "WARNING",
    }
    celery = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "orchestrator,workers", "-l", "INFO"]
    commands = {
        "bound-web": [
            sys.executable, "-m", "uvicorn", "studio.asgi:application", "--port", str(port),
            "--lifespan", "off", "--log-level", "warning",
        ],
        "bound-prefork": [*celery, "--pool", "prefork", "--concurrency", str(PREFORK), "-n", "prefork@%h"],
        "bound-threads": [*celery, "--pool", "threads", "--concurrency", "8", "-n", "threads@%h"],
    }  # fmt: skip
    processes = []
    for name, command in commands.items():
        log = (tmp_path / f"{name}.log").open("wb")
        env = {**base, "DATABASE_URL": child_database_url(name)}
        processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))

    def ready() -> str:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            dead = [name for name, p in zip(commands, processes, strict=True) if p.poll() is not None]
            assert not dead, f"{dead} exited: {(tmp_path / f'{dead[0]}.log').read_text()[-3000:]}"
            logs = [(tmp_path / f"{name}.log").read_bytes() for name in commands if name != "bound-web"]
            workers_ready = all(b" ready." in log for log in logs)
            try:
                if workers_ready and httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError("the web server and both workers were not up within 60 s")

    try:
        yield ready
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        redis.Redis.from_url(redis_url).flushdb()


async def watch(url: str, token: str, run_id: int) -> int:
    """Joins a run's WebSocket, reads its replayed events up to run.finished; returns how many."""
    from websockets.asyncio.client import connect

    ws_url = url.replace("http://", "ws://") + f"/ws/runs/{run_id}/?after=0"
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(ws_url, additional_headers=headers, origin=url, open_timeout=15) as socket_:  # type: ignore[arg-type]
        events = 0
        while True:
            message = json.loads(await asyncio.wait_for(socket_.recv(), timeout=15))
            events += 1
            if message.get("type") == "run.finished":
                return events


def test_connections_stay_within_the_bound(stack: Callable[[], str]) -> None:
    user = UserFactory()
    token = token_create(user=user, name="bound")[1]
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=12, completion_tokens=3)) as upstream:
        pool = PoolFactory()
        endpoint = endpoint_create(
            pool_id=pool.pk, name="scripted", model="openai/scripted", api_base=upstream.base_url, api_key="sk-test",
            input_cost_per_mtok=1, output_cost_per_mtok=1,
        )  # fmt: skip
        Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="direct")[0])
        url = stack()
        client = OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=60)
        statuses: Counter[int] = Counter()

        def chat(n: int) -> int:
            raw = client.chat.completions.with_raw_response.create(
                model="orchestra", messages=[{"role": "user", "content": f"What is {n} * 7?"}],
                extra_body={"pool": pool.name} | ({"deadline_s": 60} if n % 2 else {}),
            )  # fmt: skip
            statuses[raw.http_response.status_code] += 1
            run_id = int(raw.headers["x-orchestra-run-id"])
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
                deadline = time.monotonic() + 20  # /v1's fast path writes the run just after its answer
                while api.get(f"/api/runs/{run_id}").status_code == 404 and time.monotonic() < deadline:
                    time.sleep(0.02)
                for path in (f"/api/runs/{run_id}", f"/api/runs/{run_id}/tree", "/api/runs?limit=5"):
                    statuses[api.get(path).status_code] += 1
            return run_id

        with Sampler() as sampler:
            with ThreadPoolExecutor(CLIENTS) as clients:
                run_ids = list(clients.map(chat, range(CHATS)))

            async def watch_all() -> list[int]:
                return await asyncio.gather(*(watch(url, token, run_id) for run_id in run_ids[:WATCHES]))

            watched = asyncio.run(watch_all())
            time.sleep(0.2)  # one more sample after the last request

    assert statuses == {200: CHATS * 4}, statuses
    assert len(watched) == WATCHES and min(watched) >= 2
    assert sampler.samples > 50
    bounds = {"bound-web": BOUND, "bound-prefork": BOUND * (1 + PREFORK), "bound-threads": BOUND}
    assert {name: sampler.peak[name] for name in bounds} == {
        name: min(sampler.peak[name], bound) for name, bound in bounds.items()
    }, f"peak connections {dict(sampler.peak)}; bounds {bounds}"
    assert sampler.peak["bound-web"] >= 1 and sampler.peak["bound-threads"] >= 1
