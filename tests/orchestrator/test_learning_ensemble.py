"""Trained for pools it will not see, the policy is several networks on disjoint shares of the
items, deciding together (`learning.ensemble`); the same ensemble is what the checkpoint serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from orchestrator.learning.ensemble import PolicyEnsemble, shares
from orchestrator.learning.episode import rollout
from orchestrator.learning.method import LearnedMethod
from orchestrator.learning.model import PolicyConfig, PolicyNet, load_checkpoint, save_checkpoint
from orchestrator.offline.shell import route_table, table_pairs
from orchestrator.policies import make_policy
from orchestrator.routing.table import probe_split
from orchestrator.train_policy import train_table
from tests.orchestrator.batched import method_routes
from tests.orchestrator.synthetic_outcomes import synthetic_table, unseen_table
from tests.orchestrator.test_learned_calibration import calibration_records
from tests.orchestrator.test_learning_model import _batch

SMALL = {
    "policy": {"hidden": 16},
    "sft": {"reliability_epochs": 2, "epochs": 3, "batch_size": 32},
    "rl": {"iterations": 4, "tasks_per_iteration": 16, "group": 4},
    "knobs": [0.0, 0.1, 1.0],
    "cascade_knobs": [],
    "unseen": {"min_items": 100},
}


@pytest.mark.parametrize(
    ("n", "least", "count"),
    [(8772, 2000, 4), (3164, 2000, 1), (300, 100, 3), (399, 100, 3), (199, 100, 1), (80, 100, 1), (50, None, 1)],
)
def test_shares_are_disjoint_cover_every_item_and_hold_the_least(n: int, least: int | None, count: int) -> None:
    parts = shares(n, least, seed=0)
    assert len(parts) == count
    joined = np.concatenate(parts)
    assert sorted(joined.tolist()) == list(range(n))  # every item once
    sizes = [len(p) for p in parts]
    assert min(sizes) >= min(least or n, n) and max(sizes) - min(sizes) <= 1  # at least the least, evenly
    assert all(np.array_equal(a, b) for a, b in zip(parts, shares(n, least, seed=0), strict=True))  # seeded
    if count > 1:
        assert not all(np.array_equal(a, b) for a, b in zip(parts, shares(n, least, seed=1), strict=True))


def _members(count: int) -> list[PolicyNet]:
    torch.manual_seed(0)
    return [PolicyNet(PolicyConfig(hidden=16)).eval() for _ in range(count)]


def test_an_ensemble_decides_by_its_members_mean_log_probabilities() -> None:
    members = _members(3)
    ensemble = PolicyEnsemble(members)
    batch = _batch()
    n, p = batch.available.shape
    allowed = torch.from_numpy(np.random.default_rng(0).random((n, p)) < 0.6)
    allowed[:, 0] = True
    args = (
        torch.zeros(n, 9),
        torch.rand(n),
        batch.pairs,
        torch.zeros(n, p, 5),
        allowed,
        torch.ones(n, dtype=torch.bool),
    )
    with torch.no_grad():
        got = ensemble.action_logits(ensemble.encode_task(batch.task), *args)
        each = [torch.log_softmax(m.action_logits(m.encode_task(batch.task), *args), dim=-1) for m in members]
        expected = torch.stack(each).mean(dim=0)
        torch.testing.assert_close(got, expected)
        assert torch.isinf(got[:, :p][~allowed]).all()  # a masked pair stays masked
        # The members differ, so their mean is none of them.
        assert not any(torch.allclose(got[:, :p][allowed], m[:, :p][allowed]) for m in each)
        response = torch.randn(n, p, 9)
        reliability = torch.stack([m.reliability_logits(batch.task, batch.pairs, response) for m in members]).mean(0)
        torch.testing.assert_close(ensemble.reliability_logits(batch.task, batch.pairs, response), reliability)
        rows, cols = torch.arange(5), torch.zeros(5, dtype=torch.long)
        cells = ensemble.reliability_of(
            ensemble.rel_task_proj(batch.task)[rows], batch.pairs[rows, cols], response[:5, 0]
        )
        torch.testing.assert_close(cells, reliability[rows, cols])


def test_an_ensemble_checkpoint_loads_as_the_same_ensemble(tmp_path: Path) -> None:
    ensemble = PolicyEnsemble(_members(2))
    path = tmp_path / "ensemble.pt"
    save_checkpoint(path, ensemble, extra={})
    loaded, _ = load_checkpoint(path)
    assert isinstance(loaded, PolicyEnsemble) and loaded.config.members == 2
    batch = _batch()
    lam = torch.full((batch.task.shape[0],), 0.1)
    with torch.no_grad():
        a = rollout(ensemble, batch, lam, max_steps=3, mode="greedy")
        b = rollout(loaded, batch, lam, max_steps=3, mode="greedy")
    assert a.order == b.order and torch.equal(a.final, b.final)
    with pytest.raises(ValueError, match="at least two"):
        PolicyEnsemble(_members(1))


@pytest.fixture(scope="module")
def pools() -> dict[str, Any]:
    torch.set_num_threads(1)
    train, train_emb = synthetic_table(n=300, seed=4)
    unseen, unseen_emb = unseen_table(n=80, seed=5)
    probe, test = probe_split(unseen, k=20, seed=0)
    vectors = {**dict(zip(train.prompts, train_emb, strict=True)), **dict(zip(unseen.prompts, unseen_emb, strict=True))}
    return {"train": train, "probe": probe, "test": test, "embed": lambda texts: np.stack([vectors[t] for t in texts])}


def test_an_unseen_pool_fit_is_one_network_per_share_and_routes_as_its_batched_episodes(
    pools: dict[str, Any],
) -> None:
    method = LearnedMethod(SMALL, embedder=pools["embed"])
    method.fit(pools["train"], seed=0, probe=pools["probe"])
    assert isinstance(method.net, PolicyEnsemble) and len(method.net.members) == 3
    assert method.metrics["unseen/members"] == 3 and method.metrics["unseen/items_per_member"] == 100
    for lam in (0.0, 0.1, 1.0):
        core, batched = method.route(pools["test"], knob=lam), method_routes(method, pools["test"], lam)
        assert batched.executed == core.executed and batched.final == core.final
    # A seen pool (no probe) still trains one network on every item.
    seen = LearnedMethod(SMALL, embedder=pools["embed"])
    seen.fit(pools["train"], seed=0)
    assert isinstance(seen.net, PolicyNet)


def test_train_policy_unseen_serves_the_ensemble_the_evaluation_fits(pools: dict[str, Any], tmp_path: Path) -> None:
    """`train_policy --unseen`'s checkpoint, evaluated on the probe, and served live calibrated on
    the same probe, routes as `LearnedMethod` fitted for that unseen pool."""
    from orchestrator.learning.method import LearnedConfig

    path = tmp_path / "unseen.pt"
    config = LearnedConfig.from_mapping(SMALL)
    metrics = train_table(
        pools["train"], out=path, seed=0, config=config, prices=None, embedder=pools["embed"], show_progress=False,
        unseen=True,
    )  # fmt: skip
    assert metrics["unseen/members"] == 3
    fitted = LearnedMethod(SMALL, embedder=pools["embed"])
    fitted.fit(pools["train"], seed=0, probe=pools["probe"])
    loaded = LearnedMethod(SMALL, checkpoint=path, embedder=pools["embed"])
    loaded.fit(pools["train"], seed=0, probe=pools["probe"])
    calibration = calibration_records(pools["probe"])
    test = pools["test"]
    for lam in (0.0, 0.1, 1.0):
        expected = fitted.route(test, knob=lam)
        assert loaded.route(test, knob=lam).executed == expected.executed
        policy = make_policy(
            "learned", {"checkpoint": str(path), "embedder": pools["embed"], "calibration": calibration}
        )
        live, _ = route_table(test, policy, lam=lam, pairs=table_pairs(test))
        assert live.executed == expected.executed and live.final == expected.final, lam
