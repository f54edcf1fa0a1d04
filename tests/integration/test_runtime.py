"""End to end: a real Celery worker, Redis, Postgres and Channels, against the scripted
OpenAI-compatible server. A task decomposes into three parallel nodes plus one dependent
node, then aggregates; a WebSocket client sees every event in order, and after
reconnecting with ?after= it gets exactly the missed ones."""

from __future__ import annotations

import json
import re
import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.asgi import application
from studio.models import Admissibility, Node, Primitive, Role, Run, RunEvent, User
from studio.services.pools import endpoint_create
from studio.services.runs import run_cancel, run_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PLAN = {
    "subtasks": [
        {"id": "a", "text": "What is 2+3?", "depends_on": []},
        {"id": "b", "text": "What is 4*5?", "depends_on": []},
        {"id": "c", "text": "What is 10-7?", "depends_on": []},
        {"id": "d", "text": "Add the three results and double the sum.", "depends_on": ["a", "b", "c"]},
    ]
}
ARITHMETIC = {"What is 2+3?": "5", "What is 4*5?": "20", "What is 10-7?": "3"}


class Calculator:
    """Answers the planner with PLAN and each subtask correctly, after a delay; records when
    each request arrived, to prove the independent ones overlapped."""

    def __init__(self, delay_s: float = 0.4) -> None:
        self.delay_s = delay_s
        self.arrivals: dict[str, float] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        user = last_user(body)
        if "You split a task" in system:
            return Reply(content=json.dumps(PLAN))
        for question, answer in ARITHMETIC.items():
            if user.strip() == question:
                with self.lock:
                    self.arrivals[question] = time.monotonic()
                return Reply(content=answer, delay_s=self.delay_s, prompt_tokens=10, completion_tokens=1)
        if "double the sum" in user:
            values = [int(v) for v in re.findall(r"Answer: (\d+)", user)]
            return Reply(content=str(2 * sum(values)), prompt_tokens=40, completion_tokens=2)
        return Reply(status=400, content=f"unscripted prompt: {user[:80]}")


def make_pool(server: ScriptedOpenAI, name: str = "scripted", primitives: tuple[str, ...] = ("direct", "plan")) -> Any:
    pool = PoolFactory()
    endpoint = endpoint_create(
        pool_id=pool.pk, name=name, model="openai/scripted", api_base=server.base_url, api_key="sk-test",
        input_cost_per_mtok=1, output_cost_per_mtok=1,
    )  # fmt: skip
    for primitive in primitives:
        Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name=primitive)[0])
    return pool


def session_cookie(user: User) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def read_until_finished(ws: WebsocketCommunicator, timeout: float = 30) -> list[dict[str, Any]]:
    """The events, to run.finished (the calls' text as it streams, `kind: delta`, left out)."""
    events = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = await ws.receive_json_from(timeout=timeout)
        if event["kind"] == "delta":
            continue
        events.append(event)
        if event["type"] == "run.finished":
            return events
    raise AssertionError("no run.finished event")


@pytest.mark.asyncio
async def test_a_dag_runs_in_parallel_streams_live_and_replays_on_reconnect(celery_worker: object) -> None:
    calculator = Calculator()
    with ScriptedOpenAI(calculator) as server:
        owner = await database_sync_to_async(UserFactory)(role=Role.VIEWER)
        pool = await database_sync_to_async(make_pool)(server)
        task = await database_sync_to_async(task_create)(
            owner=owner, text="Compute 2+3, 4*5 and 10-7, then double their sum.", decomposable=True
        )
        run = await database_sync_to_async(run_create)(owner=owner, task_id=task.pk, pool_id=pool.pk)
        cookie = await database_sync_to_async(session_cookie)(owner)
        origin = (b"origin", b"http://testserver")

        ws = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?after=0", headers=[origin, cookie])
        assert (await ws.connect())[0]
        live = await read_until_finished(ws)
        await ws.disconnect()

    finished = await database_sync_to_async(Run.objects.get)(pk=run.pk)
    assert finished.status == "succeeded", "\n".join(f"{e['type']} {e['payload']}" for e in live)
    assert finished.final_answer == "56"
    keys = await database_sync_to_async(lambda: sorted(Node.objects.filter(run=run).values_list("key", flat=True)))()
    assert keys == ["root", "root.a", "root.aggregate", "root.b", "root.c", "root.d"]

    # Every event, in order, no gaps, no duplicates.
    seqs = [event["seq"] for event in live]
    assert seqs == list(range(1, len(seqs) + 1))
    stored = await database_sync_to_async(
        lambda: list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    )()
    assert seqs == stored

    # The three independent subtasks were all queued before any came back, and overlapped.
    queued = [
        e["seq"]
        for e in live
        if e["type"] == "attempt.queued" and e["payload"]["key"] in {"root.a", "root.b", "root.c"}
    ]
    first_back = min(e["seq"] for e in live if e["type"] == "attempt.finished" and e["payload"]["node"] != "root")
    assert len(queued) == 3 and max(queued) < first_back
    arrivals = sorted(calculator.arrivals.values())
    assert arrivals[-1] - arrivals[0] < calculator.delay_s

    # The dependent node waited for all three.
    ready_d = next(e["seq"] for e in live if e["type"] == "node.ready" and e["payload"]["key"] == "root.d")
    succeeded = [
        e["seq"]
        for e in live
        if e["type"] == "node.succeeded" and e["payload"]["key"] in {"root.a", "root.b", "root.c"}
    ]
    assert max(succeeded) < ready_d

    # Reconnect after event k: exactly the events after k, then nothing more.
    k = len(seqs) // 2
    async_cookie = cookie
    ws = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?after={k}", headers=[origin, async_cookie])
    assert (await ws.connect())[0]
    missed = [await ws.receive_json_from(timeout=5) for _ in range(len(seqs) - k)]
    assert [e["seq"] for e in missed] == list(range(k + 1, len(seqs) + 1))
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


