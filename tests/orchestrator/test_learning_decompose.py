"""The decompose head's two stages: SFT on both-sign targets, then GRPO over decision episodes."""

from __future__ import annotations

import numpy as np
import torch

from orchestrator.learning.decompose import DecisionEpisodes, DecomposeConfig, fit_decompose_head, train_decompose_rl
from orchestrator.learning.model import PolicyConfig, PolicyNet

T = PolicyConfig(hidden=16).task_dim


def _tasks(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n task vectors of two kinds (axis 0 or axis 1, with noise) and each one's kind."""
    rng = np.random.default_rng(seed)
    kind = np.arange(n) % 2
    tasks = rng.normal(scale=0.1, size=(n, T)).astype(np.float32)
    tasks[np.arange(n), kind] += 1.0
    return tasks, kind


def _net() -> PolicyNet:
    torch.manual_seed(0)
    return PolicyNet(PolicyConfig(hidden=16))


def _decisions(net: PolicyNet, tasks: np.ndarray, lam: float) -> np.ndarray:
    with torch.no_grad():
        hidden = net.encode_task(torch.from_numpy(tasks))
        return (net.decompose_logit(hidden, torch.full((len(tasks),), lam)) > 0).numpy()


def test_sft_fits_targets_of_both_signs_and_moves_only_the_head() -> None:
    net = _net()
    tasks, kind = _tasks(64)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    lams = np.zeros(64)
    metrics = fit_decompose_head(net, tasks, lams, kind.astype(float), config=DecomposeConfig(epochs=200))
    assert metrics["decompose/agreement"] == 1.0 and metrics["decompose/positive_share"] == 0.5
    assert (_decisions(net, tasks, 0.0) == kind.astype(bool)).all()
    after = net.state_dict()
    assert all(torch.equal(v, after[k]) for k, v in before.items() if "decompose_head" not in k)


def test_grpo_learns_which_kind_to_split_and_only_where_the_decision_counts() -> None:
    """Kind 1 pays for splitting, kind 0 for one call. Each episode has a nested node whose
    decision counts only when the root splits: the scorer says so, and it never moves the
    reward otherwise."""
    net = _net()
    tasks, kind = _tasks(40, seed=1)
    nested, _ = _tasks(40, seed=2)
    all_tasks = np.concatenate([tasks, nested])
    episodes = DecisionEpisodes(
        tasks=all_tasks,
        nodes=[np.asarray([i, 40 + i]) for i in range(40)],
        forced=np.zeros(80, dtype=bool),
        lams=np.asarray([0.0, 0.5]),
    )
    seen_unused = []

    def score(task: int, li: int, decision: np.ndarray) -> tuple[float, int, np.ndarray]:
        right = bool(decision[0]) == bool(kind[task])
        if not decision[0]:
            seen_unused.append(bool(decision[1]))
        return (1.0 if right else 0.2), 0, np.asarray([True, bool(decision[0])])

    start = (_decisions(net, tasks, 0.0) == kind.astype(bool)).mean()
    config = DecomposeConfig(rl_iterations=60, rl_tasks=16, rl_group=8, rl_lr=1e-2)
    metrics = train_decompose_rl(net, episodes, score, config=config, seed=0)
    end = (_decisions(net, tasks, 0.0) == kind.astype(bool)).mean()
    assert end == 1.0 and start < 1.0
    assert metrics["decompose_rl/violations"] == 0 and metrics["decompose_rl/reward"] > 0.8
    assert set(seen_unused) == {True, False}  # the nested decision was sampled both ways, unused


def test_forced_nodes_always_split_and_no_episode_means_no_update() -> None:
    net = _net()
    tasks, _ = _tasks(8)
    episodes = DecisionEpisodes(
        tasks=tasks, nodes=[np.asarray([i]) for i in range(8)], forced=np.ones(8, dtype=bool), lams=np.asarray([0.1])
    )
    drawn = []

    def score(task: int, li: int, decision: np.ndarray) -> tuple[float, int, np.ndarray]:
        drawn.append(bool(decision[0]))
        return 1.0, 0, np.asarray([True])

    before = {k: v.clone() for k, v in net.state_dict().items()}
    train_decompose_rl(net, episodes, score, config=DecomposeConfig(rl_iterations=3, rl_tasks=4, rl_group=2))
    assert drawn and all(drawn)
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in before.items())  # nothing the policy chose
    assert train_decompose_rl(net, episodes, score, config=DecomposeConfig(rl_iterations=0)) == {}
