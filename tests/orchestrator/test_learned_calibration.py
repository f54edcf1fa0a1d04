"""The learned policy on a pool its checkpoint never saw, calibrated on the pool's probe
outcomes (`calibration`): it decides as the unseen-pool evaluation does with that probe."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pytest
import torch

from orchestrator.core.protocol import Budget, NodeView, Observation
from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.method import LearnedMethod
from orchestrator.learning.model import PolicyConfig, PolicyNet, save_checkpoint
from orchestrator.offline.shell import route_table, table_pairs
from orchestrator.policies import make_policy
from orchestrator.policies.learned import LearnedPolicy
from orchestrator.policies.learned_calibration import calibration_context
from orchestrator.routing.methods import CASCADE_OFFSET
from orchestrator.routing.table import OutcomeTable, probe_split
from tests.orchestrator.synthetic_outcomes import lookup_embedder, outcome_records, synthetic_table, unseen_table

LAMS = (0.0, 0.05, 1.0)


def calibration_records(table: OutcomeTable) -> list[dict[str, Any]]:
    """The table's outcomes as the policy config's `calibration` (what the studio sends)."""
    fields = (
        "item_id", "prompt", "domain", "benchmark", "model", "primitive", "score", "cost_usd", "prompt_tokens",
        "completion_tokens", "response",
    )  # fmt: skip
    return [{name: asdict(record)[name] for name in fields} for record in outcome_records(table)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An untrained, seeded checkpoint calibrated on the synthetic pool (its episodes call one to
    three pairs), and a pool of other models split into a probe and the items to route."""
    torch.set_num_threads(1)
    train, train_emb = synthetic_table(n=160, seed=0)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    path = tmp_path_factory.mktemp("calibration") / "untrained.pt"
    context = make_context(train, train_emb)
    save_checkpoint(path, net, extra={"context": context_payload(context), "train": {"sft": {"max_steps": 3}}})
    unseen, unseen_emb = unseen_table(n=60, seed=3)
    probe_index = set(probe_split(unseen, k=20, seed=0)[0].item_ids)
    is_probe = np.array([item in probe_index for item in unseen.item_ids])
    vectors = {**dict(zip(train.prompts, train_emb, strict=True)), **dict(zip(unseen.prompts, unseen_emb, strict=True))}
    return {
        "path": path,
        "train": train,
        "probe": unseen.rows(np.flatnonzero(is_probe)),
        "test": unseen.rows(np.flatnonzero(~is_probe)),
        "embed": lambda texts: np.stack([vectors[t] for t in texts]),
        "lookup": lookup_embedder(unseen, unseen_emb),
    }


def _policy(setup: dict[str, Any], **config: object) -> LearnedPolicy:
    policy = make_policy("learned", {"checkpoint": str(setup["path"]), "embedder": setup["embed"], **config})
    assert isinstance(policy, LearnedPolicy)
    return policy


def test_a_calibrated_policy_routes_as_the_evaluation_with_that_probe(setup: dict[str, Any]) -> None:
    """Every item of the pool, at three λ: the pairs called and the answer accepted are those of
    `LearnedMethod` loading the checkpoint and calibrating on the same probe; and
    the same policy without the calibration routes some items otherwise."""
    test = setup["test"]
    method = LearnedMethod(checkpoint=setup["path"], embedder=setup["embed"])
    method.fit(setup["train"], seed=0, probe=setup["probe"])
    assert max(method.knobs) < CASCADE_OFFSET  # the cascade's gates were fit on other pairs: off here
    plain, cascade_knob = method.route(test, knob=0.05), method.route(test, knob=CASCADE_OFFSET + 0.05)
    assert cascade_knob.executed == plain.executed and cascade_knob.final == plain.final
    calibration = calibration_records(setup["probe"])
    differ, lengths = 0, set()
    for lam in LAMS:
        offline = method.route(test, knob=lam)
        live, _ = route_table(test, _policy(setup, calibration=calibration), lam=lam, pairs=table_pairs(test))
        assert live.executed == offline.executed, lam
        assert live.final == offline.final, lam
        plain, _ = route_table(test, _policy(setup), lam=lam, pairs=table_pairs(test))
        differ += sum(a != b for a, b in zip(plain.executed, offline.executed, strict=True))
        lengths |= {len(calls) for calls in offline.executed}
    assert len(lengths) >= 2  # second opinions, not only first answers
    assert differ > 0
    node = NodeView(key="root", kind="root", text=test.prompts[0], status="ready", depth=0)
    observation = Observation(
        task_text=node.text, decomposable=False, nodes=(node,), budget_left=Budget(), pairs=table_pairs(test),
        domain=test.domains[0], cost_preference=0.05,
    )  # fmt: skip
    gate = {test.benchmarks[0]: (1, 0)}
    assert _policy(setup, cascade=gate).cascade_gate(observation) == gate
    assert _policy(setup, cascade=gate, calibration=calibration).cascade_gate(observation) is None


