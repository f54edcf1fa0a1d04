"""Folding finished attempts into nodes, and the DAG's own moves: dependents made ready or
skipped, decomposed nodes closed by their aggregate."""

from __future__ import annotations

from typing import Any

from orchestrator.core.envelope import ERROR_CAUSES
from orchestrator.core.protocol import NodeStatus
from orchestrator.core.state import DONE_BADLY, AttemptState, NodeState, RunState

MAX_ATTEMPTS_PER_NODE = 4
TEXT_IN_EVENTS = 2000


def set_status(state: RunState, node: NodeState, status: NodeStatus, **payload: Any) -> None:
    node.status = status
    state.touch(node)
    state.emit(f"node.{status}", key=node.key, **payload)


def node_created(state: RunState, node: NodeState) -> None:
    state.emit(
        "node.created", key=node.key, kind=node.kind, text=node.text[:TEXT_IN_EVENTS], depth=node.depth,
        parent=node.parent, depends_on=list(node.depends_on), status=node.status,
        item_id=node.metadata.get("item_id"),
        **({"round": node.metadata["round"]} if node.metadata.get("round") else {}),
    )  # fmt: skip


def absorb(state: RunState, *, reviews: bool) -> None:
    """Fold finished attempts into their nodes. With a policy that `reviews` answers, an
    answer leaves its node `answered` (the policy accepts one, or asks for a second
    opinion); else the node succeeds with it."""
    for node in state.nodes:
        if node.status != "running" or not node.attempts or node.in_flight or state.parts(node):
            continue  # a decomposed node waits on its parts, not on its (planning) attempt
        last = node.attempts[-1]
        if last.primitive == "plan":
            _absorb_plan(state, node, last)
        elif last.status == "ok" and reviews:
            node.answer = last.envelope.get("answer") or ""  # provisional, until one is accepted
            set_status(state, node, "answered", answer=node.answer[:TEXT_IN_EVENTS], attempt=last.number)
        elif last.status == "ok":
            accept(state, node, last)
        elif last.status != "cancelled":
            _absorb_failure(state, node, last, reviews=reviews)


def accept(state: RunState, node: NodeState, attempt: AttemptState, **payload: Any) -> None:
    """The node succeeds with `attempt`'s answer."""
    envelope = attempt.envelope
    node.answer, node.output = envelope.get("answer") or "", envelope.get("output") or ""
    artifacts = envelope.get("artifacts") or {}
    recorded = artifacts.get("recorded_score")
    node.verification = {"recorded_score": recorded} if recorded is not None else {}
    if artifacts.get("part_scores") is not None:  # one call answered several recorded parts
        node.verification["part_scores"] = list(artifacts["part_scores"])
    node.accepted = attempt.number
    set_status(state, node, "succeeded", answer=node.answer[:TEXT_IN_EVENTS], attempt=attempt.number, **payload)


def _absorb_plan(state: RunState, node: NodeState, attempt: AttemptState) -> None:
    """A planner's answer: the node's plan, or (invalid twice, or the call failed) a mark that
    makes the policy solve the node whole. Each outcome is counted on the run, under
    `verification.plans`: `parsed` (the first reply was a valid plan), `repaired` (valid after
    the repair prompt), `fell_back` (no plan)."""
    repaired = bool((attempt.envelope.get("artifacts") or {}).get("repaired"))
    outcome = "fell_back" if attempt.status != "ok" else "repaired" if repaired else "parsed"
    plans = dict(state.verification.get("plans") or {})
    plans[outcome] = int(plans.get(outcome, 0)) + 1
    state.verification = {**state.verification, "plans": plans}
    state.changes.run_fields.add("verification")
    if attempt.status == "ok":
        node.plan = (attempt.envelope.get("artifacts") or {}).get("plan")
        set_status(state, node, "ready", planned=len(node.plan or []))
    else:
        node.metadata = {**node.metadata, "plan_failed": True}
        set_status(state, node, "ready", plan_failed=attempt.error_message or attempt.error_kind)


def _absorb_failure(state: RunState, node: NodeState, attempt: AttemptState, *, reviews: bool) -> None:
    tries = sum(1 for a in node.attempts if a.primitive != "plan")
    kind = attempt.error_kind or attempt.status
    cause = ERROR_CAUSES.get(kind)  # in words, then the kind, then the provider's own message
    reason = f"{cause} ({kind}): {attempt.error_message}" if cause else f"{kind}: {attempt.error_message}"
    reason = reason.strip(": ")
    if reviews and any(a.status == "ok" for a in node.attempts):
        # A second opinion failed; the answers in hand stay for the policy to accept.
        set_status(state, node, "answered", after_failure=reason[:TEXT_IN_EVENTS], attempts=tries)
    elif tries >= MAX_ATTEMPTS_PER_NODE:
        node.output = f"Gave up after {tries} attempts; the last: {reason}"
        set_status(state, node, "failed", reason=node.output[:TEXT_IN_EVENTS])
    else:
        set_status(state, node, "ready", after_failure=reason[:TEXT_IN_EVENTS], attempts=tries)


def propagate(state: RunState) -> None:
    """Make dependents ready (or skip them), and close decomposed nodes; until nothing changes."""
    changed = True
    while changed:
        changed = False
        by_key = {node.key: node for node in state.nodes}
        for node in state.nodes:
            if node.status == "pending":
                deps = [by_key[key] for key in node.depends_on]
                bad = next((d for d in deps if d.status in DONE_BADLY), None)
                if bad is not None:
                    set_status(state, node, "skipped", reason=f"dependency {bad.key} {bad.status}")
                    changed = True
                elif all(d.status == "succeeded" for d in deps):
                    set_status(state, node, "ready")
                    changed = True
            elif node.status == "running" and not node.in_flight:
                # A part that failed leaves its node running: the policy repairs or replans it
                # (the run ends failed only if it does neither).
                aggregate = next((c for c in state.parts(node) if c.kind == "aggregate"), None)
                if aggregate is not None and aggregate.status == "succeeded":
                    node.answer, node.verification = aggregate.answer, aggregate.verification
                    set_status(state, node, "succeeded", answer=node.answer[:TEXT_IN_EVENTS])
                    changed = True
