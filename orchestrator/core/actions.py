"""Carrying out a checked action on a `RunState`: queue an attempt, decompose, aggregate,
accept, cancel, replan."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.core.items import item_ids
from orchestrator.core.protocol import (
    Accept,
    Action,
    Aggregate,
    Cancel,
    Decompose,
    Plan,
    Repair,
    Replan,
    Solve,
    plan_to_json,
)
from orchestrator.core.state import AttemptState, NodeState, RunState
from orchestrator.core.tree import TEXT_IN_EVENTS, accept, node_created, set_status

# What a primitive may need besides the prompt (providers.primitives.PrimitiveInput), read from
# the task's metadata for the root and from a recorded part's own for a part.
PRIMITIVE_INPUTS = ("context", "tests", "entry_point", "tools", "candidate", "chat")


def apply(state: RunState, action: Action) -> str | None:
    """Carry out a checked action; return a reason to end the run, if it must end."""
    node = state.node(getattr(action, "node", ""))
    if isinstance(action, Solve | Decompose) and action.note and node is not None:
        _note(state, node, dict(action.note))
    if isinstance(action, Solve | Repair) and node is not None:
        queue_attempt(state, node, action.pair.endpoint_id, action.pair.primitive, repair=isinstance(action, Repair))
    elif isinstance(action, Plan) and node is not None:
        queue_attempt(state, node, action.pair.endpoint_id, "plan")
    elif isinstance(action, Decompose):
        return decompose(state, action)
    elif isinstance(action, Aggregate) and node is not None:
        aggregate(state, node)
    elif isinstance(action, Accept) and node is not None:
        accept(state, node, node.attempts[action.attempt - 1], accepted=True)
    elif isinstance(action, Cancel) and node is not None:
        cancel(state, node, action.reason or "cancelled by the policy")
    elif isinstance(action, Replan) and node is not None:
        replan(state, node, action.feedback)
    return None


def cancel(state: RunState, node: NodeState, reason: str) -> None:
    """The node and everything under it stop: queued attempts are cancelled (never sent), a
    running one is left to finish (its answer is dropped: the node is no longer running)."""
    for each in [node, *state.under(node)]:
        if each.status == "cancelled":
            continue
        for attempt in each.attempts:
            if attempt.status == "queued":
                attempt.status, attempt.error_kind, attempt.error_message = "cancelled", "cancelled", reason
                if attempt.id is not None:
                    state.changes.cancelled.append(attempt)
        set_status(state, each, "cancelled", reason=reason[:TEXT_IN_EVENTS])


def replan(state: RunState, node: NodeState, feedback: str) -> None:
    """Close the node's current decomposition (none of its parts is in flight: `check_action`
    saw to it; the unfinished ones are cancelled, the finished ones stay as they ended) and
    make it ready again for a new round, its plan cleared, with the feedback to heed."""
    for part in state.parts(node):
        if part.status not in ("succeeded", "failed", "skipped", "cancelled"):
            cancel(state, part, f"replanned: {feedback}" if feedback else "replanned")
    replans = int(node.metadata.get("replans", 0)) + 1
    node.plan = None
    node.metadata = {**node.metadata, "replans": replans, "replan_feedback": feedback[:TEXT_IN_EVENTS]}
    node.metadata.pop("plan_failed", None)
    state.touch(node)
    state.emit("node.replanned", key=node.key, feedback=feedback[:TEXT_IN_EVENTS], replans=replans)
    set_status(state, node, "ready")


def _note(state: RunState, node: NodeState, note: dict[str, Any]) -> None:
    """Keep what the policy recorded with its choice (e.g. best-of-N candidates) on the node, and as an event."""
    node.metadata = {**node.metadata, **note}
    state.touch(node)
    state.emit("node.noted", key=node.key, **note)


def inputs(state: RunState, node: NodeState, primitive: str) -> dict[str, Any]:
    source = state.spec.task_metadata if node.kind == "root" else node.metadata
    found = {key: source[key] for key in PRIMITIVE_INPUTS if source.get(key)}
    if primitive == "verify":
        # The answer under review: the node's own, once an attempt has given one.
        answered = [a for a in node.attempts if a.status == "ok" and a.envelope.get("answer")]
        if answered:
            found["candidate"] = answered[-1].envelope.get("output") or answered[-1].envelope["answer"]
    return found


def request(state: RunState, node: NodeState, primitive: str) -> dict[str, Any]:
    """What the worker sends the pair: the prompt, with the answers it depends on, and its inputs."""
    deps = state.dependencies(node)
    prompt = node.text
    if deps and node.kind != "aggregate" and not node.metadata.get("item_id"):
        earlier = "\n".join(f"- {d.text}\n  Answer: {d.answer}" for d in deps)
        prompt = f"Results of earlier subtasks:\n{earlier}\n\nNow: {node.text}"
    elif node.kind == "aggregate":
        answers = "\n".join(f"- {d.text}\n  Answer: {d.answer}" for d in deps)
        parent = state.node(node.parent or "")
        task = parent.text if parent is not None and parent.kind != "root" else state.spec.task_text
        prompt = f"Task:\n{task}\n\nAnswers to its subtasks:\n{answers}\n\nGive the final answer."
    found: dict[str, Any] = {
        "prompt": prompt,
        "benchmark": node.metadata.get("benchmark", state.spec.benchmark),
        **inputs(state, node, primitive),
    }
    if node.metadata.get("item_id"):
        found["item_id"] = node.metadata["item_id"]
    held = state.spec.task_metadata.get("items") if node.kind == "root" else node.metadata.get("items")
    if held and node.kind != "aggregate":
        found["items"] = item_ids(held)  # solved whole: replay answers each part from its recording
    return found


def plan_request(state: RunState, node: NodeState) -> dict[str, Any]:
    """What the planner is asked: the task (the node's text below the root), and after a
    replan, what went wrong with the last plan."""
    found: dict[str, Any] = {"prompt": state.spec.task_text if node.kind == "root" else node.text}
    if node.metadata.get("replan_feedback"):
        found["feedback"] = node.metadata["replan_feedback"]
    return found


def queue_attempt(state: RunState, node: NodeState, endpoint_id: int, primitive: str, *, repair: bool = False) -> None:
    number = len(node.attempts) + 1
    attempt = AttemptState(
        number=number,
        endpoint_id=endpoint_id,
        primitive=primitive,
        request=plan_request(state, node) if primitive == "plan" else request(state, node, primitive),
    )
    node.attempts.append(attempt)
    if primitive != "plan":
        node.endpoint_id, node.primitive = endpoint_id, primitive
    node.status = "running"
    state.touch(node)
    payload = state.emit(
        "attempt.queued", key=node.key, attempt=None, number=number,
        endpoint=endpoint_id, primitive=primitive, repair=repair,
    )  # fmt: skip
    state.changes.new_attempts.append((node, attempt, payload))  # the shell fills in `attempt`, its id


def decompose(state: RunState, action: Decompose) -> str | None:
    """Create the subtasks and their aggregate node; a reason instead if a budget forbids it."""
    spec = state.spec
    parent = state.node(action.node)
    assert parent is not None  # check_action saw it
    total = len(state.nodes) + len(action.subtasks) + 1
    if spec.max_nodes is not None and total > spec.max_nodes:
        return f"budget: decomposing {parent.key} would make {total} nodes; the limit is {spec.max_nodes}"
    if spec.max_depth is not None and parent.depth + 1 > spec.max_depth:
        depth = parent.depth + 1
        return f"budget: decomposing {parent.key} would reach depth {depth}; the limit is {spec.max_depth}"
    parent.status = "running"
    state.touch(parent)
    state.emit("node.decomposed", key=parent.key, subtasks=plan_to_json(action.subtasks))
    depended_on = {dep for sub in action.subtasks for dep in sub.depends_on}
    # After a replan, the new parts belong to a new round, and their keys carry it.
    replans = int(parent.metadata.get("replans", 0))
    suffix = f"_r{replans}" if replans else ""
    created: list[NodeState] = []
    for sub in action.subtasks:
        metadata = dict(sub.metadata) | ({"round": replans} if replans else {})
        if sub.item_id:
            metadata["item_id"] = sub.item_id
        if sub.primitive:
            metadata["suggested_primitive"] = sub.primitive
        created.append(
            NodeState(
                key=f"{parent.key}.{sub.id}{suffix}", kind="subtask", text=sub.text, depth=parent.depth + 1,
                status="pending" if sub.depends_on else "ready", parent=parent.key,
                depends_on=[f"{parent.key}.{d}{suffix}" for d in sub.depends_on], metadata=metadata,
            )
        )  # fmt: skip
    created.append(
        NodeState(
            key=f"{parent.key}.aggregate{suffix}", kind="aggregate",
            text=f"Compose the answer to: {parent.text[:500]}", depth=parent.depth + 1, status="pending",
            parent=parent.key, metadata={"round": replans} if replans else {},
            depends_on=[f"{parent.key}.{sub.id}{suffix}" for sub in action.subtasks if sub.id not in depended_on],
        )
    )  # fmt: skip
    for node in created:
        state.nodes.append(node)
        state.changes.new_nodes.append(node)
        node_created(state, node)
    return None


def part_label(key: str) -> str:
    """A part's id in its plan: its key's last segment, less the round a replan gave it."""
    return re.sub(r"_r\d+$", "", key.rsplit(".", 1)[-1])


def aggregate(state: RunState, node: NodeState) -> None:
    deps = state.dependencies(node)
    node.answer = deps[0].answer if len(deps) == 1 else "\n".join(f"{part_label(d.key)}: {d.answer}" for d in deps)
    set_status(state, node, "succeeded", answer=node.answer[:TEXT_IN_EVENTS], aggregated=len(deps))
