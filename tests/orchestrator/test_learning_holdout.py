"""Training for an unseen pool holds some models and items out, and keeps the weights that did
best on them (`learning.holdout`)."""

from __future__ import annotations

import numpy as np
import torch

from orchestrator.learning.holdout import Best, Holdout, HoldoutConfig, hold_out
from orchestrator.learning.method import LearnedMethod
from orchestrator.learning.model import PolicyConfig, PolicyNet
from tests.orchestrator.synthetic_outcomes import lookup_embedder, synthetic_table, unseen_table
from tests.orchestrator.test_learning_train import TINY


def test_the_held_out_models_and_items_are_not_trained_on() -> None:
    table, emb = synthetic_table(n=300, seed=2)
    fit, fit_emb, holdout = hold_out(table, emb, HoldoutConfig(share=0.3, probe=20), seed=0, max_steps=3)
    assert holdout is not None and len(holdout.pools) == 1
    (pool,) = holdout.pools
    assert fit.n_pairs == 2 and pool.available.shape[1] == 1  # of 3 models, one held out
    held_model = ({model for model, _ in table.pairs} - {model for model, _ in fit.pairs}).pop()
    assert fit.n_items == 300 - 90 and pool.task.shape[0] == 90 - 20  # 30% of the items; 20 of them probe it
    lookup = dict(zip(table.prompts, emb, strict=True))
    assert np.array_equal(fit_emb, np.stack([lookup[prompt] for prompt in fit.prompts]))
    held_items = set(table.item_ids) - set(fit.item_ids)
    assert len(held_items) == 90 and held_model not in {model for model, _ in fit.pairs}


def test_nothing_is_held_out_when_asked_or_when_a_source_is_too_small() -> None:
    table, emb = synthetic_table(n=300, seed=2)
    assert hold_out(table, emb, HoldoutConfig(share=0.0), seed=0, max_steps=3)[2] is None
    small, small_emb = synthetic_table(n=100, seed=2)  # 30 held-out items cannot spare a 50-item probe
    fit, _, holdout = hold_out(small, small_emb, HoldoutConfig(share=0.3, probe=50), seed=0, max_steps=3)
    assert holdout is None and fit is small


def test_the_network_ends_with_the_weights_of_its_best_measurement() -> None:
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=16))
    best = Best(net, Holdout(pools=[], max_steps=3))
    scores = iter([0.2, 0.7, 0.4])
    best.holdout.score = lambda _net: next(scores)  # type: ignore[method-assign,assignment]
    snapshots = []
    for step in range(3):
        with torch.no_grad():
            for parameter in net.parameters():
                parameter.add_(0.1)
        snapshots.append({key: value.clone() for key, value in net.state_dict().items()})
        best.offer(step)
    best.restore()
    assert best.at == 1 and best.score == 0.7
    assert all(torch.equal(value, snapshots[1][key]) for key, value in net.state_dict().items())
    assert not all(torch.equal(value, snapshots[2][key]) for key, value in net.state_dict().items())


def test_an_unseen_pool_fit_reports_where_it_stopped() -> None:
    table, emb = synthetic_table(n=300, seed=6)
    probe, probe_emb = unseen_table(n=40, seed=3)
    lookup = {**dict(zip(table.prompts, emb, strict=True)), **dict(zip(probe.prompts, probe_emb, strict=True))}
    embedder = lambda texts: np.stack([lookup[text] for text in texts])  # noqa: E731
    method = LearnedMethod({**TINY, "holdout": {"share": 0.3, "probe": 20}}, embedder=embedder)
    method.fit(table, seed=0, probe=probe)
    metrics = method.metrics
    assert 1 <= metrics["holdout/sft_epochs"] <= TINY["sft"]["epochs"]  # type: ignore[index]
    assert 0 <= metrics["holdout/rl_updates"] <= TINY["rl"]["iterations"]  # type: ignore[index]
    assert method._train is not None and method._train[0].n_items == 210  # the held-out items left out
    refit = LearnedMethod({**TINY, "holdout": {"share": 0.3, "probe": 20, "refit": True}}, embedder=embedder)
    refit.fit(table, seed=0, probe=probe)  # then again on everything, for as long as chosen
    assert refit._train is not None and refit._train[0].n_items == 300
    assert {key: refit.metrics[key] for key in metrics if key.startswith("holdout/")} == {
        key: value for key, value in metrics.items() if key.startswith("holdout/")
    }
    by_default = LearnedMethod(TINY, embedder=embedder)
    by_default.fit(table, seed=0, probe=probe)  # off unless asked for
    assert by_default._train is not None and by_default._train[0].n_items == 300
    assert not any(key.startswith("holdout/") for key in by_default.metrics)
    seen = LearnedMethod({**TINY, "holdout": {"share": 0.3}}, embedder=lookup_embedder(table, emb))
    seen.fit(table, seed=0)  # a seen pool trains on everything
    assert not any(key.startswith("holdout/") for key in seen.metrics)
    assert seen._train is not None and seen._train[0].n_items == 300


def test_a_held_out_item_repeating_a_probe_items_text_leaves_the_measurement() -> None:
    import dataclasses

    table, emb = synthetic_table(n=300, seed=2)
    prompts = list(table.prompts)
    prompts[1::2] = prompts[0::2]  # every text twice: a probe item's twin would be measured on
    twins = dataclasses.replace(table, prompts=prompts)
    _, _, holdout = hold_out(twins, emb, HoldoutConfig(share=0.3, probe=20), seed=0, max_steps=3)
    assert holdout is not None
    (pool,) = holdout.pools
    assert pool.task.shape[0] < 90 - 20  # fewer than all the items less the probe
