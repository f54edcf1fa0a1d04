"""Batches of attempts: the claim rule, billing once, bulk writes, and lost messages sent again."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from orchestrator.core.envelope import Envelope
from studio.models import Attempt, AttemptStatus, Node, Primitive, Run, RunEvent, RunStatus
from studio.services import live_shell
from studio.services.attempts import attempts_finish, attempts_start
from studio.services.bulk import rows_update
from tests.factories import EndpointFactory, PoolFactory, RunFactory, TaskFactory

pytestmark = pytest.mark.django_db


def make_attempts(count: int, run: Run | None = None) -> list[Attempt]:
    run = run or RunFactory(task=TaskFactory(text="What is 6*7?"), pool=PoolFactory())
    endpoint = EndpointFactory(pool=run.pool, model="replay/m")
    primitive, _ = Primitive.objects.get_or_create(name="direct")
    attempts = []
    for n in range(count):
        node = Node.objects.create(run=run, key=f"n{n}", kind="subtask", text=f"item {n}")
        attempts.append(
            Attempt.objects.create(
                node=node, number=1, endpoint=endpoint, primitive=primitive, idempotency_key=f"r{run.pk}:{n}"
            )
        )
    return attempts


def ok(answer: str, cost: float, tokens_in: int = 10) -> Envelope:
    return Envelope(status="ok", output=answer, answer=answer, tokens_in=tokens_in, tokens_out=2, cost_usd=cost)


def test_a_batch_claims_queued_attempts_once() -> None:
    attempts = make_attempts(3)
    ids = [a.pk for a in attempts]
    claim = attempts_start(attempt_ids=[*ids, 987654321])  # one that does not exist is left out
    assert sorted(w.attempt_id for w in claim.works) == ids
    assert set(Attempt.objects.filter(pk__in=ids).values_list("status", flat=True)) == {AttemptStatus.RUNNING}
    # The same message delivered again while they run: nothing is claimed twice.
    again = attempts_start(attempt_ids=ids)
    assert again.works == []
    assert set(again.running_elsewhere) == set(ids)


def test_a_running_attempt_is_claimed_again_only_once_stale() -> None:
    fresh, stale = make_attempts(2)
    attempts_start(attempt_ids=[fresh.pk, stale.pk])
    Attempt.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(seconds=120))
    claim = attempts_start(attempt_ids=[fresh.pk, stale.pk], stale_after_s=60)
    assert [w.attempt_id for w in claim.works] == [stale.pk]
    # The fresh one is left to its worker; it counts as stale in about a minute.
    assert list(claim.running_elsewhere) == [fresh.pk]
    assert 55 < claim.running_elsewhere[fresh.pk] <= 60


def test_finishing_bills_each_attempt_once_and_sums_per_node_and_run() -> None:
    attempts = make_attempts(3)
    attempts_start(attempt_ids=[a.pk for a in attempts])
    results = [(a.pk, ok(f"answer {n}", cost=0.001 * (n + 1), tokens_in=10 * (n + 1))) for n, a in enumerate(attempts)]
    assert sorted(attempts_finish(results=results)) == sorted(a.pk for a in attempts)
    assert attempts_finish(results=results) == []  # delivered again: nothing recorded twice
    run = Run.objects.get(pk=attempts[0].node.run_id)
    assert run.tokens_in == 60
    assert run.cost_usd == Decimal("0.006")
    nodes = {n.key: n for n in Node.objects.filter(run=run)}
    assert [nodes[f"n{i}"].tokens_in for i in range(3)] == [10, 20, 30]
    assert nodes["n2"].cost_usd == Decimal("0.003")
    first = Attempt.objects.get(pk=attempts[0].pk)
    assert (first.status, first.envelope["answer"], first.finished_at is not None) == ("ok", "answer 0", True)
    events = list(RunEvent.objects.filter(run=run).order_by("seq"))
    assert [e.seq for e in events] == [1, 2, 3]
    assert [e.payload["attempt"] for e in events] == [a.pk for a in attempts]


def test_rows_update_writes_each_row_its_own_values() -> None:
    attempts = make_attempts(3)
    for n, attempt in enumerate(attempts):
        attempt.status = AttemptStatus.ERROR if n == 1 else AttemptStatus.OK
        attempt.envelope = {"n": n, "nested": {"text": "quote ' and \" and %s"}}
        attempt.cost_usd = Decimal("0.25") * n
        attempt.finished_at = timezone.now()
    assert rows_update(attempts, ["status", "envelope", "cost_usd", "finished_at"]) == 3
    stored = {a.pk: a for a in Attempt.objects.filter(pk__in=[a.pk for a in attempts])}
    for n, attempt in enumerate(attempts):
        row = stored[attempt.pk]
        assert row.status == ("error" if n == 1 else "ok")
        assert row.envelope == {"n": n, "nested": {"text": "quote ' and \" and %s"}}
        assert row.cost_usd == Decimal("0.25") * n
        assert row.finished_at == attempt.finished_at


def test_a_step_sends_again_attempts_whose_message_was_lost(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    run = RunFactory(task=TaskFactory(text="What is 6*7?"), pool=PoolFactory(), status=RunStatus.RUNNING)
    Node.objects.create(run=run, key="root", kind="root", text=run.task.text, status="running")
    lost, recent = make_attempts(2, run=run)
    Attempt.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(hours=2))
    sent: list[list[int]] = []
    monkeypatch.setattr(live_shell, "_dispatch", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        live_shell.run_step(run_id=run.pk)
    assert sent == [[lost.pk]]
