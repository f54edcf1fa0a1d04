"""Best-of-N in the studio: a trained reward model picks among the learned policy's N root
plans, only the top one runs on a real worker, and the run records every candidate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from studio.models import (
    Admissibility,
    Attempt,
    Checkpoint,
    JobStatus,
    ModelPool,
    Primitive,
    Role,
    RunEvent,
    Task,
    TrainingJob,
    User,
)
from studio.selectors.tree import run_tree
from studio.services.outcomes import outcomes_import
from studio.services.runs import run_create
from studio.services.tasks import task_create
from studio.services.tokens import token_create
from tests.factories import EndpointFactory, UserFactory
from tests.integration.test_learned_runs import synthetic_outcomes, tiny_trainer
from tests.integration.test_openai_compat import chat_body, post_chat
from tests.support.reward import TINY_RM
from tests.support.runs import wait_for_run
from workers import reward_training, training

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def train_job(kind: str, user: User, config: dict[str, Any]) -> Checkpoint:
    job = TrainingJob.objects.create(kind=kind, config=config, created_by=user)
    training.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.message
    assert job.checkpoint is not None and job.checkpoint.is_default
    return job.checkpoint


def test_best_of_4_executes_one_pair_chosen_among_4_scored_candidates(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes, vectors = synthetic_outcomes(tmp_path)
    outcomes_import(path=outcomes, prices={}, pool_name="synthetic-replay")
    pool = ModelPool.objects.get(name="synthetic-replay")
    researcher = UserFactory(role=Role.RESEARCHER)
    monkeypatch.setitem(training.TRAINERS, "policy", tiny_trainer(outcomes, vectors))
    monkeypatch.setattr(reward_training, "shipped_outcomes", lambda: [outcomes])
    with override_settings(DATA_DIR=tmp_path):
        train_job("policy", researcher, {"seed": 0})
        rm = train_job("reward_model", researcher, {"outcomes": [outcomes.name], "rm": TINY_RM})  # the real MiniLM
        task = task_create(owner=researcher, text="question 3", metadata={"item_id": "t.3"})
        run = wait_for_run(
            run_create(
                owner=researcher, task_id=task.pk, pool_id=pool.pk, best_of=4, cost_preference=0.05,
                policy_config={"best_of_cost": 0.2},
            ).pk
        )  # fmt: skip
        tree = run_tree(user=researcher, run_id=run.pk)
    assert run.status == "succeeded", run.end_reason
    assert (run.policy, run.best_of) == ("learned", 4)
    attempts = Attempt.objects.filter(node__run=run)
    assert attempts.count() == 1  # only the chosen plan is executed
    root = next(node for node in tree["nodes"] if node.key == "root")
    best_of = root.metadata["best_of"]
    assert best_of["n"] == 4 and len(best_of["candidates"]) == 4 and best_of["scoring_tokens"] == 0
    chosen = best_of["candidates"][best_of["chosen"]]
    assert chosen["reward"] == max(c["reward"] for c in best_of["candidates"])
    assert (chosen["endpoint_id"], chosen["primitive"]) == (attempts[0].endpoint_id, attempts[0].primitive.name)
    # Three pairs are recorded for the item: all three are drawn, then one again.
    assert len({c["endpoint_id"] for c in best_of["candidates"]}) == 3
    # The accounting: the run's tokens are the one executed attempt's; scoring added none.
    assert (run.tokens_in, run.tokens_out) == (attempts[0].tokens_in, attempts[0].tokens_out)
    noted = RunEvent.objects.get(run=run, type="node.noted")
    assert noted.payload["key"] == "root" and noted.payload["best_of"] == best_of
    assert rm.lineage["outcomes"] == [outcomes.name]


def test_a_composite_request_with_best_of_runs_the_whole_plan_it_chose(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A composite task with best_of = 4 on a policy that decides composites: 4 whole plans
    drawn and scored node by node, the chosen one carried out on a real worker, each recorded
    part by the pair its plan names, and nothing else called."""
    import json

    from orchestrator.policies.learned_best_of import PLANNED
    from studio.services.tasks import task_create_composite
    from tests.integration.test_learned_runs import TINY
    from tests.orchestrator.synthetic_outcomes import PAIRS

    outcomes, vectors = synthetic_outcomes(tmp_path)
    outcomes_import(path=outcomes, prices={}, pool_name="synthetic-replay")
    pool = ModelPool.objects.get(name="synthetic-replay")
    researcher = UserFactory(role=Role.RESEARCHER)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({PAIRS[2][0]: {"input_per_mtok": 0.1, "output_per_mtok": 0.1}}))
    config = {**TINY, "decompose": {"composites": 120, "epochs": 100, "rl_iterations": 3}}
    monkeypatch.setitem(training.TRAINERS, "policy", tiny_trainer(outcomes, vectors, config, prices))
    monkeypatch.setattr(reward_training, "shipped_outcomes", lambda: [outcomes])
    with override_settings(DATA_DIR=tmp_path):
        train_job("policy", researcher, {"seed": 0})
        train_job("reward_model", researcher, {"outcomes": [outcomes.name], "rm": TINY_RM})
        item_ids = ["t.1", "t.2", "t.7", "t.8"]
        task = task_create_composite(owner=researcher, items=[("synthetic", i) for i in item_ids])
        run = wait_for_run(
            run_create(
                owner=researcher, task_id=task.pk, pool_id=pool.pk, best_of=4, cost_preference=0.05,
                policy_config={"best_of_cost": 0.2},
            ).pk
        )  # fmt: skip
        tree = run_tree(user=researcher, run_id=run.pk)
    assert run.status == "succeeded", run.end_reason
    root = next(node for node in tree["nodes"] if node.key == "root")
    best_of = root.metadata["best_of"]
    assert best_of["n"] == 4 and len(best_of["candidates"]) == 4 and best_of["scoring_tokens"] == 0
    assert (best_of["lam"], best_of["cost_weight"]) == (0.05, 0.2)  # the run's best_of_cost weighs the cost
    scores = [c["score"] for c in best_of["candidates"]]
    assert best_of["chosen"] == scores.index(max(scores))
    plan = best_of["candidates"][best_of["chosen"]]["plan"]
    attempts = list(Attempt.objects.filter(node__run=run).select_related("node", "primitive"))
    called = sorted((a.node.key, a.endpoint_id, a.primitive.name) for a in attempts)
    if "solve" in plan:  # solved whole: one call, by the chosen pair
        assert called == [("root", *plan["solve"])]
    else:  # each recorded part by its planned pair, once
        parts = [n for n in tree["nodes"] if n.parent is not None and n.parent.key == "root" and n.kind == "subtask"]
        assert [p.metadata[PLANNED] for p in parts] == plan["split"]
        assert called == sorted((p.key, *p.metadata[PLANNED]["pair"]) for p in parts)
    noted = RunEvent.objects.get(run=run, type="node.noted", payload__key="root")
    assert noted.payload["best_of"]["cost_weight"] == 0.2  # the event carries it, within its schema


def test_best_of_without_a_reward_model_is_422_on_the_openai_endpoint(db: None) -> None:
    user = UserFactory()
    token = token_create(user=user, name="openai")[1]
    endpoint = EndpointFactory()
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="direct")[0])
    response = post_chat(token, chat_body(best_of=3))
    assert response.status_code == 422, response.json_body
    error = response.json_body["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "best_of")
    assert error["message"].startswith("best_of needs a default reward model; train and promote one")
    assert Task.objects.count() == 0  # the task and its run are created together or not at all
