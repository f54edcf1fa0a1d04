"""Runs stepped in lockstep (`core.step.step_many`, `offline.shell.run_many`) end as each would alone.

The learned policy decides many runs with one batched pass (`LearnedPolicy.act_many`); a
policy without `act_many` is asked run by run; a policy that fails fails only the runs it
failed on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from orchestrator.composite.build import SAME_DOMAIN, Composite, text_of
from orchestrator.composite.items import items_of
from orchestrator.core.protocol import Action, Observation
from orchestrator.core.state import RunSpec, RunState
from orchestrator.core.step import recorded_metadata
from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import make_context
from orchestrator.learning.model import PolicyConfig, PolicyNet, save_checkpoint
from orchestrator.offline.shell import run_many, run_offline, table_executor, table_pairs
from orchestrator.policies import make_policy
from orchestrator.policies.default import DefaultConfig, DefaultPolicy
from orchestrator.policies.learned import LearnedPolicy
from orchestrator.routing.table import OutcomeTable
from tests.orchestrator.synthetic_outcomes import lookup_embedder, synthetic_table


def _checkpoint(path: Path) -> None:
    """An untrained seeded network: its episodes call one to three pairs, so reviews and second
    opinions are among the decisions."""
    train, train_emb = synthetic_table(n=160, seed=0)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    extra = {"context": context_payload(make_context(train, train_emb)), "train": {"sft": {"max_steps": 3}}}
    save_checkpoint(path, net, extra=extra)


def _tasks(table: OutcomeTable, lams: list[float]) -> list[tuple[RunSpec, dict]]:
    """Each item as a task, at the λ given for it (runs of one lockstep need not share one)."""
    tasks = []
    for i, item_id in enumerate(table.item_ids):
        recorded = [table.pairs[j] for j in np.flatnonzero(~np.isnan(table.score[i]))]
        spec = RunSpec(
            task_text=table.prompts[i], policy="learned", domain=table.domains[i], benchmark=table.benchmarks[i],
            cost_preference=lams[i % len(lams)],
        )  # fmt: skip
        tasks.append((spec, recorded_metadata(item_id, recorded, table.domains[i], table.benchmarks[i])))
    return tasks


def _trace(state: RunState) -> tuple:
    """What a run did: its end, answer, cost, and every node's attempts in order."""
    attempts = tuple(
        (node.key, node.status, tuple((a.endpoint_id, a.primitive, a.status) for a in node.attempts))
        for node in state.nodes
    )
    return state.status, state.end_reason, state.final_answer, state.cost_usd, attempts


@pytest.mark.parametrize("cascade", [False, True])
def test_lockstep_runs_decide_as_each_run_alone(tmp_path: Path, cascade: bool) -> None:
    """With and without the agreement cascade's review (its plans made in the batched pass too)."""
    path = tmp_path / "untrained.pt"
    _checkpoint(path)
    table, emb = synthetic_table(n=48, seed=1)
    table.score[::5, 0] = np.nan  # no recording of the first pair here: its call fails, a repair follows
    table.score[3::7, 2] = np.nan
    composite = Composite("c", (0, Composite("c.2", (1, 2), SAME_DOMAIN, False), 4), SAME_DOMAIN, False)
    whole = RunSpec(
        task_text=text_of(composite, table), decomposable=True, task_metadata={"items": items_of(composite, table)},
        cost_preference=0.05,
    )  # fmt: skip
    tasks = [*_tasks(table, [0.01, 0.05, 0.3] if cascade else [0.0, 0.05, 0.3, 1.0]), (whole, {})]
    config = {"checkpoint": str(path), "embedder": lookup_embedder(table, emb)}
    if cascade:
        config["cascade"] = {"synthetic": (2, 1)}  # a second opinion; where it differs, an escalation
    policy = make_policy("learned", config)
    assert isinstance(policy, LearnedPolicy)
    calls = []
    act_many = policy.act_many

    def counted(observations: Sequence[Observation]) -> list[Action]:
        calls.append(len(observations))
        return act_many(observations)

    policy.act_many = counted  # type: ignore[method-assign]
    pairs, executor = table_pairs(table), table_executor(table)
    together = run_many(tasks, policy, pairs, executor)
    assert calls and max(calls) == len(tasks)  # the first round asks for every run at once
    alone = [run_offline(spec, policy, pairs, executor, root_metadata=metadata) for spec, metadata in tasks]
    assert [_trace(state) for state in together] == [_trace(state) for state in alone]
    lengths = {len(state.root.attempts) for state in together[:-1] if state.root is not None}
    assert lengths >= ({2, 3} if cascade else {1, 2, 3})  # first answers, second opinions, repairs
    assert all(state.status == "succeeded" for state in together), [s.end_reason for s in together]


class _Plain(DefaultPolicy):
    """The default policy with a count of its `act` calls: it has no `act_many`."""

    def __init__(self) -> None:
        super().__init__(DefaultConfig())
        self.acts = 0

    def act(self, observation: Observation) -> Action:
        self.acts += 1
        if "boom" in observation.task_text:
            raise RuntimeError("cannot decide this one")
        return super().act(observation)


def test_a_policy_without_act_many_is_asked_run_by_run_and_fails_only_its_own_run() -> None:
    table, _ = synthetic_table(n=6, seed=2)
    tasks = _tasks(table, [0.1])
    broken = RunSpec(task_text="boom: the policy fails here", policy="plain")
    policy = _Plain()
    states = run_many([*tasks, (broken, {})], policy, table_pairs(table), table_executor(table))
    assert [state.status for state in states] == ["succeeded"] * len(tasks) + ["failed"]
    assert states[-1].end_reason == "the policy 'plain' failed: RuntimeError: cannot decide this one"
    alone = [
        run_offline(spec, _Plain(), table_pairs(table), table_executor(table), root_metadata=m) for spec, m in tasks
    ]
    assert [_trace(state) for state in states[:-1]] == [_trace(state) for state in alone]
    assert policy.acts >= 2 * len(tasks)  # each run asked once to solve, once to finish


class _FailsTogether(_Plain):
    """An `act_many` that fails: the runs are then asked one by one."""

    def act_many(self, observations: list[Observation]) -> list[Action]:
        raise RuntimeError("no batched pass today")


def test_an_act_many_that_fails_falls_back_to_act() -> None:
    table, _ = synthetic_table(n=4, seed=3)
    tasks = _tasks(table, [0.1])
    states = run_many(tasks, _FailsTogether(), table_pairs(table), table_executor(table))
    assert [state.status for state in states] == ["succeeded"] * len(tasks)
