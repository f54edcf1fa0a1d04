"""The learned policy's agreement cascade, decided node by node (`learning.cascade`, live).

With a gate (benchmark -> (which ranked pair gives the second opinion, which escalation)),
an answered node is reviewed by the cascade instead of the reliability head: the node
calls the policy's first pair at λ; where the gate is on for its benchmark, a second
opinion; if the two answers differ (or the first has no comparable form), the escalation
pair; then it accepts the answer the cascade keeps. `learning.cascade.run_cascade` is the
one rule: here its answers come from the node's attempts, and a pair it needs that has not
been called yet is the next call.

The pairs are ranked as `learning.cascade.plan_cascade` ranks them: the first step's logits
at λ over the node's admissible pairs (none called yet), the first at λ = 0, and the pair
of highest per-item accuracy estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestrator.core.envelope import TRANSIENT_ERRORS
from orchestrator.core.protocol import Accept, Action, NodeView, Observation, PairRef, Solve
from orchestrator.learning.cascade import CascadePlan, Choice, run_cascade
from orchestrator.learning.responses import answer_key
from orchestrator.policies.learned_episodes import fresh_request, plan_cascades

if TYPE_CHECKING:
    from orchestrator.policies.learned import LearnedPolicy

Gate = Mapping[str, Choice]  # benchmark -> (second opinion 1..3, 0 = none; escalation 0/1)


class _Needs(Exception):
    """The cascade needs the answer of a pair not called yet."""

    def __init__(self, column: int) -> None:
        self.column = column


def plan_node(
    policy: LearnedPolicy, node: NodeView, observation: Observation
) -> tuple[CascadePlan, list[PairRef | None]]:
    """The node's cascade plan over its admissible pairs, and each column's pair (as
    `LearnedPolicy.act_many` made it, where it did)."""
    prepared = policy._prepared.get((id(observation), node.key))
    if prepared is not None and prepared.cascade is not None:
        return prepared.cascade
    return plan_cascades(policy, [fresh_request(policy, node, observation)])[(id(observation), node.key)]


def review(policy: LearnedPolicy, node: NodeView, observation: Observation, gate: Gate) -> Action | None:
    """The node's next step in its cascade: a call, or accepting the answer it keeps
    (None: the cascade cannot go on here, so the policy's plain review decides)."""
    last = node.last_attempt
    if last is not None and last.error_kind in TRANSIENT_ERRORS:
        tries = sum(1 for a in node.attempts if a.pair == last.pair)
        if tries <= policy.config.retries:
            return Solve(node.key, last.pair)
    plan, refs = plan_node(policy, node, observation)
    answered = {a.pair: a for a in node.attempts if a.status == "ok"}  # the latest per pair
    called = {a.pair for a in node.attempts if a.status not in ("queued", "running")}

    def answer(_: int, column: int) -> str | None:
        ref = refs[column]
        if ref is None:
            return None
        if ref not in called:
            raise _Needs(column)
        found = answered.get(ref)
        return answer_key(found.output) if found is not None else None

    choice = gate.get(node.benchmark or observation.benchmark, (0, 0))
    try:
        executed, final = run_cascade(plan, [choice], answer)
    except _Needs as needs:
        return Solve(node.key, refs[needs.column])  # type: ignore[arg-type]  # a needed pair is admissible
    for column in executed[0]:
        ref = refs[column]
        if ref is not None and ref not in called:
            return Solve(node.key, ref)
    kept = answered.get(refs[final[0]])  # type: ignore[arg-type]
    return Accept(node.key, kept.number) if kept is not None else None


def parse_gate(config: Any) -> Gate | bool | None:
    """A cascade gate from config: {benchmark: [second opinion 0..3, escalation 0 or 1]}, or
    true / false / null."""
    if config is None or isinstance(config, bool):
        return config
    if not isinstance(config, Mapping):
        raise ValueError("cascade must be true, false, or map each benchmark to [second opinion, escalation]")
    gate = {}
    for benchmark, choice in config.items():
        try:
            rank, how = (int(value) for value in choice)
        except (TypeError, ValueError):
            rank, how = -1, -1
        if rank not in range(4) or how not in (0, 1):
            raise ValueError(f"cascade[{benchmark!r}]: second opinion is 0..3 and escalation 0 or 1, not {choice!r}")
        gate[str(benchmark)] = (rank, how)
    return gate
