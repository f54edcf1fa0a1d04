"""Composites through the orchestration core: each one a run of a composite task, its parts
answered from the recorded table (`offline.shell`), and the run's tree read back as the plan
it carried out, for `CompositeCosting` to score and cost.

This is what a live run of the same task decides: the policy is the runtime one, the task's
metadata the studio's (`composite.items`), and a node solved whole is one call over every
part, which replay answers part by part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.composite.build import Composite, domain_of, text_of
from orchestrator.composite.items import items_of
from orchestrator.composite.outcome import Decompose, Delegate, Plan, Solve
from orchestrator.core.policy import Policy
from orchestrator.core.state import NodeState, RunSpec, RunState
from orchestrator.offline.shell import run_many, table_executor, table_pairs
from orchestrator.routing.table import OutcomeTable


def route_composites(
    table: OutcomeTable,
    composites: Sequence[Composite],
    policy: Policy,
    *,
    lam: float,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    best_of: int = 1,
) -> tuple[list[Plan], list[RunState]]:
    """Each composite as a run through the core, all in lockstep: the plan it carried out, and
    the run (`best_of` > 1: a request's best-of-N, for a policy with a reward model)."""
    tasks: list[tuple[RunSpec, Mapping[str, Any]]] = [
        (
            RunSpec(
                task_text=text_of(c, table), policy="learned", domain=domain_of(c, table), benchmark="composite",
                decomposable=True, cost_preference=lam, task_metadata={"items": items_of(c, table)}, best_of=best_of,
            ),
            {},
        )
        for c in composites
    ]  # fmt: skip
    states = run_many(tasks, policy, table_pairs(table, prices), table_executor(table))
    plans = []
    for state, c in zip(states, composites, strict=True):
        assert state.root is not None
        plans.append(plan_of(state, state.root, c))
    return plans, states


def calls(node: NodeState) -> tuple[tuple[int, ...], int]:
    """(the columns a node called before the one whose answer it took, that one); -1 where it
    took none."""
    made = [a for a in node.attempts if a.primitive != "plan" and a.status != "cancelled"]
    taken = node.attempts[node.accepted - 1] if node.accepted and node.status == "succeeded" else None
    final = taken.endpoint_id - 1 if taken is not None else -1
    return tuple(a.endpoint_id - 1 for a in made if a is not taken), final


def plan_of(state: RunState, node: NodeState, c: Composite) -> Plan:
    """The plan a run's node carried out for composite `c`: solved whole, or split into its
    parts (each an item's calls, or a nested part's own plan)."""
    children = [n for n in state.parts(node) if n.kind == "subtask"]
    if not children:
        tried, final = calls(node)
        return Delegate(final, tried)
    parts: list[int | Solve | Plan] = []
    for part, child in zip(c.parts, children, strict=True):
        if isinstance(part, Composite):
            parts.append(plan_of(state, child, part))
        else:
            tried, final = calls(child)
            parts.append(Solve(final, tried))
    return Decompose(tuple(parts))
