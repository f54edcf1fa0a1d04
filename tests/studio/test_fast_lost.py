"""A fast-path run is held in Redis before its call (studio/fast_intents.py): a reader waits for
its record, and one whose web process died during the call is written with its attempt lost
(studio/services/fast_lost.py), unless or until its own record arrives (run_record)."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import pytest

from orchestrator.core.envelope import Envelope
from studio import fast_intents
from studio.errors import NotFound, Unavailable
from studio.models import Admissibility, Attempt, Primitive, Run, RunEvent, User
from studio.selectors.runs import run_get
from studio.services.fast_lost import END_REASON, fast_run_lost, fast_runs_lost
from studio.services.fast_path import FastRun, _payload, fast_finish, fast_hold, fast_prepare
from studio.services.pools import endpoint_create
from studio.services.run_record import LOST, run_record
from tests.factories import PoolFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def prepared(user: User, text: str = "What is 6*7?") -> FastRun:
    """A fast run decided in memory on a pool of one pair (its call is never made here)."""
    pool = PoolFactory()
    direct = Primitive.objects.get_or_create(name="direct")[0]
    endpoint = endpoint_create(
        pool_id=pool.pk, name="only", model="openai/only", api_base="http://127.0.0.1:9/v1", api_key="sk-test",
        input_cost_per_mtok=1, output_cost_per_mtok=1,
    )  # fmt: skip
    Admissibility.objects.create(endpoint=endpoint, primitive=direct)
    fast = fast_prepare(
        user=user, text=text, policy="default", pool_id=pool.pk, preset=None, cost_preference=None,
        max_cost_usd=None, policy_config=None, checkpoint_id=None, metadata={"via": "openai"},
    )  # fmt: skip
    assert fast is not None
    return fast


def answered(fast: FastRun) -> str:
    """The run's own record once its call answered "42" (what fast_record sends a worker)."""
    fast_finish(fast, Envelope(status="ok", output="42", answer="42", tokens_in=10, tokens_out=5, cost_usd=1.5e-5))
    return _payload(fast, [])


def held_payload(run_id: int) -> str:
    found = dict(fast_intents.due(time.time() + fast_intents.lease_s() + 1, limit=10_000))
    payload = found[run_id]
    assert payload is not None
    return payload


def test_a_held_run_is_due_only_after_its_lease() -> None:
    fast = prepared(UserFactory())
    assert fast_hold(fast)
    run_id = fast.run.pk
    assert fast_intents.pending(run_id)
    assert run_id not in dict(fast_intents.due(time.time()))
    assert run_id in dict(fast_intents.due(time.time() + fast_intents.lease_s() + 1, limit=10_000))
    fast_intents.release([run_id])
    assert not fast_intents.pending(run_id)
    assert run_id not in dict(fast_intents.due(time.time() + fast_intents.lease_s() + 1, limit=10_000))


def test_a_run_whose_web_process_died_is_written_with_its_call_lost() -> None:
    fast = prepared(UserFactory())
    assert fast_hold(fast)
    run_id = fast.run.pk
    held = held_payload(run_id)
    assert fast_run_lost(run_id=run_id, payload=held) is True
    run = Run.objects.get(pk=run_id)
    attempt = Attempt.objects.get(node__run=run)
    assert (run.status, run.end_reason, run.cost_usd) == ("failed", END_REASON, Decimal(0))
    assert (attempt.status, attempt.error_kind, attempt.cost_usd) == ("error", LOST, Decimal(0))
    assert "its cost is unknown" in attempt.error_message and attempt.finished_at is not None
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types[0] == "run.created" and types[-2:] == ["attempt.finished", "run.finished"]
    assert not fast_intents.pending(run_id)  # written: readers no longer wait
    # A second sweep, or a second worker's, writes nothing more.
    assert fast_run_lost(run_id=run_id, payload=held) is False
    assert Attempt.objects.filter(node__run=run).count() == 1


