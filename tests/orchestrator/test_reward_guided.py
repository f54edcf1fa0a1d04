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
    platt,
)
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
