"""Writing a run the fast path recorded (studio/services/run_record.py): its rows as they
were, once; nothing when its owner is gone; an error, not a silent drop, for anything else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError

from orchestrator.outcomes import prompt_key
from studio.models import Attempt, Node, RecordedOutcome, Run, RunEvent, Task
from studio.services.fast_path import _ids_and_recordings, _sequence_ids
from studio.services.live_shell import root_metadata
from studio.services.run_record import payload_dump, run_record
from tests.factories import PoolFactory, UserFactory

pytestmark = pytest.mark.django_db

THEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def payload(owner_id: int, pool_id: int, seqs: tuple[int, ...] = (1, 2)) -> tuple[int, str]:
    task_id, run_id = _sequence_ids(Task, Run)
    task = Task(pk=task_id, owner_id=owner_id, text="What is 6*7?", metadata={"via": "openai"}, created_at=THEN)
    run = Run(
        pk=run_id, task_id=task_id, owner_id=owner_id, pool_id=pool_id, status="succeeded", final_answer="42",
        last_seq=len(seqs), created_at=THEN, started_at=THEN, finished_at=THEN,
    )  # fmt: skip
    events = [
        RunEvent(
            run_id=run_id, seq=seq, type="run.started", payload={"policy": "default", "pool": pool_id}, created_at=THEN
        )
        for seq in seqs
    ]
    return run_id, payload_dump([task, run, *events])


def test_a_record_is_written_once_with_its_own_times() -> None:
    run_id, text = payload(UserFactory().pk, PoolFactory().pk)
    assert run_record(payload=text) is True
    assert run_record(payload=text) is False  # delivered twice: written once
    run = Run.objects.select_related("task").get(pk=run_id)
    assert (run.final_answer, run.created_at, run.task.created_at) == ("42", THEN, THEN)
    assert [(e.seq, e.created_at) for e in RunEvent.objects.filter(run=run).order_by("seq")] == [(1, THEN), (2, THEN)]


def test_a_record_whose_owner_is_gone_writes_nothing() -> None:
    user = UserFactory()
    run_id, text = payload(user.pk, PoolFactory().pk)
    user.delete()
    assert run_record(payload=text) is False
    assert not Run.objects.filter(pk=run_id).exists() and not Task.objects.filter(text="What is 6*7?").exists()


def test_any_other_integrity_error_is_raised() -> None:
    run_id, text = payload(UserFactory().pk, PoolFactory().pk, seqs=(1, 1))
    with pytest.raises(IntegrityError):
        run_record(payload=text)
    assert not Run.objects.filter(pk=run_id).exists()


@pytest.mark.django_db(transaction=True)
def test_as_a_worker_writes_it_in_a_transaction_of_its_own() -> None:
    """Outside any transaction (a worker's task): a record delivered twice is written once, and
    one whose owner is gone, refused at COMMIT, writes nothing."""
    run_id, text = payload(UserFactory().pk, PoolFactory().pk)
    assert run_record(payload=text) is True
    assert run_record(payload=text) is False
    assert Run.objects.filter(pk=run_id).exists()
    user = UserFactory()
    gone_id, gone = payload(user.pk, PoolFactory().pk)
    user.delete()
    assert run_record(payload=gone) is False
    assert not Run.objects.filter(pk=gone_id).exists()
    _, broken = payload(UserFactory().pk, PoolFactory().pk, seqs=(1, 1))
    with pytest.raises(IntegrityError):
        run_record(payload=broken)


def _recorded(item: str, model: str, prompt: str) -> None:
    RecordedOutcome.objects.create(
        source="demo", item_id=item, split="test", benchmark="gsm8k", domain="math", prompt=prompt,
        prompt_sha256=prompt_key(prompt), gold="1", model=model, primitive="direct", response="1", score=1.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "metadata"),
    [
        ("question 1", {}),  # a recorded prompt, by its text
        ("a prompt of the user's own", {}),  # nothing recorded: no pair can replay it
        ("anything", {"item_id": "d.2"}),  # a recorded item, by its id
    ],
)
def test_the_fast_path_reads_the_roots_metadata_as_the_engine_does_with_its_ids(
    text: str, metadata: dict[str, str]
) -> None:
    _recorded("d.1", "small", "question 1")
    _recorded("d.1", "large", "question 1")
    _recorded("d.2", "large", "question 2")
    owner = UserFactory()
    run = Run(task=Task(owner=owner, text=text, metadata=metadata), owner=owner, pool=PoolFactory())
    before = _sequence_ids(Task, Run, Node, Attempt)
    ids, found = _ids_and_recordings(run)
    assert found == root_metadata(run)  # one query for both, as the full machinery reads it
    assert ids == [value + 1 for value in before]  # one new id from each table's sequence
    expected = {"question 1": [["large", "direct"], ["small", "direct"]], "anything": [["large", "direct"]]}
    assert found["recorded_pairs"] == expected.get(text, [])
    assert ("recorded_benchmark" in found) == (text in expected)