def test_the_runs_own_record_after_all_replaces_the_lost_one() -> None:
    fast = prepared(UserFactory())
    assert fast_hold(fast)
    run_id = fast.run.pk
    assert fast_run_lost(run_id=run_id, payload=held_payload(run_id))
    assert run_record(payload=answered(fast)) is True  # its process was slow, not dead
    run = Run.objects.get(pk=run_id)
    attempts = list(Attempt.objects.filter(node__run=run))
    assert (run.status, run.final_answer, run.cost_usd) == ("succeeded", "42", Decimal("0.00001500"))
    assert [(a.status, a.error_kind) for a in attempts] == [("ok", "")]
    assert RunEvent.objects.filter(run=run, type="run.finished").count() == 1


def test_a_run_recorded_before_its_lease_ends_is_left_as_it_is() -> None:
    fast = prepared(UserFactory())
    assert fast_hold(fast)
    run_id = fast.run.pk
    held = held_payload(run_id)
    assert run_record(payload=answered(fast)) is True
    assert not fast_intents.pending(run_id)
    assert fast_run_lost(run_id=run_id, payload=held) is False
    assert Run.objects.get(pk=run_id).status == "succeeded"
    assert Attempt.objects.get(node__run_id=run_id).status == "ok"


def test_the_sweep_writes_every_run_past_its_lease(settings: Any) -> None:
    user = UserFactory()
    runs = [prepared(user, f"question {n}") for n in range(3)]
    for fast in runs:
        assert fast_hold(fast)
    run_record(payload=answered(runs[0]))  # this one's own record came in time
    written = fast_runs_lost(time.time() + fast_intents.lease_s() + 1)
    ours = {fast.run.pk for fast in runs}
    assert set(written) & ours == {runs[1].run.pk, runs[2].run.pk}
    statuses = dict(Run.objects.filter(pk__in=ours).values_list("pk", "status"))
    assert statuses == {runs[0].run.pk: "succeeded", runs[1].run.pk: "failed", runs[2].run.pk: "failed"}


def test_a_read_waits_for_a_held_run_and_finds_it() -> None:
    user = UserFactory()
    fast = prepared(user)
    assert fast_hold(fast)
    record = answered(fast)
    writer = threading.Timer(0.3, lambda: run_record(payload=record))
    started = time.monotonic()
    writer.start()
    run = run_get(user=user, run_id=fast.run.pk)
    assert time.monotonic() - started >= 0.25
    assert (run.pk, run.status) == (fast.run.pk, "succeeded")
    writer.join()


def test_a_held_run_not_written_in_time_is_a_503_and_an_unknown_one_a_404(settings: Any) -> None:
    settings.ORCHESTRA_FAST_READ_WAIT_S = 0.2
    user = UserFactory()
    fast = prepared(user)
    assert fast_hold(fast)
    with pytest.raises(Unavailable, match=f"Run {fast.run.pk} was answered and is being recorded"):
        run_get(user=user, run_id=fast.run.pk)
    fast_intents.release([fast.run.pk])
    started = time.monotonic()
    with pytest.raises(NotFound):
        run_get(user=user, run_id=fast.run.pk)
    assert time.monotonic() - started < 0.2  # not held: no wait


def test_without_redis_nothing_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    class Down:
        def pipeline(self, **_: Any) -> Any:
            raise ConnectionError("Redis is away")

    fast = prepared(UserFactory())
    monkeypatch.setattr(fast_intents, "_redis", lambda: Down())
    assert fast_hold(fast) is False


def test_a_run_written_between_the_read_and_the_question_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the soak met: the read finds no row, the worker commits and drops the held rows,
    then the question "is it being written?" answers no. The read asks the database again."""
    user = UserFactory()
    fast = prepared(user)
    assert fast_hold(fast)
    record = answered(fast)
    asked = fast_intents.pending

    def written_meanwhile(run_id: int) -> bool:
        run_record(payload=record)  # commits, then releases the held rows
        return asked(run_id)

    monkeypatch.setattr(fast_intents, "pending", written_meanwhile)
    run = run_get(user=user, run_id=fast.run.pk)
    assert (run.pk, run.status) == (fast.run.pk, "succeeded")