def test_the_calibration_gives_the_probes_features_and_without_it_the_pools_mean(setup: dict[str, Any]) -> None:
    """A node's pair features are the evaluation's encoding of the item on the probe's context;
    without the calibration, the pool's pairs are unknown ones (the checkpoint pool's mean)."""
    test = setup["test"]
    pairs = table_pairs(test)
    context = make_context(setup["probe"], setup["embed"](setup["probe"].prompts))
    expected = encode(test, setup["embed"](test.prompts), context, with_outcomes=False).pairs
    calibrated = _policy(setup, calibration=calibration_records(setup["probe"]))
    plain = _policy(setup)
    for i in range(5):
        node = NodeView(key="root", kind="root", text=test.prompts[i], status="ready", depth=0)
        observation = Observation(
            task_text=test.prompts[i], decomposable=False, nodes=(node,), budget_left=Budget(), pairs=pairs,
            domain=test.domains[i],
        )  # fmt: skip
        features = calibrated.episode(node, observation, pairs).batch.pairs[0]
        assert torch.equal(features, expected[i])
        unknown = plain.episode(node, observation, pairs).batch.pairs[0, -len(pairs) :]  # after the checkpoint's
        assert not torch.allclose(unknown, expected[i])
        assert torch.unique(unknown[:, -8]).numel() == 1  # one accuracy for every pair: the mean


def test_a_calibration_is_built_once_per_process_for_the_same_records(setup: dict[str, Any]) -> None:
    records = calibration_records(setup["probe"])
    first = calibration_context(records, setup["lookup"])
    assert calibration_context([dict(record) for record in records], setup["lookup"]) is first
    assert calibration_context(records[:-1], setup["lookup"]) is not first


def test_a_named_version_spares_checking_the_records_again(setup: dict[str, Any]) -> None:
    records = calibration_records(setup["probe"])
    first = calibration_context(records, setup["lookup"], key="a test version")
    # The same key: the context built, without reading the records (here not even records).
    assert calibration_context(None, setup["lookup"], key="a test version") is first
    with pytest.raises(ValueError, match="non-empty list"):
        calibration_context(None, setup["lookup"], key="another test version")  # a new version is checked


def test_model_names_are_compared_without_the_replay_prefix(setup: dict[str, Any]) -> None:
    plain = calibration_records(setup["probe"])
    prefixed = [{**record, "model": f"replay/{record['model']}"} for record in plain]
    policy = _policy(setup, calibration=prefixed)
    assert set(policy.loaded.columns) == set(setup["probe"].pairs)


def test_a_malformed_calibration_is_refused_naming_the_problem(setup: dict[str, Any]) -> None:
    good = calibration_records(setup["probe"])[:3]
    no_score = [good[0], {k: v for k, v in good[1].items() if k != "score"}]
    with pytest.raises(ValueError, match=r"calibration\[1\]: missing field\(s\): score"):
        _policy(setup, calibration=no_score)
    with pytest.raises(ValueError, match=r"calibration\[2\]: score must be a number in \[0, 1\], not 1.5"):
        _policy(setup, calibration=[*good[:2], {**good[2], "score": 1.5}])
    with pytest.raises(ValueError, match=r"calibration\[0\]: unknown field\(s\): scores"):
        _policy(setup, calibration=[{**good[0], "scores": 1.0}])
    with pytest.raises(ValueError, match="non-empty list"):
        _policy(setup, calibration=[])
    # A domain outside the known ones is kept: it counts in no domain's statistics.
    policy = _policy(setup, calibration=[{**record, "domain": "poetry"} for record in good])
    assert len(policy.loaded.context.infos) == len(setup["probe"].pairs)
