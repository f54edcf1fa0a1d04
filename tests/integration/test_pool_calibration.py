"""A pool whose models the policy checkpoint never saw, with its probe outcomes recorded under
its calibration source: a live learned run reads the probe's calibration, and calls the
pairs that the unseen-pool evaluation calls with that probe."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.test import override_settings

from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import make_context
from orchestrator.learning.ensemble import PolicyEnsemble
from orchestrator.learning.method import LearnedConfig, LearnedMethod
from orchestrator.learning.model import PolicyConfig, PolicyNet, load_checkpoint, save_checkpoint
from orchestrator.offline.shell import route_table
from orchestrator.policies import make_policy
from orchestrator.routing.table import probe_split
from orchestrator.train_policy import train_table
from studio.models import Attempt, Checkpoint, ModelPool, Role, Run
from studio.services.outcomes import outcomes_import
from studio.services.pools import pool_update
from studio.services.runs import run_create
from studio.services.tasks import task_create
from tests.factories import UserFactory
from tests.orchestrator.synthetic import write
from tests.orchestrator.synthetic_outcomes import lookup_embedder, outcome_records, synthetic_table, unseen_table
from tests.orchestrator.test_learning_ensemble import SMALL
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LAM = 0.05


def called_pairs(run: Run, pairs: list[tuple[str, str]]) -> list[int]:
    """The columns of the pairs the run's attempts called, in order."""
    attempts = Attempt.objects.filter(node__run=run).select_related("endpoint", "primitive").order_by("number")
    return [pairs.index((a.endpoint.model.removeprefix("replay/"), a.primitive.name)) for a in attempts]


@pytest.mark.parametrize("for_unseen", [False, True], ids=["an untrained network", "trained for unseen pools"])
def test_a_live_run_on_an_unseen_pool_calibrates_on_the_pools_probe(
    celery_worker: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, for_unseen: bool
) -> None:
    # The default checkpoint: an untrained, seeded network calibrated on the synthetic pool; or
    # `train_policy --unseen`'s: two networks, each trained on half of its items.
    train, train_emb = synthetic_table(n=160, seed=0)
    path = tmp_path / "checkpoints" / "untrained.pt"
    if for_unseen:
        config = LearnedConfig.from_mapping({**SMALL, "unseen": {"min_items": 80}})
        embedder = lookup_embedder(train, train_emb)
        train_table(
            train, out=path, seed=0, config=config, prices=None, embedder=embedder, show_progress=False, unseen=True
        )
        assert isinstance(load_checkpoint(path)[0], PolicyEnsemble)
    else:
        torch.manual_seed(0)
        net = PolicyNet(PolicyConfig(hidden=32)).eval()
        context = make_context(train, train_emb)
        save_checkpoint(path, net, extra={"context": context_payload(context), "train": {"sft": {"max_steps": 3}}})
    Checkpoint.objects.create(kind="policy", name="untrained", path="checkpoints/untrained.pt", is_default=True)
    # A pool of other models: 20 probe items under their own source, the others to run.
    unseen, unseen_emb = unseen_table(n=60, seed=3)
    in_probe = set(probe_split(unseen, k=20, seed=0)[0].item_ids)
    is_probe = np.array([item in in_probe for item in unseen.item_ids])
    probe = unseen.rows(np.flatnonzero(is_probe))
    probe = replace(probe, sources=["unseen-probe"] * probe.n_items)
    test = unseen.rows(np.flatnonzero(~is_probe))
    for name, table in (("probe", probe), ("unseen", test)):
        outcomes_import(path=write(tmp_path / f"{name}.jsonl.gz", outcome_records(table)), prices={}, pool_name="u")
    pool = ModelPool.objects.get(name="u")
    vectors = {**dict(zip(train.prompts, train_emb, strict=True)), **dict(zip(unseen.prompts, unseen_emb, strict=True))}

    def embed(texts: list[str], **_: Any) -> np.ndarray:
        return np.stack([vectors[t] for t in texts])

    monkeypatch.setattr("orchestrator.embedding.embed", embed)
    # Offline: the evaluation's core routing with the probe, and the checkpoint's own calibration.
    method = LearnedMethod(checkpoint=path, embedder=embed)
    method.fit(train, seed=0, probe=probe)
    calibrated = method.route(test, knob=LAM)
    plain, _ = route_table(test, make_policy("learned", {"checkpoint": str(path), "embedder": embed}), lam=LAM)
    item = next(i for i in range(test.n_items) if calibrated.executed[i] != plain.executed[i])

    owner = UserFactory(role=Role.RESEARCHER)
    runs = {}
    with override_settings(DATA_DIR=tmp_path):
        for source in ("unseen-probe", ""):
            pool_update(pool_id=pool.pk, changes={"calibration_source": source})
            task = task_create(owner=owner, text=test.prompts[item], metadata={"item_id": test.item_ids[item]})
            run = run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, policy="learned", cost_preference=LAM)
            runs[source] = wait_for_run(run.pk)
    for run in runs.values():
        assert run.status == "succeeded", run.end_reason
    assert called_pairs(runs["unseen-probe"], test.pairs) == list(calibrated.executed[item])
    # Without a calibration source the pool's pairs are unknown to the policy (one mean accuracy):
    # it reviews the first answer otherwise.
    assert called_pairs(runs[""], test.pairs) == list(plain.executed[item])
