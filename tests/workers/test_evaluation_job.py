"""An evaluation job end to end, through the task function, on real recorded outcomes
(a small seeded subset of LLMRouter; the MiniLM replaced by seeded vectors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from studio.models import EvaluationRun, JobStatus
from studio.services import evaluation_jobs as evaluation
from studio.services.evaluations import evaluation_config
from workers import tasks

pytestmark = pytest.mark.django_db

TINY_LEARNED = {
    "sft": {"reliability_epochs": 1, "epochs": 1},
    "rl": {"iterations": 0},
    "knobs": [0.0, 1.0],
    "cascade_knobs": [0.5],
}


def fake_embed(
    texts: list[str], *, progress: bool = False, on_chunk: Callable[[int, int], None] | None = None
) -> np.ndarray:
    vectors = np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=384) for t in texts])
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr("orchestrator.embedding.embed", fake_embed)
    with override_settings(DATA_DIR=tmp_path):
        yield tmp_path


def queued(**options: Any) -> EvaluationRun:
    config = evaluation_config(
        preset="quick", outcomes=[], train=[], probe=0, seed=0, methods=[], learned=None,
        max_train_items=None, max_test_items=None, checkpoint=None,
    )  # fmt: skip
    return EvaluationRun.objects.create(config={**config, **options})


def test_a_small_evaluation_runs_to_its_report(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[float, str]] = []
    record = evaluation.job_progress

    def watch(model: type[EvaluationRun], evaluation_id: int, *, progress: float, message: str) -> None:
        seen.append((progress, message))
        record(model, evaluation_id, progress=progress, message=message)

    monkeypatch.setattr(evaluation, "job_progress", watch)
    run = queued(
        methods=["learned", "cheapest", "oracle", "knn", "always_decompose"], learned=TINY_LEARNED,
        max_train_items=300, max_test_items=80,
    )  # fmt: skip
    tasks.evaluate(run.pk)
    run.refresh_from_db()
    assert (run.status, run.progress) == (JobStatus.SUCCEEDED, 1.0), run.message
    report = run.report
    assert report["items"] == 80 and report["train_items"] == 300
    assert "capped at 300 train and 80 test items" in report["split"]
    assert len(report["methods"]["learned"]["points"]) == 3  # one per λ, and one for the cascade at λ = 0.5
    assert report["methods"]["oracle"]["macro_acc"] >= report["methods"]["cheapest"]["macro_acc"]
    assert "not_applicable" in report["methods"]["always_decompose"]
    assert [m for _, m in seen][1:6] == [f"fitting {name} ({i} of 5)" for i, name in enumerate(
        ["learned", "cheapest", "oracle", "knn", "always_decompose"], start=1)]  # fmt: skip
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)
    assert (data_dir / "evaluations" / f"evaluation-{run.pk}.png").is_file()
    tasks.evaluate(run.pk)  # a second delivery does nothing
    assert EvaluationRun.objects.get(pk=run.pk).finished_at == run.finished_at


def test_a_refused_option_fails_with_its_reason(data_dir: Path) -> None:
    run = queued(outcomes=["routerbench.jsonl.gz"], train=["llmrouter.jsonl.gz"], methods=["cheapest"])
    tasks.evaluate(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
    assert "--probe" in run.message and "refused" in run.message


def test_an_unusable_config_fails_in_plain_words(data_dir: Path) -> None:
    run = EvaluationRun.objects.create(config={"seed": 0})
    tasks.evaluate(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
    assert "config cannot be used" in run.message


def test_a_small_composite_evaluation_runs_to_its_report(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    record = evaluation.job_progress

    def watch(model: type[EvaluationRun], evaluation_id: int, *, progress: float, message: str) -> None:
        seen.append(message)
        record(model, evaluation_id, progress=progress, message=message)

    monkeypatch.setattr(evaluation, "job_progress", watch)
    config = evaluation_config(
        preset="quick", outcomes=[], train=[], probe=0, seed=0, methods=["always_delegate", "decide_mf", "learned"],
        learned={**TINY_LEARNED, "cascade_knobs": [], "decompose": {"epochs": 2, "rl_iterations": 2}},
        max_train_items=None, max_test_items=None, checkpoint=None, kind="composites", sensitivity=[0.05],
        train_count=40, test_count=20,
    )  # fmt: skip
    run = EvaluationRun.objects.create(config=config)
    tasks.evaluate(run.pk)
    run.refresh_from_db()
    assert (run.status, run.progress) == (JobStatus.SUCCEEDED, 1.0), run.message
    summary = run.report["summary"]
    assert run.report["kind"] == "composites" and run.report["assumptions"].startswith("Assumptions:")
    assert set(summary["methods"]) == {"always_delegate", "decide_mf", "learned"}
    assert set(summary["sensitivity"]) == {"0", "0.05"} and set(summary["rates"]) == {"decide_mf", "learned"}
    assert seen[1].startswith("fitting always_delegate (seed 0, penalty 0)") and len(seen) >= 7
    assert not (data_dir / "evaluations" / f"evaluation-{run.pk}.png").exists()  # no plot for composites


def test_an_evaluation_on_a_collection_alone_tests_its_recorded_outcomes(data_dir: Path) -> None:
    from dataclasses import asdict
    from decimal import Decimal

    from studio.models import Collection, RecordedOutcome
    from tests.factories import PoolFactory, UserFactory
    from tests.orchestrator.synthetic_outcomes import outcome_records, synthetic_table

    collection = Collection.objects.create(owner=UserFactory(), pool=PoolFactory(), name="mine",
                                           source="collection-9", budget_usd=Decimal(1))  # fmt: skip
    table, _ = synthetic_table(n=60, seed=2)
    RecordedOutcome.objects.bulk_create(
        RecordedOutcome(**{**asdict(r), "source": collection.source, "split": "", "prompt_sha256": "x"})
        for r in outcome_records(table)
    )
    config = evaluation_config(
        preset="quick", outcomes=[], train=[], probe=0, seed=0, methods=["cheapest", "oracle"], learned=None,
        max_train_items=None, max_test_items=None, checkpoint=None, collections=[collection.pk],
    )  # fmt: skip
    assert config["outcomes"] == [] and config["collections"] == [collection.pk]
    run = EvaluationRun.objects.create(config=config)
    tasks.evaluate(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.SUCCEEDED, run.message
    assert run.report["items"] == 12  # the seeded 80/20 split of its 60 items
    assert run.report["methods"]["oracle"]["macro_acc"] >= run.report["methods"]["cheapest"]["macro_acc"]
