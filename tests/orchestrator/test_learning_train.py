"""A tiny CPU smoke run of SFT then RL, and the learned routing method on a synthetic table."""

from __future__ import annotations

import numpy as np
import torch

from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.episode import EpisodeBatch, rollout, violations
from orchestrator.learning.fit import fit_policy
from orchestrator.learning.method import LearnedConfig, LearnedMethod
from orchestrator.learning.model import PolicyConfig, PolicyNet
from orchestrator.learning.rl import RLConfig, evaluate_reward, group_advantages, train_rl
from orchestrator.learning.sft import SFTConfig, curate, extra_from_records, train_sft
from tests.orchestrator.synthetic_outcomes import PAIRS, lookup_embedder, synthetic_table

TINY = {
    "policy": {"hidden": 32},
    "sft": {"reliability_epochs": 8, "epochs": 10, "batch_size": 32},
    "rl": {"iterations": 25, "tasks_per_iteration": 32, "group": 4},
    "knobs": [0.0, 0.1, 1.0],
    "threads": 1,
}


def _episodes(seed: int = 0) -> EpisodeBatch:
    table, emb = synthetic_table(n=160, seed=seed)
    return encode(table, emb, make_context(table, emb), with_outcomes=True, exclude_self=True)


def test_sft_then_rl_beats_the_untrained_policy() -> None:
    torch.set_num_threads(1)  # tiny networks: one thread is fastest, and stays fast on a busy machine
    torch.manual_seed(0)
    batch = _episodes()
    net = PolicyNet(PolicyConfig(hidden=32))
    metrics = fit_policy(net, batch, LearnedConfig.from_mapping(TINY), seed=0)
    assert metrics["eval/reward_sft"] > metrics["eval/reward_untrained"] + 0.05
    assert metrics["eval/reward_rl"] > metrics["eval/reward_untrained"] + 0.05
    assert metrics["rl/violations"] == 0
    # Held-out items of the same distribution: the gain is not memorized.
    held_out = _episodes(seed=1)
    untrained = PolicyNet(PolicyConfig(hidden=32))
    lams = (0.0, 0.1, 1.0)
    assert evaluate_reward(net, held_out, lams, 3) > evaluate_reward(untrained, held_out, lams, 3) + 0.05


def test_rl_alone_improves_reward_from_scratch() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    batch = _episodes()
    net = PolicyNet(PolicyConfig(hidden=32))
    before = evaluate_reward(net, batch, (0.0, 0.1, 1.0), 3)
    metrics = train_rl(net, batch, RLConfig(iterations=40, tasks_per_iteration=32, group=4, lr=2e-3, kl_coef=0.0))
    assert evaluate_reward(net, batch, (0.0, 0.1, 1.0), 3) > before + 0.05
    assert set(metrics) >= {"rl/reward", "loss/pg", "loss/kl", "rl/violations"}


def test_group_advantages_are_relative_to_the_group() -> None:
    adv = group_advantages(torch.tensor([1.0, 0.0, 1.0, 0.5, 0.5, 0.5]), 3, std_floor=0.1)
    assert adv[:3].sum().abs() < 1e-6 and adv[0] > 0 > adv[1]
    assert torch.equal(adv[3:], torch.zeros(3))  # identical rewards: no preference


def test_targets_are_cheapest_good_enough_and_recovery_repairs() -> None:
    batch = _episodes()
    rng = np.random.default_rng(0)
    n = batch.task.shape[0]
    config = SFTConfig()
    zero = curate(batch, np.zeros(n, dtype=np.float32), config, rng)
    assert batch.score is not None
    # λ = 0: the direct target set is exactly the correct pairs (where any is correct).
    some = batch.score.numpy().max(1) >= 0.5
    direct_sets = zero["sets"][:n, 0, :3]
    assert np.array_equal(direct_sets[some], batch.score.numpy()[some] >= 0.5)
    # High λ: the cheap pair is the target wherever it was right.
    high = curate(batch, np.full(n, 2.0, dtype=np.float32), config, rng)
    cheap_right = batch.score.numpy()[:, 2] >= 0.5
    assert (high["actions"][:n, 0][cheap_right] == 2).all()
    # Recovery: after a wrong first pair, a repair to a right pair is the target when it pays.
    rec = zero["actions"][n : 2 * n]
    wrong_first = batch.score.numpy()[np.arange(n), rec[:, 0]] < 0.5
    repaired = wrong_first & (rec[:, 1] < 3)
    assert repaired.any()
    assert (batch.score.numpy()[np.arange(n), rec[:, 1].clip(max=2)][repaired] >= 0.5).all()


