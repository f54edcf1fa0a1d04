"""Collections against a scripted OpenAI-compatible server (real HTTP through litellm) and
over the replay pool: every cell recorded once, the budget kept, resumable, cancellable."""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from orchestrator.outcomes import read_outcomes
from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.errors import Conflict, Invalid
from studio.models import (
    Admissibility,
    CellStatus,
    Collection,
    CollectionCell,
    JobStatus,
    Primitive,
    RecordedOutcome,
)
from studio.services.collections import (
    collection_cancel,
    collection_create,
    collection_resume,
    collections_resume_quiet,
)
from studio.services.outcomes import outcomes_import
from studio.services.pools import endpoint_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory
from workers.collection import run_collection

pytestmark = [pytest.mark.django_db(transaction=True)]

PRICE = 1000.0  # $/Mtok in and out: a reply of 10 + 5 tokens costs $0.015


class Arithmetic:
    """'What is a + b?': model `right` answers right, any other wrong; counts calls per
    (model, prompt) and the most calls in flight at once per model."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls: Counter[tuple[str, str]] = Counter()
        self.in_flight: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        model, prompt = body["model"], last_user(body)
        a, b = (int(x) for x in re.findall(r"\d+", prompt)[:2])
        with self.lock:
            self.calls[model, prompt] += 1
            self.in_flight[model] += 1
            self.most[model] = max(self.most[model], self.in_flight[model])
        try:
            time.sleep(self.delay_s)
            return Reply(content=f"#### {a + b if model == 'right' else a + b + 1}", prompt_tokens=10,
                         completion_tokens=5)  # fmt: skip
        finally:
            with self.lock:
                self.in_flight[model] -= 1


def scripted_pool(server: ScriptedOpenAI, models: tuple[str, ...] = ("right", "wrong")) -> tuple[Any, list[Any]]:
    pool = PoolFactory()
    direct = Primitive.objects.get_or_create(name="direct")[0]
    endpoints = []
    for model in models:
        endpoint = endpoint_create(
            pool_id=pool.pk, name=model, model=f"openai/{model}", api_base=server.base_url, api_key="sk-test",
            input_cost_per_mtok=PRICE, output_cost_per_mtok=PRICE,
        )  # fmt: skip
        Admissibility.objects.create(endpoint=endpoint, primitive=direct)
        endpoints.append(endpoint)
    return pool, endpoints


def arithmetic_tasks(owner: Any, n: int) -> list[int]:
    return [
        task_create(owner=owner, text=f"What is {k} + {2 * k}?", gold_answer=str(3 * k), checker="gsm8k",
                    benchmark="gsm8k", domain="math").pk
        for k in range(1, n + 1)
    ]  # fmt: skip


def test_every_cell_is_called_once_scored_by_its_checker_and_exported(tmp_path: Path) -> None:
    script = Arithmetic()
    with ScriptedOpenAI(script) as server:
        owner = UserFactory()
        pool, endpoints = scripted_pool(server)
        tasks = arithmetic_tasks(owner, 6)
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks,
                                       pairs=[(e.pk, "direct") for e in endpoints], budget_usd=1.0,
                                       enqueue=False)  # fmt: skip
        assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    rows = RecordedOutcome.objects.filter(source=collection.source)
    assert rows.count() == 12 and set(script.calls.values()) == {1}
    assert {r.model: r.score for r in rows.filter(item_id=f"task-{tasks[0]}")} == {"openai/right": 1.0,
                                                                                     "openai/wrong": 0.0}  # fmt: skip
    assert all(r.prompt_tokens == 10 and r.completion_tokens == 5 for r in rows)
    collection.refresh_from_db()
    assert collection.spent_usd == Decimal("0.18") and collection.finished_at is not None
    assert "12 cell(s) recorded" in collection.message

    out = tmp_path / "collected.jsonl.gz"
    call_command("export_outcomes", "--source", collection.source, "--out", str(out))
    records = list(read_outcomes(out))
    assert len(records) == 12 and {r.source for r in records} == {collection.source}
    assert sum(r.score for r in records) == 6 and all(r.cost_usd == pytest.approx(0.015) for r in records)
    with gzip.open(out, "rt") as handle:
        assert json.loads(handle.readline())["benchmark"] == "gsm8k"


def test_the_budget_stops_it_within_one_call_per_endpoint_and_a_resume_calls_only_what_is_left() -> None:
    script = Arithmetic(delay_s=0.02)
    with ScriptedOpenAI(script) as server:
        owner = UserFactory()
        pool, endpoints = scripted_pool(server)
        tasks = arithmetic_tasks(owner, 20)
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks,
                                       pairs=[(e.pk, "direct") for e in endpoints], budget_usd=0.1,
                                       max_concurrency=8, enqueue=False)  # fmt: skip
        assert run_collection(collection.pk) == JobStatus.STOPPED
        collection.refresh_from_db()
        paid = sum(script.calls.values()) * 0.015  # what the provider billed
        assert float(collection.spent_usd) == pytest.approx(paid)
        assert 0.1 <= paid <= 0.1 + 2 * 0.015 + 1e-9  # over by at most one call per endpoint
        assert "wait for a larger one" in collection.message
        ended = collection.cells.filter(status__in=["recorded", "failed"]).count()
        assert 0 < ended < 40 and collection.progress == pytest.approx(ended / 40)  # the share of cells ended
        recorded = set(RecordedOutcome.objects.filter(source=collection.source).values_list("item_id", "model"))

        with pytest.raises(Invalid, match="above"):
            collection_resume(collection_id=collection.pk, budget_usd=0.05)
        collection_resume(collection_id=collection.pk, budget_usd=10)
        assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    collection.refresh_from_db()
    assert collection.progress == 1.0
    assert RecordedOutcome.objects.filter(source=collection.source).count() == 40
    assert set(script.calls.values()) == {1} and len(script.calls) == 40  # nothing recorded was called again
    assert recorded <= set(RecordedOutcome.objects.filter(source=collection.source).values_list("item_id", "model"))


def test_calls_in_flight_per_endpoint_stay_within_the_limit() -> None:
    script = Arithmetic(delay_s=0.15)
    with ScriptedOpenAI(script) as server:
        owner = UserFactory()
        pool, endpoints = scripted_pool(server)
        tasks = arithmetic_tasks(owner, 12)
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks,
                                       pairs=[(e.pk, "direct") for e in endpoints], budget_usd=5,
                                       max_concurrency=3, enqueue=False)  # fmt: skip
        assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    assert script.most["right"] == 3 and script.most["wrong"] == 3


def test_a_dead_runners_cells_are_called_again_its_recorded_ones_never() -> None:
    script = Arithmetic()
    with ScriptedOpenAI(script) as server:
        owner = UserFactory()
        pool, endpoints = scripted_pool(server, models=("right",))
        tasks = arithmetic_tasks(owner, 4)
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks,
                                       pairs=[(endpoints[0].pk, "direct")], budget_usd=1, enqueue=False)  # fmt: skip
        run_collection(collection.pk)
        # What a runner killed mid-call leaves: the collection running, a cell started, unrecorded.
        cells = list(CollectionCell.objects.filter(collection=collection).order_by("id"))
        assert cells[3].outcome_id is not None
        RecordedOutcome.objects.filter(pk=cells[3].outcome_id).delete()
        CollectionCell.objects.filter(pk=cells[3].pk).update(status=CellStatus.STARTED, cost_usd=None)
        Collection.objects.filter(pk=collection.pk).update(status=JobStatus.RUNNING, heartbeat_at=None,
                                                           spent_usd=Decimal("0.045"))  # fmt: skip
        assert collections_resume_quiet(older_than_s=60) == 1  # the sweep queues it again
        assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    assert RecordedOutcome.objects.filter(source=collection.source).count() == 4
    assert [script.calls[k] for k in sorted(script.calls)] == [1, 1, 1, 2]  # only the unrecorded cell again
    collection.refresh_from_db()
    # 3 recorded + the lost call booked at its pair's dearest cost + its new call
    assert collection.spent_usd == Decimal("0.075")
    assert CollectionCell.objects.get(pk=cells[3].pk).starts == 2


def test_a_cancelled_collection_sends_no_more_calls() -> None:
    script = Arithmetic(delay_s=0.1)
    with ScriptedOpenAI(script) as server:
        owner = UserFactory()
        pool, endpoints = scripted_pool(server, models=("right",))
        tasks = arithmetic_tasks(owner, 40)
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks,
                                       pairs=[(endpoints[0].pk, "direct")], budget_usd=10, max_concurrency=1,
                                       enqueue=False)  # fmt: skip
        threading.Timer(0.5, lambda: collection_cancel(collection_id=collection.pk)).start()
        assert run_collection(collection.pk) == JobStatus.CANCELLED
        sent = sum(script.calls.values())
    assert 1 <= sent < 40
    assert RecordedOutcome.objects.filter(source=collection.source).count() == sent
    with pytest.raises(Conflict):
        collection_resume(collection_id=collection.pk) and collection_resume(collection_id=collection.pk)


def test_a_replayed_collection_reproduces_the_recordings(tmp_path: Path) -> None:
    records = [
        {"source": "rt", "item_id": f"rt/{k}", "split": "test", "benchmark": "gsm8k", "domain": "math",
         "prompt": f"Question {k}", "gold": str(k), "model": model, "primitive": "direct",
         "response": f"The answer is {k if (k + j) % 2 else k + 1}", "score": float((k + j) % 2),
         "prompt_tokens": 20 + k, "completion_tokens": 7 + j, "cost_usd": 1e-5 * (k + 1), "latency_s": 0.5}
        for k in range(10)
        for j, model in enumerate(("m-a", "m-b"))
    ]  # fmt: skip
    path = tmp_path / "rt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    outcomes_import(path=path, prices={}, pool_name="rt-pool")
    owner = UserFactory()
    tasks = [task_create(owner=owner, text=f"Question {k}", gold_answer=str(k), checker="gsm8k", benchmark="gsm8k",
                         domain="math", metadata={"item_id": f"rt/{k}"}).pk for k in range(10)]  # fmt: skip
    from studio.models import ModelPool

    pool = ModelPool.objects.get(name="rt-pool")
    pairs = [(row.endpoint_id, row.primitive.name) for row in Admissibility.objects.filter(endpoint__pool=pool)]
    collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks, pairs=pairs, budget_usd=1,
                                   enqueue=False)  # fmt: skip
    assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    fields = ("item_id", "model", "primitive", "response", "score", "prompt_tokens", "completion_tokens")
    got = set(RecordedOutcome.objects.filter(source=collection.source).values_list(*fields))
    want = set(RecordedOutcome.objects.filter(source="rt").values_list(*fields))
    assert len(got) == 20 and got == want


def test_bad_collections_are_refused_naming_the_problem() -> None:
    owner = UserFactory()
    pool = PoolFactory()
    direct = Primitive.objects.get_or_create(name="direct")[0]
    endpoint = endpoint_create(pool_id=pool.pk, name="m", model="openai/m", api_base="http://127.0.0.1:9/v1")
    Admissibility.objects.create(endpoint=endpoint, primitive=direct)
    good = arithmetic_tasks(owner, 1)
    bare = task_create(owner=owner, text="Say hi", domain="chat").pk
    no_domain = task_create(owner=owner, text="What is 1 + 1?", gold_answer="2", checker="gsm8k").pk
    cases: list[tuple[dict[str, Any], str]] = [
        (dict(pool_id=10**6), "no pool"),
        (dict(budget_usd=0), "between \\$0.000001 and"),
        (dict(budget_usd=1e-7), "between \\$0.000001 and"),
        (dict(max_concurrency=0), "1 to 64"),
        (dict(pairs=[(endpoint.pk, "cot")]), "Not admissible"),
        (dict(task_ids=[10**6]), "Unknown task"),
        (dict(task_ids=[bare]), "no gold answer and checker"),
        (dict(task_ids=[no_domain]), "has no domain"),
    ]
    base: dict[str, Any] = dict(owner=owner, pool_id=pool.pk, task_ids=good, pairs=[(endpoint.pk, "direct")],
                                budget_usd=1.0, enqueue=False)  # fmt: skip
    for change, message in cases:
        with pytest.raises(Invalid, match=message):
            collection_create(**(base | change))
    assert not Collection.objects.exists()


def test_the_command_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    UserFactory(is_superuser=True)
    for argv, message in [
        (["--pool", "nope", "--budget", "1", "--tasks", "1"], "There is no pool 'nope'"),
        (["--budget", "1", "--tasks", "1"], "--pool is required"),
        (["--resume", "999"], "There is no collection 999"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("collect", *argv)
    with pytest.raises(CommandError, match="No recorded outcome has the source"):
        call_command("export_outcomes", "--source", "collection-999", "--out", str(tmp_path / "x.jsonl"))


def run_when_made() -> None:
    """Run the first collection once it exists (within 10 s), as a worker would."""
    from django.db import connection

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not Collection.objects.exists():
        time.sleep(0.05)
    collection = Collection.objects.first()
    if collection is not None:
        run_collection(collection.pk)
    connection.close()


def test_a_calibrating_collection_run_by_the_command_becomes_the_pools_calibration(capsys: Any) -> None:
    from studio.models import ModelPool
    from studio.selectors.pools import pool_calibration

    script = Arithmetic()
    with ScriptedOpenAI(script) as server:
        owner = UserFactory(is_superuser=True)
        pool, _ = scripted_pool(server)
        tasks = arithmetic_tasks(owner, 8)
        worker = threading.Thread(target=run_when_made)  # what the worker on queue `training` does
        worker.start()
        call_command("collect", "--pool", pool.name, "--tasks", ",".join(map(str, tasks)), "--pairs", "all",
                     "--budget", "1", "--k", "5", "--seed", "3", "--calibrate", "--no-progress")  # fmt: skip
        worker.join(timeout=30)
    printed = capsys.readouterr().out
    collection = Collection.objects.get()
    assert "succeeded: 10 recorded, 0 failed, 0 pending" in printed and collection.calibrates
    assert ModelPool.objects.get(pk=pool.pk).calibration_source == collection.source
    calibration = pool_calibration(pool_id=pool.pk)
    assert calibration is not None
    _, records = calibration
    assert len(records) == 10 and {r["model"] for r in records} == {"openai/right", "openai/wrong"}
    assert len(script.calls) == 10  # K = 5 probes per pair


def test_replay_prefers_an_imported_recording_to_a_collections_copy() -> None:
    from studio.selectors.outcomes import recorded_outcome, recorded_outcomes

    common = dict(item_id="i1", benchmark="gsm8k", domain="math", prompt="q", prompt_sha256="h", model="m",
                  primitive="direct", score=1.0)  # fmt: skip
    RecordedOutcome.objects.create(source="collection-1", response="copy", **common)
    RecordedOutcome.objects.create(source="zz-imported", response="original", **common)
    row = recorded_outcome(model="m", primitive="direct", item_id="i1", prompt_sha256="")
    assert row is not None and row["response"] == "original"
    assert recorded_outcomes([("m", "direct", "i1")])[-1]["response"] == "original"  # the first source comes last
    RecordedOutcome.objects.filter(source="zz-imported").delete()
    only = recorded_outcome(model="m", primitive="direct", item_id="i1", prompt_sha256="")
    assert only is not None and only["response"] == "copy"  # a collection replays where nothing else does


def test_a_message_for_a_collection_that_is_gone_does_nothing() -> None:
    assert run_collection(10**6) == "gone"


def test_a_resume_waits_for_the_last_runners_calls_in_flight() -> None:
    owner = UserFactory()
    pool = PoolFactory()
    endpoint = endpoint_create(pool_id=pool.pk, name="m", model="openai/m", api_base="http://127.0.0.1:9/v1")
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="direct")[0])
    collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=arithmetic_tasks(owner, 2),
                                   pairs=[(endpoint.pk, "direct")], budget_usd=1, enqueue=False)  # fmt: skip
    from datetime import timedelta

    from django.utils import timezone

    Collection.objects.filter(pk=collection.pk).update(status=JobStatus.CANCELLED, heartbeat_at=timezone.now())
    CollectionCell.objects.filter(collection=collection).update(status=CellStatus.STARTED)
    with pytest.raises(Conflict, match="2 call\\(s\\) in flight"):
        collection_resume(collection_id=collection.pk)
    Collection.objects.filter(pk=collection.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert collection_resume(collection_id=collection.pk).status == JobStatus.QUEUED  # its runner is gone
