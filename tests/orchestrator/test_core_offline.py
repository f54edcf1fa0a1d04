"""The orchestration core run offline: its decisions are the vectorized evaluation's.

The learned method's training and its fast evaluation play episodes as batched tensors
(`learning.episode.rollout`); a live run plays them through the core, one node state at a
time. Here the same items go both ways, with the same checkpoint and λ, the core's attempts
answered from the recordings (`offline.shell`): the pairs called, in order, and the answer
accepted must be the same.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from orchestrator.composite.build import SAME_DOMAIN, Composite, text_of
from orchestrator.composite.items import items_of
from orchestrator.core.protocol import Action, NodeView, Observation, Solve
from orchestrator.core.state import AttemptState, RunSpec
from orchestrator.learning.context_io import context_from_payload, context_payload
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.method import route_batch
from orchestrator.learning.model import PolicyConfig, PolicyNet, load_checkpoint, save_checkpoint
from orchestrator.offline.shell import route_table, run_offline, table_executor, table_pairs
from orchestrator.policies import make_policy
from orchestrator.policies.default import DefaultConfig, DefaultPolicy
from orchestrator.policies.learned_loading import LearnedPolicyConfig
from tests.orchestrator.batched import route_cascade
from tests.orchestrator.synthetic_outcomes import lookup_embedder, synthetic_table


def _untrained_checkpoint(path: Path) -> None:
    """A seeded, untrained network with the training items' calibration: its episodes call one
    to three pairs (a trained tiny one stops after the first), so second opinions are covered."""
    train, train_emb = synthetic_table(n=160, seed=0)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    extra = {"context": context_payload(make_context(train, train_emb)), "train": {"sft": {"max_steps": 3}}}
    save_checkpoint(path, net, extra=extra)


def test_the_core_decides_as_the_vectorized_episodes(tmp_path: Path) -> None:
    path = tmp_path / "untrained.pt"
    _untrained_checkpoint(path)
    table, emb = synthetic_table(n=40, seed=1)
    net, payload = load_checkpoint(path)
    batch = encode(table, emb, context_from_payload(payload["context"]), with_outcomes=False)
    policy = make_policy("learned", {"checkpoint": str(path), "embedder": lookup_embedder(table, emb)})
    lengths = set()
    for lam in (0.0, 0.05, 1.0):
        vectorized = route_batch(net, batch, table, lam, max_steps=3)
        core, states = route_table(table, policy, lam=lam)
        assert core.executed == vectorized.executed, lam
        assert core.final == vectorized.final, lam
        for i, state in enumerate(states):
            assert state.status == "succeeded" and state.verification["method"] == "recorded_score"
            assert state.verification["score"] == table.score[i, core.final[i]]
            assert state.cost_usd > 0 and state.verification.get("protocol_violations") is None
        if lam < 1.0:  # a 160-item calibration leaves `best` unbound (`episode.binds_best`)
            lengths |= {len(calls) for calls in core.executed}
        else:  # the cheap end's bound holds an item to its one anchor pair
            assert {len(calls) for calls in core.executed} == {1}
    assert lengths == {2, 3}  # second and third opinions, not only first answers


def test_the_cores_agreement_cascade_is_the_batched_one(tmp_path: Path) -> None:
    """Every gate choice (second opinion from the 2nd or 3rd pair, either escalation, none),
    answers that agree and differ, and first answers with nothing to compare."""
    path = tmp_path / "untrained.pt"
    _untrained_checkpoint(path)
    table, emb = synthetic_table(n=60, seed=2)
    choices = {"b0": (1, 0), "b1": (1, 1), "b2": (2, 0), "b3": (2, 1), "b4": (0, 0), "b5": (3, 1)}
    nothing: list[str | None] = [None] * len(table.pairs)  # nothing comparable: escalate at once
    responses = [nothing if i % 7 == 0 else row for i, row in enumerate(table.responses)]
    table = replace(table, benchmarks=[f"b{i % 6}" for i in range(table.n_items)], responses=responses)
    net, payload = load_checkpoint(path)
    batch = encode(table, emb, context_from_payload(payload["context"]), with_outcomes=False)
    config = {"checkpoint": str(path), "embedder": lookup_embedder(table, emb), "cascade": choices}
    shapes = set()
    for lam in (0.01, 0.05, 0.5):  # the cascade's λ: none where a preset binds (λ = 0, from λ = 1)
        policy = make_policy("learned", config | {"cost_preference": lam})
        batched = route_cascade(net, batch, table, lam, choices, steps=3)
        core, states = route_table(table, policy, lam=lam)
        assert core.executed == batched.executed, lam
        assert core.final == batched.final, lam
        assert all(state.status == "succeeded" for state in states)
        shapes |= {(len(calls), calls[-1] == final) for calls, final in zip(core.executed, core.final, strict=True)}
    assert shapes >= {(1, True), (2, True), (2, False), (3, True)}  # kept, agreed, escalated at once, escalated


def test_a_cascade_gate_is_checked() -> None:
    with pytest.raises(ValueError, match="escalation 0 or 1"):
        LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "cascade": {"gsm8k": [1, 2]}})
    with pytest.raises(ValueError, match="escalation 0 or 1"):
        LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "cascade": {"gsm8k": "no"}})
    with pytest.raises(ValueError, match="must be true, false, or map"):
        LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "cascade": [1, 0]})
    gate = LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "cascade": {"gsm8k": [1, 0]}}).cascade
    assert gate == {"gsm8k": (1, 0)}


@pytest.mark.parametrize("weight", [-1, "0.1", True, float("inf")])
def test_a_best_of_cost_weight_is_a_non_negative_number(weight) -> None:
    with pytest.raises(ValueError, match="best_of_cost must be a non-negative number"):
        LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "best_of_cost": weight})
    assert LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt", "best_of_cost": 2}).best_of_cost == 2.0
    assert LearnedPolicyConfig.from_mapping({"checkpoint": "x.pt"}).best_of_cost is None


def test_a_pair_without_a_recording_fails_as_replay_does() -> None:
    table, _ = synthetic_table(n=2, seed=3)
    table.score[0, 1] = np.nan
    executor = table_executor(table)
    pairs = table_pairs(table)
    missing = AttemptState(
        number=1, endpoint_id=pairs[1].ref.endpoint_id, primitive="direct", request={"item_id": "t.0"}
    )
    executor.execute(missing)
    assert missing.status == "error" and missing.error_kind == "no_recording"
    assert "llama-2-70b-chat/direct" in missing.error_message and missing.cost_usd == 0
    found = AttemptState(number=1, endpoint_id=pairs[0].ref.endpoint_id, primitive="direct", request={"item_id": "t.0"})
    executor.execute(found)
    assert found.status == "ok" and found.envelope["output"] == table.responses[0][0]
    assert found.envelope["artifacts"]["recorded_score"] == table.score[0, 0]


def test_a_call_on_a_composite_node_answers_each_part_from_its_recording() -> None:
    table, _ = synthetic_table(n=4, seed=3)
    executor, pairs = table_executor(table), table_pairs(table)
    whole = AttemptState(
        number=1, endpoint_id=pairs[1].ref.endpoint_id, primitive="direct", request={"items": ["t.0", "t.2", "t.3"]}
    )
    executor.execute(whole)
    assert whole.status == "ok"
    assert whole.envelope["output"] == "\n\n".join(
        f"Part {n}: {table.responses[i][1]}" for n, i in enumerate((0, 2, 3), 1)
    )
    artifacts = whole.envelope["artifacts"]
    assert artifacts["part_scores"] == [table.score[i, 1] for i in (0, 2, 3)]
    assert artifacts["recorded_score"] == pytest.approx(np.mean(table.score[[0, 2, 3], 1]))
    assert float(whole.cost_usd) == pytest.approx(table.cost[[0, 2, 3], 1].sum())
    assert whole.envelope["tokens_in"] == 300
    table.score[2, 1] = np.nan  # one part unrecorded: the whole call fails, naming it
    missing = AttemptState(
        number=1, endpoint_id=pairs[1].ref.endpoint_id, primitive="direct", request={"items": ["t.0", "t.2"]}
    )
    table_executor(table).execute(missing)
    assert missing.status == "error" and missing.error_kind == "no_recording" and "'t.2'" in missing.error_message


class _SolvesNestedPartsWhole(DefaultPolicy):
    """Splits the root; solves a nested composite part whole with the second pair."""

    def _act_on(self, node: NodeView, observation: Observation) -> Action | None:
        if node.kind == "subtask" and node.metadata.get("items") and node.status == "ready" and not node.attempts:
            return Solve(node.key, observation.pairs[1].ref)
        return super()._act_on(node, observation)


@pytest.mark.parametrize("whole", [False, True])
def test_a_nested_composite_runs_split_or_whole_and_scores_every_item(whole: bool) -> None:
    table, _ = synthetic_table(n=6, seed=4)
    composite = Composite("c", (0, Composite("c.2", (1, 2, 3), SAME_DOMAIN, False), 4), SAME_DOMAIN, False)
    spec = RunSpec(
        task_text=text_of(composite, table), decomposable=True, task_metadata={"items": items_of(composite, table)}
    )
    policy = _SolvesNestedPartsWhole(DefaultConfig(pairs=((1, "direct"),))) if whole else make_policy("default", {})
    state = run_offline(spec, policy, table_pairs(table), table_executor(table))
    assert state.status == "succeeded"
    nested = state.node("root.part2")
    assert nested is not None and nested.status == "succeeded"
    assert bool(state.children(nested)) is not whole  # split into its items, or solved in one call
    column = 1 if whole else 0
    expected = [table.score[0, 0], *table.score[[1, 2, 3], column], table.score[4, 0]]
    assert state.verification["method"] == "composite" and state.verification["items"] == 5
    assert state.verification["score"] == pytest.approx(np.mean(expected))