def test_extra_trajectories_keep_verified_runs_on_known_pairs() -> None:
    records = [
        {"item_id": "t.1", "calls": [list(PAIRS[2]), list(PAIRS[0])], "score": 1.0, "cost_preference": 0.1},
        {"item_id": "t.2", "calls": [list(PAIRS[2])], "score": 0.0},
        {"item_id": "t.3", "calls": [["unknown-model", "direct"]], "score": 1.0},
    ]
    extra = extra_from_records(records, [f"t.{i}" for i in range(10)], PAIRS)
    assert extra.rows == [1] and extra.calls == [[2, 0]] and extra.lams == [0.1]


def test_learned_method_routes_only_available_pairs_along_a_frontier() -> None:
    table, emb = synthetic_table(n=200, seed=3)
    train, test = table.rows(np.arange(160)), table.rows(np.arange(160, 200))
    score = test.score.copy()
    score[::2, 0] = np.nan  # the expensive pair was not recorded on every other test item
    test = type(test)(**{**test.__dict__, "score": score})
    method = LearnedMethod(TINY, embedder=lookup_embedder(table, emb))
    method.fit(train, seed=0)
    available = test.available()
    costs = []
    for knob in method.knobs:
        routes = method.route(test, knob=knob)
        assert len(routes.final) == test.n_items
        for i, calls in enumerate(routes.executed):
            assert calls and all(available[i, j] for j in calls)
        costs.append(np.mean([sum(test.cost[i, j] for j in calls) for i, calls in enumerate(routes.executed)]))
    assert costs[0] > costs[-1]  # a higher λ spends less


def test_sft_stays_finite_when_an_item_has_a_single_pair() -> None:
    torch.set_num_threads(1)
    table, emb = synthetic_table(n=64, seed=2)
    score = table.score.copy()
    score[::3, :2] = np.nan  # a third of the items recorded on the cheap pair only
    table = type(table)(**{**table.__dict__, "score": score})
    batch = encode(table, emb, make_context(table, emb), with_outcomes=True, exclude_self=True)
    net = PolicyNet(PolicyConfig(hidden=16))
    metrics = train_sft(net, batch, SFTConfig(reliability_epochs=1, epochs=2, batch_size=16))
    assert np.isfinite(metrics["loss/sft"]) and np.isfinite(metrics["loss/reliability"])
    assert all(torch.isfinite(p).all() for p in net.parameters())


def test_violations_count_the_unavailable_pairs_an_episode_executed() -> None:
    """What `rl/violations` counts: zero for the masked sampling, one for a forced pick of a
    pair the item does not have."""
    batch = _episodes().rows(torch.arange(4))
    batch.available[:, 0] = False
    net = PolicyNet(PolicyConfig(hidden=32))
    lam = torch.zeros(4)
    sampled = rollout(net, batch, lam, max_steps=3, mode="sample", generator=torch.Generator().manual_seed(0))
    assert violations(batch, sampled).tolist() == [0.0] * 4
    p = batch.available.shape[1]
    forced = torch.tensor([[0, p], [1, p], [0, p], [1, p]])
    picked = rollout(net, batch, lam, max_steps=3, mode="forced", forced=forced)
    assert violations(batch, picked).tolist() == [1.0, 0.0, 1.0, 0.0]