def test_a_failed_pair_is_repaired_with_another(celery_worker: object) -> None:
    with (
        ScriptedOpenAI(lambda body: Reply(status=401, content="bad key")) as broken,
        ScriptedOpenAI(lambda body: Reply(content="42")) as working,
    ):
        pool = make_pool(broken, name="broken", primitives=("direct",))
        second = endpoint_create(
            pool_id=pool.pk, name="working", model="openai/scripted", api_base=working.base_url, api_key="k",
            input_cost_per_mtok=5, output_cost_per_mtok=5,
        )  # fmt: skip
        Admissibility.objects.create(endpoint=second, primitive=Primitive.objects.get(name="direct"))
        owner = UserFactory()
        task = task_create(owner=owner, text="What is 6*7?")
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk)
        run = wait_for_run(run.pk)
    assert run.status == "succeeded" and run.final_answer == "42"
    queued = [e.payload for e in RunEvent.objects.filter(run=run, type="attempt.queued")]
    assert [q["repair"] for q in queued] == [False, True]
    assert len(broken.requests) == 1  # auth is permanent: not retried on the same pair


def test_transient_failures_are_retried_then_the_node_fails_with_its_reason(celery_worker: object) -> None:
    with ScriptedOpenAI(lambda body: Reply(status=500, content="overloaded")) as server:
        pool = make_pool(server, primitives=("direct",))
        owner = UserFactory()
        task = task_create(owner=owner, text="What is 6*7?")
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, policy_config={"retries": 3})
        run = wait_for_run(run.pk, timeout=60)
    assert run.status == "failed"
    assert "Gave up after 4 attempts" in run.end_reason
    assert "server_error" in run.end_reason


def test_a_cost_budget_ends_the_run_with_its_partial_result(celery_worker: object) -> None:
    calculator = Calculator(delay_s=0)
    with ScriptedOpenAI(calculator) as server:
        pool = make_pool(server)
        owner = UserFactory()
        task = task_create(owner=owner, text="Compute 2+3, 4*5 and 10-7, then double.", decomposable=True)
        # Each subtask costs 11 tokens at $1/M; the limit allows the planner and little more.
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, max_cost_usd=Decimal("0.000030"))
        run = wait_for_run(run.pk)
    assert run.status == "failed"
    assert run.end_reason.startswith("budget: cost")
    assert float(run.cost_usd) <= 0.000030 + 3 * 11e-6  # at most the attempts already in flight


def test_a_node_budget_stops_a_decomposition(celery_worker: object) -> None:
    with ScriptedOpenAI(Calculator(delay_s=0)) as server:
        pool = make_pool(server)
        owner = UserFactory()
        task = task_create(owner=owner, text="Compute things.", decomposable=True)
        run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, max_nodes=3).pk)
    assert run.status == "failed"
    assert "would make 6 nodes; the limit is 3" in run.end_reason


def test_a_run_can_be_cancelled(celery_worker: object) -> None:
    with ScriptedOpenAI(lambda body: Reply(content="slow", delay_s=2)) as server:
        pool = make_pool(server, primitives=("direct",))
        owner = UserFactory()
        task = task_create(owner=owner, text="q")
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk)
        time.sleep(0.5)
        run_cancel(user=owner, run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "cancelled"
        time.sleep(2.5)  # the attempt in flight comes back: billed, but the run stays cancelled
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert RunEvent.objects.filter(run=run, type="run.finished").count() == 1
