"""The reward model's training job: outcome files, the studio's pairs and stored runs'
pairs in; a checkpoint with its lineage out, the first one the default reward model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from orchestrator.reward.model import RewardModel
from studio.models import Checkpoint, JobStatus, Role, TrainingJob
from studio.services.reward import default_scorer
from studio.services.training import checkpoint_promote
from tests.factories import TaskFactory, UserFactory
from tests.orchestrator.synthetic import write
from tests.orchestrator.synthetic_outcomes import outcome_records, synthetic_table
from tests.support.preferences import finished_run, make_pair
from tests.support.reward import TINY_RM
from workers import reward_training, training

pytestmark = pytest.mark.django_db


def fake_embed(
    texts: list[str], *, progress: bool = False, on_chunk: Callable[[int, int], None] | None = None
) -> np.ndarray:
    if on_chunk is not None:
        on_chunk(len(texts), len(texts))
    vectors = np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=384) for t in texts])
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def outcomes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A small outcome file as the only shipped one; the MiniLM replaced by seeded vectors."""
    table, _ = synthetic_table(n=40, seed=1)
    path = write(tmp_path / "synthetic.jsonl.gz", outcome_records(table))
    monkeypatch.setattr(reward_training, "shipped_outcomes", lambda: [path])
    monkeypatch.setattr("orchestrator.embedding.embed", fake_embed)
    with override_settings(DATA_DIR=tmp_path):
        yield path


def studio_pairs() -> None:
    """One human pair with a majority, one self-supervised pair, one unlabeled pair; two
    verified runs of one task, right and wrong."""
    labeler = UserFactory(role=Role.LABELER)
    human = make_pair(model_a="gpt-4", model_b="mistral-7b-chat")
    human.labels.create(labeler=labeler, verdict="a")
    make_pair(source="cheaper_correct", metadata={"preferred": "b"})
    make_pair()  # no label: no winner, left out
    task = TaskFactory()
    finished_run(task, "A", model="gpt-4", verification={"correct": True, "score": 1.0})
    finished_run(task, "B", model="mistral-7b-chat", verification={"correct": False, "score": 0.0})


def test_run_pairs_are_correct_over_incorrect_with_plans() -> None:
    studio_pairs()
    pairs = reward_training.run_pairs()
    assert len(pairs) == 1
    pair = pairs[0]
    assert (pair.source, pair.chosen, pair.rejected) == ("correct_over_incorrect", "A", "B")
    assert pair.chosen_plan is not None and pair.chosen_plan.pairs == [("gpt-4", "cot")]
    assert pair.rejected_plan is not None and pair.rejected_plan.pairs == [("mistral-7b-chat", "cot")]


def test_a_reward_model_job_trains_records_lineage_and_becomes_the_default(outcomes: Path) -> None:
    studio_pairs()
    researcher = UserFactory(role=Role.RESEARCHER)
    job = TrainingJob.objects.create(
        kind="reward_model", config={"seed": 1, "outcomes": [outcomes.name], "rm": TINY_RM}, created_by=researcher
    )
    training.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.message
    assert {point["stage"] for point in job.history} == {"embedding", "train"}
    checkpoint = Checkpoint.objects.get(kind="reward_model")
    assert (checkpoint.is_default, job.checkpoint_id, checkpoint.name) == (
        True,
        checkpoint.pk,
        f"reward_model-{job.pk}",
    )
    lineage = checkpoint.lineage
    assert lineage["outcomes"] == [outcomes.name] and lineage["seed"] == 1
    assert lineage["studio_pairs"] == {"cheaper_correct": 1, "human": 1}
    assert lineage["run_pairs"] == 1
    assert lineage["sources"]["human"] == 1 and lineage["sources"]["correct_over_incorrect"] > 1
    assert lineage["pairs"] == sum(lineage["sources"].values()) == checkpoint.metrics["data/pairs"]
    assert checkpoint.metrics["train/accuracy"] > 0 and checkpoint.config["train"]["epochs"] == 3
    assert RewardModel.load(Path(outcomes.parent) / checkpoint.path).payload["lineage"]["preferences"] == 3

    second = TrainingJob.objects.create(
        kind="reward_model",
        config={"outcomes": [outcomes.name], "rm": TINY_RM, "preferences": False, "live_runs": False},
        created_by=researcher,
    )
    training.run_job(second.pk)
    second.refresh_from_db()
    assert second.status == JobStatus.SUCCEEDED, second.message
    assert second.checkpoint is not None and not second.checkpoint.is_default  # the first stays the default
    assert second.checkpoint.lineage["studio_pairs"] == {} and second.checkpoint.lineage["run_pairs"] == 0
    checkpoint_promote(checkpoint_id=second.checkpoint.pk)
    assert default_scorer() is not None


