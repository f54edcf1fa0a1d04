"""Reward-guided policy training: estimates stand in for outcomes on items never executed."""

from __future__ import annotations

import numpy as np
import torch

from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.method import LearnedConfig
from orchestrator.reward.guided import (
    concat_batches,
    estimated_batch,
    executed_tokens,
    fit_grounded,
)
from orchestrator.reward.platt import platt
from orchestrator.routing import metrics
from tests.orchestrator.synthetic_outcomes import synthetic_table


def test_platt_recovers_a_known_logistic_mapping() -> None:
    rng = np.random.default_rng(0)
    reward = rng.normal(size=(4000, 1)) * 2
    score = (rng.random((4000, 1)) < 1 / (1 + np.exp(-(1.5 * reward - 0.5)))).astype(float)
    a, b = platt(reward, score)
    assert abs(a - 1.5) < 0.15 and abs(b + 0.5) < 0.15


def test_an_estimated_batch_carries_estimates_and_no_outcome_of_its_items() -> None:
    table, emb = synthetic_table(n=40, seed=0)
    context = make_context(table.rows(np.arange(20)), emb[:20])
    free = encode(table.rows(np.arange(20, 40)), emb[20:], context, with_outcomes=False)
    probability = np.full((20, 3), 0.25)
    batch = estimated_batch(free, probability)
    assert batch.score is not None and torch.allclose(batch.score, torch.full((20, 3), 0.25))
    assert batch.cost is not None and torch.equal(batch.cost, free.cost_est)
    assert bool((batch.answers < 0).all())  # no answer of these items is known
    known = encode(table.rows(np.arange(20)), emb[:20], context, with_outcomes=True, exclude_self=True)
    both = concat_batches(known, batch)
    assert both.task.shape[0] == 40 and both.score is not None
    assert torch.equal(both.score[:20], known.score)


def test_executed_tokens_count_every_recorded_call() -> None:
    table, _ = synthetic_table(n=10, seed=0)
    assert executed_tokens(table) == 10 * 3 * (100 + 10)


def test_grounded_and_guided_fitting_run_and_route_without_violations() -> None:
    table, emb = synthetic_table(n=160, seed=0)
    train, test = table.rows(np.arange(120)), table.rows(np.arange(120, 160))
    config = LearnedConfig.from_mapping(
        {"sft": {"epochs": 2, "reliability_epochs": 1}, "rl": {"iterations": 2, "tasks_per_iteration": 16}}
    )
    for guided in (False, True):
        method = fit_grounded(train, emb[:120], np.arange(30), guided=guided, config=config, seed=0, prices=None)
        method.embedder = lambda texts: emb[[table.prompts.index(t) for t in texts]]
        routed = metrics.score_routes(test, method.route(test, knob=0.0))
        assert routed.violations == 0 and len(routed.score) == 40


def test_a_stored_guide_scores_the_cells_the_tables_did_not_record(tmp_path) -> None:
    """train_policy --guide: RL plays every cell; a cell without a recording is scored by the
    stored OrchRM, whose stand-in tracks the withheld outcome; a bad guide is a usage error."""
    import json

    import pytest

    from orchestrator import train_policy, train_rm
    from orchestrator.learning.dataset import encode, make_context
    from orchestrator.outcomes import write_outcomes
    from orchestrator.reward.guided import guide_cells
    from orchestrator.reward.model import RewardModel
    from orchestrator.routing.table import load_routable
    from tests.orchestrator.synthetic_outcomes import PAIRS, lookup_embedder, outcome_records

    torch.set_num_threads(1)
    table, emb = synthetic_table(n=160, seed=0)
    withheld = {(f"t.{i}", PAIRS[2][0]) for i in range(1, 160, 2)}  # the cheap pair, on every odd item
    sparse = tmp_path / "sparse.jsonl.gz"
    write_outcomes(sparse, [r for r in outcome_records(table) if (r.item_id, r.model) not in withheld])
    embed = lookup_embedder(table, emb)
    guide = tmp_path / "guide.pt"
    rm = train_rm.RMConfig.from_mapping({"model": {"hidden": 16}, "train": {"epochs": 4, "lr": 5e-3, "threads": 1}})
    train_rm.train([sparse], out=guide, seed=0, config=rm, prices=None, embedder=embed, show_progress=False)

    recorded = load_routable([sparse])
    order = [table.item_ids.index(i) for i in recorded.item_ids]
    emb_r = emb[order]
    context = make_context(recorded, emb_r)
    batch = encode(recorded, emb_r, context, with_outcomes=True, exclude_self=True)
    played, metrics = guide_cells(batch, recorded, emb_r, RewardModel.load(guide))
    missing = ~recorded.available()
    assert metrics["guide/cells"] == missing.sum() == 80 and metrics["guide/platt_a"] > 0
    assert bool(played.available.all()) and played.score is not None and played.cost is not None
    known = torch.from_numpy(~missing)
    assert batch.score is not None
    assert torch.equal(played.score[known], batch.score[known])  # a recorded cell keeps its outcome
    assert torch.equal(played.cost[~known], batch.cost_est[~known])
    stand_in = played.score[~known].numpy()
    truth = table.score[order][missing]  # the withheld outcomes, never read by the guide
    assert metrics_auc(stand_in, truth) > 0.8

    out = tmp_path / "policy.pt"
    config = tmp_path / "tiny.json"
    config.write_text(
        json.dumps(
            {
                "policy": {"hidden": 16},
                "sft": {"epochs": 4, "reliability_epochs": 2},
                "rl": {"iterations": 4, "tasks_per_iteration": 32, "group": 4},
                "threads": 1,
            }
        )
    )
    argv = ["--outcomes", str(sparse), "--out", str(out), "--config", str(config)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train_policy, "train", _with_embedder(train_policy.train, embed))
        assert train_policy.main([*argv, "--guide", str(guide)]) == 0
        saved = torch.load(out, weights_only=True)
        assert saved["train"]["guide"] == str(guide) and saved["metrics"]["guide/cells"] == 80
        with pytest.raises(SystemExit) as exit_:
            train_policy.main([*argv, "--guide", str(out)])  # a policy, not a reward model
        assert exit_.value.code == 2
        with pytest.raises(SystemExit):
            train_policy.main([*argv, "--guide", str(tmp_path / "none.pt")])


def metrics_auc(score: np.ndarray, truth: np.ndarray) -> float:
    """ROC AUC of `score` for `truth` >= 0.5 (ties count half)."""
    pos, neg = score[truth >= 0.5], score[truth < 0.5]
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


def _with_embedder(train, embed):
    def wrapped(*args, **kwargs):
        return train(*args, embedder=embed, show_progress=False, **kwargs)

    return wrapped
