"""execute_attempt through a real Celery worker and Redis, against the scripted server and replay."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal

import pytest

from orchestrator.outcomes import prompt_key
from providers.scripted_openai import Reply, ScriptedOpenAI
from studio.models import Attempt, AttemptStatus, Node, Primitive, RecordedOutcome, Run, RunEvent
from studio.services.attempts import attempt_finish, attempt_start
from studio.services.pools import endpoint_create
from tests.factories import PoolFactory, RunFactory, TaskFactory
from tests.support.worker import running_worker
from workers.execution import execute
from workers.tasks import execute_attempt

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PLANTED_KEY = "sk-execute-planted-123"


@pytest.fixture
def worker() -> Iterator[object]:
    with running_worker(concurrency=2) as w:
        yield w


def make_attempt(model: str, api_base: str = "", primitive: str = "direct", request: dict | None = None) -> Attempt:
    pool = PoolFactory()
    endpoint = endpoint_create(
        pool_id=pool.pk, name="m", model=model, api_base=api_base, api_key=PLANTED_KEY if api_base else None,
        input_cost_per_mtok=Decimal("1"), output_cost_per_mtok=Decimal("1"),
    )  # fmt: skip
    run = RunFactory(task=TaskFactory(text="What is 6*7?"), pool=pool)
    node = Node.objects.create(run=run, key="root", kind="root", text=run.task.text)
    prim, _ = Primitive.objects.get_or_create(name=primitive)
    return Attempt.objects.create(
        node=node,
        number=1,
        endpoint=endpoint,
        primitive=prim,
        idempotency_key=f"a-{node.pk}",
        request=request or {},
    )


def wait_finished(attempt: Attempt, timeout: float = 20) -> Attempt:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        attempt.refresh_from_db()
        if attempt.status not in {AttemptStatus.QUEUED, AttemptStatus.RUNNING}:
            return attempt
        time.sleep(0.05)
    raise AssertionError(f"attempt still {attempt.status}")


def test_an_attempt_runs_on_a_real_worker_against_http(worker: object) -> None:
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=30, completion_tokens=2)) as server:
        attempt = make_attempt("openai/scripted", api_base=server.base_url)
        execute_attempt.delay(attempt.pk)
        attempt = wait_finished(attempt)
    assert attempt.status == AttemptStatus.OK
    assert attempt.envelope["answer"] == "42"
    assert (attempt.tokens_in, attempt.tokens_out) == (30, 2)
    assert attempt.cost_usd == Decimal("0.000032")
    assert server.requests[0]["_headers"]["authorization"] == f"Bearer {PLANTED_KEY}"
    run = Run.objects.get(pk=attempt.node.run_id)
    assert run.cost_usd == Decimal("0.000032") and run.tokens_in == 30
    event = RunEvent.objects.get(run=run)
    assert event.type == "attempt.finished" and event.payload["answer"] == "42"
    assert PLANTED_KEY not in str(attempt.envelope) + str(event.payload)


def test_a_replay_attempt_serves_the_recorded_outcome(worker: object) -> None:
    RecordedOutcome.objects.create(
        source="t", item_id="t.1", benchmark="gsm8k", domain="math", prompt="What is 6*7?",
        prompt_sha256=prompt_key("What is 6*7?"), model="rec-model", primitive="cot",
        response="6*7=42\nAnswer: 42", score=1.0, prompt_tokens=9, completion_tokens=6,
        cost_usd=Decimal("0.0042"),
    )  # fmt: skip
    attempt = make_attempt("replay/rec-model", primitive="cot")
    execute_attempt.delay(attempt.pk)
    attempt = wait_finished(attempt)
    assert attempt.status == AttemptStatus.OK
    assert attempt.envelope["answer"] == "42"
    assert attempt.envelope["artifacts"]["recorded_score"] == 1.0
    assert attempt.cost_usd == Decimal("0.0042")  # the recorded cost, not the endpoint's prices


def test_a_replay_attempt_without_recording_fails_clearly(worker: object) -> None:
    attempt = make_attempt("replay/rec-model", request={"item_id": "missing.7"})
    execute_attempt.delay(attempt.pk)
    attempt = wait_finished(attempt)
    assert attempt.status == AttemptStatus.ERROR
    assert attempt.error_kind == "no_recording"
    assert "missing.7" in attempt.error_message


def test_a_finished_attempt_is_neither_run_nor_billed_twice() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=30, completion_tokens=2)) as server:
        attempt = make_attempt("openai/scripted", api_base=server.base_url)
        work = attempt_start(attempt_id=attempt.pk)
        assert work is not None
        envelope = execute(work)
        assert attempt_finish(attempt_id=attempt.pk, envelope=envelope) is True
        # A redelivered task: the claim refuses, and a late finish changes nothing.
        assert attempt_start(attempt_id=attempt.pk) is None
        assert attempt_finish(attempt_id=attempt.pk, envelope=envelope) is False
        execute_attempt.apply(args=(attempt.pk,))
    assert len(server.requests) == 1
    run = Run.objects.get(pk=attempt.node.run_id)
    assert run.tokens_in == 30
    assert RunEvent.objects.filter(run=run).count() == 1


def test_a_vanished_attempt_is_ignored() -> None:
    assert attempt_start(attempt_id=987654321) is None
    execute_attempt.apply(args=(987654321,))