def test_a_job_without_its_outcome_files_fails_clearly(outcomes: Path) -> None:
    job = TrainingJob.objects.create(kind="reward_model", config={"rm": TINY_RM})  # the defaults: not shipped here
    training.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert (
        job.message
        == "ValueError: none of the outcome files llmrouter.jsonl.gz, routerbench.jsonl.gz is in data/outcomes"
    )


def test_a_policy_job_with_a_guide_plays_the_unrecorded_cells_scored_by_it(
    outcomes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reward model trained by its job, then a policy job guided by it on a sparse file."""
    from workers import policy_training

    researcher = UserFactory(role=Role.RESEARCHER)
    rm_job = TrainingJob.objects.create(
        kind="reward_model", config={"outcomes": [outcomes.name], "rm": TINY_RM}, created_by=researcher
    )
    training.run_job(rm_job.pk)
    rm_job.refresh_from_db()
    assert rm_job.status == JobStatus.SUCCEEDED, rm_job.message
    table, _ = synthetic_table(n=40, seed=1)
    sparse = write(
        outcomes.parent / "sparse.jsonl.gz",
        [r for r in outcome_records(table) if not (r.model == "mistral-7b-chat" and r.item_id.endswith(("1", "3")))],
    )
    monkeypatch.setattr(policy_training, "shipped_outcomes", lambda: [sparse])
    tiny = {"policy": {"hidden": 16}, "sft": {"epochs": 2, "reliability_epochs": 1}, "threads": 1,
            "rl": {"iterations": 2, "tasks_per_iteration": 16, "group": 4}}  # fmt: skip
    job = TrainingJob.objects.create(
        kind="policy", config={"guide": rm_job.checkpoint_id, "learned": tiny}, created_by=researcher
    )
    training.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.message
    checkpoint = Checkpoint.objects.get(kind="policy")
    assert checkpoint.lineage["guide"] == rm_job.checkpoint_id
    assert checkpoint.metrics["guide/cells"] == 8  # items 1, 3, 11, 13, 21, 23, 31, 33 of the cheap pair


def test_jobs_train_on_collections_beside_the_outcome_files(outcomes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection's recorded outcomes (here: a second synthetic table kept under its source)
    join both kinds of job: written as a canonical file, trained on, named in the lineage."""
    from dataclasses import asdict
    from decimal import Decimal

    from studio.models import Collection, RecordedOutcome
    from tests.factories import PoolFactory
    from workers import policy_training

    researcher = UserFactory(role=Role.RESEARCHER)
    collection = Collection.objects.create(owner=researcher, pool=PoolFactory(), name="mine", source="collection-7",
                                           budget_usd=Decimal(1))  # fmt: skip
    table, _ = synthetic_table(n=30, seed=5)
    fields = {f for f in asdict(outcome_records(table)[0]) if f not in ("source", "split", "item_id")}
    RecordedOutcome.objects.bulk_create(
        RecordedOutcome(source=collection.source, item_id=f"mine/{r.item_id}", split="", prompt_sha256="x",
                        **{k: v for k, v in asdict(r).items() if k in fields})
        for r in outcome_records(table)
    )  # fmt: skip
    rm_job = TrainingJob.objects.create(
        kind="reward_model", config={"outcomes": [outcomes.name], "rm": TINY_RM, "collections": [collection.pk]},
        created_by=researcher,
    )  # fmt: skip
    training.run_job(rm_job.pk)
    rm_job.refresh_from_db()
    assert rm_job.status == JobStatus.SUCCEEDED, rm_job.message
    assert rm_job.checkpoint_id is not None
    lineage = Checkpoint.objects.get(pk=rm_job.checkpoint_id).lineage
    assert lineage["outcomes"] == [outcomes.name, "collection-7.jsonl.gz"] and lineage["collections"] == [collection.pk]

    monkeypatch.setattr(policy_training, "shipped_outcomes", lambda: [outcomes])
    tiny = {"policy": {"hidden": 16}, "sft": {"epochs": 2, "reliability_epochs": 1}, "threads": 1,
            "rl": {"iterations": 2, "tasks_per_iteration": 16, "group": 4}}  # fmt: skip
    job = TrainingJob.objects.create(kind="policy", config={"learned": tiny, "collections": [collection.pk]},
                                     created_by=researcher)  # fmt: skip
    training.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.message
    assert job.checkpoint_id is not None
    checkpoint = Checkpoint.objects.get(pk=job.checkpoint_id)
    assert checkpoint.lineage["outcomes"] == [outcomes.name, "collection-7.jsonl.gz"]
    assert checkpoint.metrics["data/items"] == 70  # 40 shipped + 30 collected
