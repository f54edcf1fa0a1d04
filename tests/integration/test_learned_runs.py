"""The learned policy in the studio: a training job's checkpoint drives real runs on a replay
pool through a real Celery worker, and a job's progress and failure are recorded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.test import override_settings

from orchestrator.learning import features
from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.method import LearnedConfig, route_batch
from orchestrator.learning.model import PolicyConfig, PolicyNet, save_checkpoint
from orchestrator.outcomes import DOMAINS
from orchestrator.train_policy import train
from studio.models import Attempt, Checkpoint, JobStatus, ModelPool, RecordedOutcome, Role, RunEvent, TrainingJob
from studio.selectors.training import live_trajectories
from studio.services.outcomes import outcomes_import
from studio.services.runs import run_create
from studio.services.tasks import task_create, task_create_composite
from studio.services.training import checkpoint_promote
from tests.factories import UserFactory
from tests.orchestrator.batched import route_cascade
from tests.orchestrator.synthetic import write
from tests.orchestrator.synthetic_outcomes import outcome_records, synthetic_table
from tests.support.runs import wait_for_run
from workers import training

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TINY = {
    "policy": {"hidden": 32},
    "sft": {"reliability_epochs": 8, "epochs": 10, "batch_size": 32},
    "rl": {"iterations": 10, "tasks_per_iteration": 32, "group": 4},
    "threads": 1,
}


def synthetic_outcomes(folder: Path) -> tuple[Path, dict[str, Any]]:
    """The synthetic table's outcomes as a file, and its prompts' vectors."""
    table, emb = synthetic_table(n=160, seed=0)
    vectors = {prompt: emb[i] for i, prompt in enumerate(table.prompts)}
    return write(folder / "synthetic.jsonl.gz", outcome_records(table)), vectors


def tiny_trainer(
    outcomes: Path, vectors: dict[str, Any], config: dict[str, Any] = TINY, prices: Path | None = None
) -> training.Trainer:
    """The policy trainer on the synthetic file with known vectors (the real MiniLM is
    exercised by the runtime policy below and by orchestrator's tests)."""
    import numpy as np

    def vector(text: str) -> Any:
        """A prompt's vector; a composite's text (its parts' prompts), their normalised mean."""
        if text in vectors:
            return vectors[text]
        mean = np.mean([vectors[p] for p in re.findall(r"question \d+", text)], axis=0)
        return mean / np.linalg.norm(mean)

    def trainer(job: TrainingJob, progress: training.Progress, out: Path) -> training.Trained:
        def report(stage: str, done: int, total: int, metrics: dict[str, float]) -> None:
            progress(stage, done / max(1, total), metrics)

        metrics = train(
            [outcomes], out=out, seed=int(job.config.get("seed", 0)), config=LearnedConfig.from_mapping(config),
            prices=prices, embedder=lambda texts: np.stack([vector(t) for t in texts]), show_progress=False,
            on_progress=report, extra_trajectories=live_trajectories(),
        )  # fmt: skip
        return training.Trained(path=out, config=config, metrics=metrics, lineage={"outcomes": [outcomes.name]})

    return trainer


def test_a_trained_checkpoint_drives_runs(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes, vectors = synthetic_outcomes(tmp_path)
    outcomes_import(path=outcomes, prices={}, pool_name="synthetic-replay")
    pool = ModelPool.objects.get(name="synthetic-replay")
    researcher = UserFactory(role=Role.RESEARCHER)
    monkeypatch.setitem(training.TRAINERS, "policy", tiny_trainer(outcomes, vectors))
    with override_settings(DATA_DIR=tmp_path):
        job = TrainingJob.objects.create(kind="policy", config={"seed": 0}, created_by=researcher)
        training.run_job(job.pk)
        job.refresh_from_db()
        assert job.status == JobStatus.SUCCEEDED, job.message
        assert job.history and {point["stage"] for point in job.history} >= {"sft", "rl"}
        checkpoint = Checkpoint.objects.get()
        assert (checkpoint.is_default, job.checkpoint_id) == (True, checkpoint.pk)  # the first becomes the default
        assert (tmp_path / checkpoint.path).is_file()
        assert checkpoint.metrics["eval/reward_rl"] > checkpoint.metrics["eval/reward_untrained"]

        prompt = "question 3"  # a recorded item's text: replay answers whichever pair is chosen
        task = task_create(owner=researcher, text=prompt, metadata={"item_id": "t.3"})
        runs = [
            wait_for_run(run_create(owner=researcher, task_id=task.pk, pool_id=pool.pk, policy="learned",
                                    cost_preference=lam).pk)
            for lam in (0.0, 2.0)
        ]  # fmt: skip
    for run in runs:
        assert run.status == "succeeded", run.end_reason
        assert run.checkpoint_id == checkpoint.pk
        assert run.verification["method"] == "recorded_score"
        assert Attempt.objects.filter(node__run=run).count() == 1  # one node, solved at the first try
    # A higher cost preference never buys a dearer answer.
    assert runs[1].cost_usd <= runs[0].cost_usd


def test_the_domain_of_a_recorded_item_reaches_the_policys_features(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tasks that do not say their domain: one whose item is recorded (the recordings say it),
    and a composite of two items of different domains (each part carries its item's). Odd
    synthetic items are `reasoning`, even ones `math`."""
    outcomes, vectors = synthetic_outcomes(tmp_path)
    outcomes_import(path=outcomes, prices={}, pool_name="synthetic-replay")
    pool = ModelPool.objects.get(name="synthetic-replay")
    researcher = UserFactory(role=Role.RESEARCHER)
    monkeypatch.setitem(training.TRAINERS, "policy", tiny_trainer(outcomes, vectors))
    seen: list[tuple[list[str], Any]] = []
    real = features.task_features

    def watched(embeddings: Any, domains: list[str]) -> Any:
        features = real(embeddings, domains)
        seen.append((list(domains), features))
        return features

    monkeypatch.setattr("orchestrator.policies.learned.task_features", watched)  # the decompose head's
    monkeypatch.setattr("orchestrator.policies.learned_episodes.task_features", watched)  # a node's episode
    source = str(RecordedOutcome.objects.filter(item_id="t.3").values_list("source", flat=True).first())
    with override_settings(DATA_DIR=tmp_path):
        job = TrainingJob.objects.create(kind="policy", config={"seed": 0}, created_by=researcher)
        training.run_job(job.pk)
        plain = task_create(owner=researcher, text="question 3", metadata={"item_id": "t.3"})
        composite = task_create_composite(owner=researcher, items=[(source, "t.3"), (source, "t.4")])
        domains_seen = []
        for task in (plain, composite):
            assert task.domain == ""  # neither says it
            seen.clear()
            run = wait_for_run(run_create(owner=researcher, task_id=task.pk, pool_id=pool.pk, policy="learned").pk)
            assert run.status == "succeeded", run.end_reason
            domains_seen.append(sorted({domains[0] for domains, _ in seen}))
            for domains, vector in seen:
                onehot = vector[0, -len(DOMAINS) :]
                assert onehot[DOMAINS.index(domains[0])] == 1.0 and onehot.sum() == 1.0
    assert domains_seen == [["reasoning"], ["math", "reasoning"]]


def untrained_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelPool, Any, Any, Any, PolicyNet]:
    """The synthetic replay pool, and an untrained, seeded network (its episodes call two or
    three pairs) with the pool's calibration as the default policy checkpoint: (pool, table,
    embeddings, calibration, network)."""
    outcomes, vectors = synthetic_outcomes(tmp_path)
    outcomes_import(path=outcomes, prices={}, pool_name="synthetic-replay")
    pool = ModelPool.objects.get(name="synthetic-replay")
    table, emb = synthetic_table(n=160, seed=0)
    context = make_context(table, emb)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    save_checkpoint(
        tmp_path / "checkpoints" / "untrained.pt", net,
        extra={"context": context_payload(context), "train": {"sft": {"max_steps": 3}}},
    )  # fmt: skip
    Checkpoint.objects.create(kind="policy", name="untrained", path="checkpoints/untrained.pt", is_default=True)
    monkeypatch.setattr("orchestrator.embedding.embed", lambda texts, **_: np.stack([vectors[t] for t in texts]))
    return pool, table, emb, context, net


def test_a_second_opinion_run_holds_the_first_answer_and_accepts_the_policys_choice(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live run of the learned policy (an untrained, seeded network, whose episodes call two
    or three pairs): each answer leaves the node answered, the policy asks for a second
    opinion, then accepts one; the pairs called and the answer accepted are those of the
    evaluation's episode for the same item, checkpoint and λ."""
    pool, table, emb, context, net = untrained_default(tmp_path, monkeypatch)
    routes = route_batch(net, encode(table, emb, context, with_outcomes=False), table, 0.0, max_steps=3)
    item = next(i for i, calls in enumerate(routes.executed) if len(calls) >= 2)
    owner = UserFactory(role=Role.RESEARCHER)
    with override_settings(DATA_DIR=tmp_path):
        task = task_create(owner=owner, text=table.prompts[item], metadata={"item_id": table.item_ids[item]})
        run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, policy="learned",
                                      cost_preference=0.0).pk)  # fmt: skip
    assert run.status == "succeeded", run.end_reason
    attempts = list(Attempt.objects.filter(node__run=run).select_related("endpoint", "primitive").order_by("number"))
    called = [table.pairs.index((a.endpoint.model.removeprefix("replay/"), a.primitive.name)) for a in attempts]
    assert called == list(routes.executed[item]) and len(called) >= 2
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", "payload"))
    answered = [payload["attempt"] for kind, payload in types if kind == "node.answered"]
    assert answered == list(range(1, len(called) + 1))  # each answer held for review
    accepted = next(payload for kind, payload in types if kind == "node.succeeded")
    assert accepted["accepted"] is True
    assert called[accepted["attempt"] - 1] == routes.final[item]
    assert run.final_answer == attempts[accepted["attempt"] - 1].envelope["answer"]


def test_a_live_agreement_cascade_calls_what_the_evaluations_cascade_calls(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy config's `cascade` gate, live: the first pair, its second opinion, and the
    escalation where they differ, as the evaluation's batched cascade plays the same item."""
    pool, table, emb, context, net = untrained_default(tmp_path, monkeypatch)
    gate = {"synthetic": (1, 1)}
    batch = encode(table, emb, context, with_outcomes=False)
    routes = route_cascade(net, batch, table, 0.05, gate, steps=3)
    plain = route_batch(net, encode(table, emb, context, with_outcomes=False), table, 0.05, max_steps=3)
    item = next(  # a second opinion, where the plain review would have called otherwise
        i for i, calls in enumerate(routes.executed) if len(calls) >= 2 and plain.executed[i] != calls
    )
    owner = UserFactory(role=Role.RESEARCHER)
    with override_settings(DATA_DIR=tmp_path):
        task = task_create(owner=owner, text=table.prompts[item], metadata={"item_id": table.item_ids[item]})
        run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, policy="learned",
                                      cost_preference=0.05, policy_config={"cascade": gate}).pk)  # fmt: skip
    assert run.status == "succeeded", run.end_reason
    attempts = list(Attempt.objects.filter(node__run=run).select_related("endpoint", "primitive").order_by("number"))
    called = [table.pairs.index((a.endpoint.model.removeprefix("replay/"), a.primitive.name)) for a in attempts]
    assert called == list(routes.executed[item])
    accepted = next(
        p for kind, p in RunEvent.objects.filter(run=run).values_list("type", "payload") if kind == "node.succeeded"
    )
    assert called[accepted["attempt"] - 1] == routes.final[item]


def test_a_failing_trainer_marks_the_job_failed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(job: TrainingJob, progress: training.Progress, out: Path) -> training.Trained:
        progress("sft", 0.1, {"loss/sft": 2.0})
        raise ValueError("the outcome table has no routable item")

    monkeypatch.setitem(training.TRAINERS, "policy", broken)
    job = TrainingJob.objects.create(kind="policy", created_by=UserFactory(role=Role.RESEARCHER))
    with override_settings(DATA_DIR=tmp_path):
        training.run_job(job.pk)
        training.run_job(job.pk)  # delivered again: a finished job is left as it is
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.message == "ValueError: the outcome table has no routable item"
    assert job.metrics == {"loss/sft": 2.0}
    assert Checkpoint.objects.count() == 0
    with pytest.raises(Exception, match="no checkpoint"):
        checkpoint_promote(checkpoint_id=12345)
