"""`kill -9` of the web process with 50 /v1 calls in flight on the fast path.

The web server runs in a process of its own (uvicorn, as `up` runs it) against a scripted
upstream that counts the calls it answered; a real Celery worker runs in this process. Ten
calls end before the kill; fifty are held by the upstream when the web process is killed, then
answered, to a process that is gone. The web process starts again, and a worker's recovery
sweep (`workers.runs_recover`) runs once their lease has passed. Then:

- every call the upstream answered has exactly one attempt row, under a run of its prompt:
  `ok` and billed for the ten, `error` / `lost` at $0 with its reason for the fifty;
- no prompt reached the upstream twice (nothing was called again), and no run's cost counts
  more than its one attempt;
- each run reads 200 from the restarted server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

from providers.ports import free_port
from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio import queues
from studio.models import Attempt, Run, User
from studio.services.fast_lost import END_REASON
from studio.services.run_record import LOST
from tests.integration.test_fast_path import pool_of
from tests.support.databases import child_database_url
from tests.support.runs import recorded_runs
from tests.support.worker import running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
DONE_BEFORE = 10
IN_FLIGHT = 50
LEASE_S = 2  # ORCHESTRA_ATTEMPT_STALE_S of the web process: its calls' lease


@contextmanager
def web_process(port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """studio.asgi on uvicorn in a process of its own, on the test database and cache."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "studio.settings.test",
        "DATABASE_URL": child_database_url("fast-path-kill"),
        "ORCHESTRA_TEST_CACHE_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
        "FIELD_ENCRYPTION_KEY": ",".join(settings.FIELD_ENCRYPTION_KEYS),
        "ORCHESTRA_ATTEMPT_STALE_S": str(LEASE_S),
    }
    command = [
        sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1", "--port", str(port),
        "--lifespan", "off", "--log-level", "warning",
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"nothing listened on {port}: {log.read_text()[-3000:]}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)


def chat(base: str, token: str, pool_id: int, prompt: str) -> httpx.Response:
    body = {"model": "orchestra/default", "messages": [{"role": "user", "content": prompt}], "pool": pool_id}
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{base}/v1/chat/completions", json=body, headers=headers, timeout=60)


def test_every_call_answered_before_a_kill_has_one_attempt_and_none_is_billed_twice(
    tmp_path: Path, user_token: tuple[User, str]
) -> None:
    token = user_token[1]
    release = threading.Event()
    answered: Counter[str] = Counter()
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> Reply:
        prompt = last_user(body)
        if prompt.startswith("held"):
            release.wait(120)
        with lock:
            answered[prompt] += 1
        return Reply(content="42", prompt_tokens=10, completion_tokens=5)

    port, log = free_port(), tmp_path / "web.log"
    base = f"http://127.0.0.1:{port}"
    with ScriptedOpenAI(script) as upstream, running_worker(concurrency=4):
        pool = pool_of(upstream, ("only", 1.0))
        with web_process(port, log) as web:
            for n in range(DONE_BEFORE):
                reply = chat(base, token, pool.pk, f"done {n}")
                assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "42"
            callers = ThreadPoolExecutor(IN_FLIGHT)
            calls = [callers.submit(chat, base, token, pool.pk, f"held {n}") for n in range(IN_FLIGHT)]
            deadline = time.monotonic() + 60
            while len(upstream.requests) < DONE_BEFORE + IN_FLIGHT:
                assert time.monotonic() < deadline, f"{len(upstream.requests)} calls reached the upstream"
                time.sleep(0.05)
            web.send_signal(signal.SIGKILL)
            web.wait(timeout=30)
            release.set()  # the upstream answers the fifty, to a process that is gone
            for call in calls:
                with pytest.raises(httpx.HTTPError):
                    call.result(timeout=60)
            callers.shutdown()
        deadline = time.monotonic() + 60
        while sum(answered.values()) < DONE_BEFORE + IN_FLIGHT:
            assert time.monotonic() < deadline, answered
            time.sleep(0.05)
        with web_process(port, log):  # started again
            time.sleep(LEASE_S + 0.5)
            assert queues.send(queues.RUNS_RECOVER)  # as a worker's sweep queues it
            prompts = list(answered)
            runs = recorded_runs(len(prompts), timeout=60, task__text__in=prompts)
            headers = {"Authorization": f"Bearer {token}"}
            reads = [httpx.get(f"{base}/api/runs/{run.pk}", headers=headers) for run in runs]
            assert [read.status_code for read in reads] == [200] * len(runs)

    assert len(upstream.requests) == DONE_BEFORE + IN_FLIGHT  # nothing was called again
    assert set(answered.values()) == {1} and len(answered) == DONE_BEFORE + IN_FLIGHT
    by_prompt = {run.task.text: run for run in Run.objects.filter(task__text__in=list(answered)).select_related("task")}
    assert sorted(by_prompt) == sorted(answered)  # one run per prompt answered
    for prompt, run in by_prompt.items():
        (attempt,) = Attempt.objects.filter(node__run=run)  # exactly one attempt row per call
        assert run.cost_usd == attempt.cost_usd  # billed once
        if prompt.startswith("done"):
            assert (run.status, attempt.status, attempt.cost_usd) == ("succeeded", "ok", Decimal("0.00001500"))
        else:
            assert (run.status, run.end_reason) == ("failed", END_REASON)
            assert (attempt.status, attempt.error_kind, attempt.cost_usd) == ("error", LOST, Decimal(0))
