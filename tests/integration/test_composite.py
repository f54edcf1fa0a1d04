"""Composite tasks on the replay pool: decomposition, parallel dispatch and the live tree
end to end without any network, every subtask answered by a real recorded response."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from orchestrator.core.protocol import Action, Observation, PairRef, Solve
from orchestrator.outcomes import OutcomeRecord, prompt_key
from orchestrator.policies import register
from studio.models import Node, RecordedOutcome, RunEvent
from studio.services.outcomes import replay_pool_ensure
from studio.services.runs import node_rerun, run_create
from studio.services.tasks import task_create, task_create_composite
from tests.factories import UserFactory
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def recorded(item: str, model: str, response: str, score: float, cost: str, primitive: str = "direct") -> None:
    record = OutcomeRecord(
        "demo", item, "test", "gsm8k", "math", f"question {item}", "1", model, primitive, response, score,
        20, 5, float(cost), None,
    )  # fmt: skip
    RecordedOutcome.objects.create(
        source=record.source, item_id=record.item_id, split="test", benchmark=record.benchmark, domain="math",
        prompt=record.prompt, prompt_sha256=prompt_key(record.prompt), gold="1", model=model, primitive=primitive,
        response=response, score=score, prompt_tokens=20, completion_tokens=5, cost_usd=Decimal(cost),
    )  # fmt: skip


@pytest.fixture
def replay_pool() -> int:
    recorded("d.1", "small", "Answer: 1", 1.0, "0.001")
    recorded("d.2", "small", "Answer: 7", 0.0, "0.001")
    recorded("d.2", "large", "Answer: 2", 1.0, "0.010")
    recorded("d.3", "large", "Answer: 3", 1.0, "0.010")
    pairs = {(r.model, r.primitive) for r in RecordedOutcome.objects.all()}
    prices: dict[str, dict[str, float]] = {
        "small": {"input_per_mtok": 0.1, "output_per_mtok": 0.1},
        "large": {"input_per_mtok": 5.0, "output_per_mtok": 5.0},
    }
    return replay_pool_ensure(pool_name="replay-test", pairs=pairs, prices=prices).pk


def test_a_composite_task_runs_its_items_in_parallel_on_replay(celery_worker: object, replay_pool: int) -> None:
    owner = UserFactory()
    task = task_create_composite(owner=owner, items=[("demo", "d.1"), ("demo", "d.2"), ("demo", "d.3")])
    run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=replay_pool).pk)

    assert run.status == "succeeded", run.end_reason
    # Each item went to its cheapest recorded pair: d.1 and d.2 on 'small', d.3 on 'large' only.
    nodes = {n.key: n for n in Node.objects.filter(run=run).select_related("endpoint")}
    assert {k: getattr(nodes[k].endpoint, "name", None) for k in ("root.item1", "root.item2", "root.item3")} == {
        "root.item1": "small", "root.item2": "small", "root.item3": "large",
    }  # fmt: skip
    assert run.verification["method"] == "composite"
    assert run.verification["score"] == pytest.approx(2 / 3)  # d.2 was recorded wrong on 'small'
    assert run.verification["correct"] is False
    assert run.cost_usd == Decimal("0.012")
    queued = [e.seq for e in RunEvent.objects.filter(run=run, type="attempt.queued")]
    finished = [e.seq for e in RunEvent.objects.filter(run=run, type="attempt.finished")]
    assert len(queued) == 3 and max(queued) < min(finished)  # all three dispatched at once


def test_rerunning_a_node_with_another_pair_updates_the_answer(celery_worker: object, replay_pool: int) -> None:
    owner = UserFactory()
    task = task_create_composite(owner=owner, items=[("demo", "d.1"), ("demo", "d.2")])
    run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=replay_pool).pk)
    assert run.verification["correct"] is False
    large = Node.objects.get(run=run, key="root.item1").endpoint
    assert large is not None
    large = large.pool.endpoints.get(name="large")

    node_rerun(user=owner, run_id=run.pk, node_key="root.item2", endpoint_id=large.pk, primitive="direct")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status == "succeeded" and run.verification.get("correct"):
            break
        time.sleep(0.05)
    assert run.status == "succeeded"
    assert run.verification == {**run.verification, "score": 1.0, "correct": True}
    assert "item2: Answer: 2" in run.final_answer


@register("violator")
class Violator:
    """A test policy that keeps naming a pair that is not admissible."""

    name = "violator"
    reviews_answers = False

    def __init__(self, config: object) -> None:
        pass

    def act(self, observation: Observation) -> Action:
        return Solve("root", PairRef(987654, "direct"))


def test_protocol_violations_are_counted_and_never_executed(celery_worker: object, replay_pool: int) -> None:
    owner = UserFactory()
    task = task_create(owner=owner, text="question d.1")
    run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=replay_pool, policy="violator").pk)
    assert run.status == "failed"
    assert run.verification["protocol_violations"] == 3
    assert not Node.objects.get(run=run, key="root").attempts.exists()
    assert RunEvent.objects.filter(run=run, type="protocol.violation").count() == 3


def test_a_plain_task_whose_text_is_a_recorded_prompt_goes_to_a_recorded_pair(
    celery_worker: object, replay_pool: int
) -> None:
    owner = UserFactory()
    task = task_create(owner=owner, text="question d.3")  # recorded on 'large' only; 'small' is cheaper
    run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=replay_pool).pk)
    assert run.status == "succeeded", run.end_reason
    assert run.final_answer == "Answer: 3"
    assert run.verification == {"method": "recorded_score", "score": 1.0, "correct": True}
    assert Node.objects.get(run=run, key="root").attempts.count() == 1
