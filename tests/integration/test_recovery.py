"""Plan-level recovery on the real stack (a Celery worker, Postgres, Redis) against the
scripted OpenAI-compatible server: a part that fails for good is repaired, then its task is
replanned with the failure as feedback; a slow sibling is cancelled without waiting for it;
the parts' answers are composed by one `aggregate` call."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest

from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.models import Admissibility, Node, Primitive, Role, RunEvent
from studio.services.pools import endpoint_create
from studio.services.runs import run_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FIRST = {"subtasks": [
    {"id": "a", "text": "What is 2+3?", "depends_on": []},
    {"id": "b", "text": "Divide 7 by zero.", "depends_on": []},
]}  # fmt: skip
SECOND = {"subtasks": [
    {"id": "a", "text": "What is 2+3?", "depends_on": []},
    {"id": "c", "text": "What is 4*5?", "depends_on": []},
]}  # fmt: skip


class Server:
    """Plans (the second plan only after feedback), answers the arithmetic, refuses to divide
    by zero (HTTP 400, on every endpoint), composes answers; `slow_s` delays "2+3" the first time."""

    def __init__(self, slow_s: float = 0.0) -> None:
        self.slow_s = slow_s
        self.lock = threading.Lock()
        self.seen: list[tuple[float, str, str]] = []  # (time, kind, user message)
        self.returned: dict[str, float] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        user = last_user(body)
        kind = "plan" if "You split a task" in system else "aggregate" if "You compose" in system else "solve"
        with self.lock:
            self.seen.append((time.monotonic(), kind, user))
            slow = kind == "solve" and user == "What is 2+3?" and self.slow_s and "2+3" not in self.returned
            if slow:
                self.returned["2+3"] = time.monotonic() + self.slow_s
        if kind == "plan":
            return Reply(content=json.dumps(SECOND if "An earlier plan for this task failed" in user else FIRST))
        if kind == "aggregate":
            total = sum(int(v) for v in re.findall(r"Answer: (\d+)", user))
            return Reply(content=str(total), prompt_tokens=40, completion_tokens=2)
        answers = {"What is 2+3?": "5", "What is 4*5?": "20"}
        if user in answers:
            return Reply(content=answers[user], delay_s=self.slow_s if slow else 0.0)
        return Reply(status=400, content=f"cannot: {user[:60]}")


def make_pool(server: ScriptedOpenAI, endpoints: int) -> Any:
    pool = PoolFactory()
    for n in range(endpoints):
        endpoint = endpoint_create(
            pool_id=pool.pk, name=f"scripted-{n}", model=f"openai/scripted-{n}", api_base=server.base_url,
            api_key="sk-test", input_cost_per_mtok=1 + n, output_cost_per_mtok=1 + n,
        )  # fmt: skip
        primitives = ("direct", "plan", "aggregate") if n == 0 else ("direct",)
        for name in primitives:
            Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name=name)[0])
    return pool


def events_of(run_id: int) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run_id=run_id).order_by("seq"))


def test_a_part_that_fails_for_good_is_repaired_then_replanned_and_one_aggregate_composes(
    celery_worker: object,
) -> None:
    script = Server()
    with ScriptedOpenAI(script) as server:
        owner = UserFactory(role=Role.VIEWER)
        pool = make_pool(server, endpoints=2)
        task = task_create(owner=owner, text="Add 2+3 and 7/0.", decomposable=True)
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk)
        finished = wait_for_run(run.pk, timeout=60)
    events = events_of(run.pk)
    log = "\n".join(f"{e.type} {e.payload}" for e in events)
    assert finished.status == "succeeded", log
    assert finished.final_answer == "25"
    nodes = {n.key: n for n in Node.objects.filter(run=run)}
    # The part was repaired with the other endpoint first, then its round was closed.
    b_attempts = [(a.endpoint.name, a.status) for a in nodes["root.b"].attempts.order_by("number")]
    assert b_attempts == [("scripted-0", "error"), ("scripted-1", "error")]
    assert nodes["root.b"].status == "cancelled" and nodes["root.a"].status == "succeeded"
    replanned = [e.payload for e in events if e.type == "node.replanned"]
    assert len(replanned) == 1 and "Divide 7 by zero." in replanned[0]["feedback"]
    assert nodes["root"].metadata["replans"] == 1
    plans = [user for _, kind, user in script.seen if kind == "plan"]
    assert len(plans) == 2 and "bad_request" in plans[1]
    # One aggregate call, with both parts' answers of the new plan.
    aggregates = [user for _, kind, user in script.seen if kind == "aggregate"]
    assert len(aggregates) == 1
    assert "What is 2+3?\n  Answer: 5" in aggregates[0] and "What is 4*5?\n  Answer: 20" in aggregates[0]
    assert nodes["root.aggregate_r1"].status == "succeeded" and nodes["root.aggregate_r1"].answer == "25"


def test_the_policy_cancels_a_slow_sibling_and_replans_before_it_comes_back(celery_worker: object) -> None:
    script = Server(slow_s=4.0)
    with ScriptedOpenAI(script) as server:
        owner = UserFactory(role=Role.VIEWER)
        pool = make_pool(server, endpoints=1)
        task = task_create(owner=owner, text="Add 2+3 and 7/0.", decomposable=True)
        run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk)
        finished = wait_for_run(run.pk, timeout=60)
        slow_back = script.returned["2+3"]
        events = events_of(run.pk)
    log = "\n".join(f"{e.type} {e.payload}" for e in events)
    assert finished.status == "succeeded" and finished.final_answer == "25", log
    at = {(e.type, e.payload.get("key")): e for e in events}
    cancelled, replanned = at[("node.cancelled", "root.a")], at[("node.replanned", "root")]
    assert cancelled.seq < replanned.seq
    # The cancel and the replan came while the slow call was still out: by the event times,
    # and by the seconds the run took against the call's delay.
    first_slow = next(e for e in events if e.type == "attempt.queued" and e.payload["key"] == "root.a")
    assert (cancelled.created_at - first_slow.created_at).total_seconds() < script.slow_s
    assert (replanned.created_at - first_slow.created_at).total_seconds() < script.slow_s
    assert Node.objects.get(run=run, key="root.a").status == "cancelled"
    # And the run ended without waiting for it.
    assert finished.finished_at is not None
    assert (finished.finished_at - first_slow.created_at).total_seconds() < script.slow_s
    assert slow_back > 0
