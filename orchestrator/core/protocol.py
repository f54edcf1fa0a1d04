"""The Agent-as-Tool action protocol: what a policy observes and what it may do.

A policy reads an `Observation` (the task, the tree so far with result summaries, the
budget left, and the admissible pairs as feature vectors) and returns one `Action`.
The engine validates every action with `check_action`; a malformed one, or one naming a
pair that is not admissible, is a counted protocol violation and is never executed.

Actions, beyond the first five (Solve, Decompose, Aggregate, Repair, Finish):
`Plan(node, pair)` asks the planner (itself a model call, run by a worker like any
attempt) for a subtask DAG, which a later `Decompose` applies; `Wait()` ends the policy's
turn while attempts are in flight. For recovery: `Cancel(node)` stops a node and its
subtree (what is queued is never sent; a call already running is left to finish and its
answer dropped), and `Replan(node, feedback)` discards a decomposed node's parts, once none
of them is in flight, and makes it ready again, with the feedback a new plan should heed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# `answered`: an attempt gave an answer that a policy reviewing answers has not accepted yet
# (it may accept one of the node's answers, or ask another pair for a second opinion).
NodeStatus = Literal["pending", "ready", "running", "answered", "succeeded", "failed", "skipped", "cancelled"]
NodeKind = Literal["root", "subtask", "aggregate"]


@dataclass(frozen=True)
class PairRef:
    """A (model endpoint, primitive) pair, by endpoint id and primitive name."""

    endpoint_id: int
    primitive: str


@dataclass(frozen=True)
class Pair:
    """An admissible pair as the policy sees it: descriptors and a feature vector."""

    ref: PairRef
    model: str
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None
    context_window: int | None = None
    descriptors: Mapping[str, Any] = field(default_factory=dict)
    features: tuple[float, ...] = ()


@dataclass(frozen=True)
class AttemptView:
    pair: PairRef
    status: str  # queued | running | ok | error | timeout
    error_kind: str | None = None
    cost_usd: float = 0.0
    output: str | None = None  # what the pair answered (an ok attempt's output)
    number: int = 0  # the attempt's number on its node (1, 2, ...)


@dataclass(frozen=True)
class NodeView:
    key: str
    kind: NodeKind
    text: str
    status: NodeStatus
    depth: int
    parent: str | None = None
    depends_on: tuple[str, ...] = ()
    item_id: str | None = None
    answer: str | None = None
    attempts: tuple[AttemptView, ...] = ()
    plan: tuple[SubtaskSpec, ...] | None = None  # a plan the planner returned for this node
    plan_failed: bool = False  # the planner could not produce a valid plan
    metadata: Mapping[str, Any] = field(default_factory=dict)
    domain: str = ""  # the node's own (a recorded part's), else the task's; "" when unknown
    benchmark: str = ""

    @property
    def last_attempt(self) -> AttemptView | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def in_flight(self) -> bool:
        return any(a.status in {"queued", "running"} for a in self.attempts)


@dataclass(frozen=True)
class Budget:
    """What the run may still spend; None means unlimited."""

    cost_usd: float | None = None
    nodes: int | None = None
    depth: int | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Observation:
    task_text: str
    decomposable: bool
    nodes: tuple[NodeView, ...]
    budget_left: Budget
    pairs: tuple[Pair, ...]
    cost_preference: float | None = None
    task_metadata: Mapping[str, Any] = field(default_factory=dict)
    best_of: int = 1  # candidate root plans a reward model chooses among (1: no best-of-N)
    domain: str = ""  # the task's domain (orchestrator.outcomes.DOMAINS), "" when unknown
    benchmark: str = ""  # the task's benchmark, "" when none

    def node(self, key: str) -> NodeView | None:
        return next((node for node in self.nodes if node.key == key), None)

    @property
    def root(self) -> NodeView:
        return next(node for node in self.nodes if node.kind == "root")

    def admissible(self, ref: PairRef) -> bool:
        return any(pair.ref == ref for pair in self.pairs)

    def parts(self, key: str) -> list[NodeView]:
        """The node's children in its current decomposition (a replan starts a new round; the
        earlier rounds' parts stay in the tree as they ended)."""
        node = self.node(key)
        round_ = int(node.metadata.get("replans", 0)) if node is not None else 0
        return [n for n in self.nodes if n.parent == key and int(n.metadata.get("round", 0)) == round_]

    def under(self, key: str) -> list[NodeView]:
        """Every node below `key`, depth first."""
        out: list[NodeView] = []
        for child in (n for n in self.nodes if n.parent == key):
            out += [child, *self.under(child.key)]
        return out


@dataclass(frozen=True)
class SubtaskSpec:
    id: str
    text: str
    depends_on: tuple[str, ...] = ()
    primitive: str | None = None  # the planner's suggestion
    item_id: str | None = None  # a recorded item (composite tasks)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Solve:
    node: str
    pair: PairRef
    # What the policy records on the node with this choice (e.g. its best-of-N candidates);
    # the engine merges it into the node's metadata. Not part of the action's identity.
    note: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Repair:
    """Solve a node again with another pair after a failure."""

    node: str
    pair: PairRef


@dataclass(frozen=True)
class Plan:
    node: str
    pair: PairRef


@dataclass(frozen=True)
class Decompose:
    """Split a node into subtasks (a DAG by `depends_on`), joined by an aggregate node."""

    node: str
    subtasks: tuple[SubtaskSpec, ...]
    # What the policy records on the node with this choice (e.g. its best-of-N candidate plans).
    note: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Aggregate:
    """Compose an aggregate node's answer from its dependencies' answers (no model call)."""

    node: str


@dataclass(frozen=True)
class Accept:
    """Take the answer of the node's attempt number `attempt` (an ok one) as the node's answer."""

    node: str
    attempt: int


@dataclass(frozen=True)
class Cancel:
    """Stop a node and everything under it: its queued attempts are never sent, a running
    one is left to finish and its answer dropped; dependents are skipped."""

    node: str
    reason: str = ""


@dataclass(frozen=True)
class Replan:
    """Discard a decomposed node's parts (none may be in flight: cancel them first) and make
    it ready again, to be planned anew with `feedback` or solved directly."""

    node: str
    feedback: str = ""


@dataclass(frozen=True)
class Finish:
    answer: str


@dataclass(frozen=True)
class Wait:
    pass


Action = Solve | Repair | Plan | Decompose | Aggregate | Accept | Cancel | Replan | Finish | Wait


class ProtocolViolation(ValueError):
    """An action that is malformed or not allowed here; it is counted and not executed."""


def check_action(action: object, observation: Observation, *, max_subtasks: int = 32) -> Action:
    """Return the action if it is well formed and allowed, else raise ProtocolViolation."""
    if isinstance(action, Wait | Finish):
        if isinstance(action, Finish) and not isinstance(action.answer, str):
            raise ProtocolViolation("finish needs a text answer")
        return action
    if not isinstance(action, Solve | Repair | Plan | Decompose | Aggregate | Accept | Cancel | Replan):
        raise ProtocolViolation(f"{type(action).__name__} is not an action")
    node = observation.node(action.node)
    if node is None:
        raise ProtocolViolation(f"there is no node {action.node!r}")
    if isinstance(action, Cancel):
        if node.kind == "root":
            raise ProtocolViolation("the root is not cancelled: finish the run, or replan it")
        if node.status in {"succeeded", "failed", "skipped", "cancelled"}:
            raise ProtocolViolation(f"node {node.key!r} is {node.status}; there is nothing to cancel")
        return action
    if isinstance(action, Replan):
        parts = observation.parts(node.key)
        if node.kind == "aggregate" or node.status != "running" or not parts:
            raise ProtocolViolation(f"node {node.key!r} is not decomposed: there is nothing to replan")
        busy = [n.key for p in parts for n in (p, *observation.under(p.key)) if n.in_flight and n.status != "cancelled"]
        if busy:
            raise ProtocolViolation(f"node {node.key!r} has parts in flight ({', '.join(busy)}): cancel them first")
        return action
    if isinstance(action, Accept):
        if node.status != "answered":
            raise ProtocolViolation(f"node {node.key!r} is {node.status}; only an answered node accepts an answer")
        if not any(a.number == action.attempt and a.status == "ok" for a in node.attempts):
            raise ProtocolViolation(f"node {node.key!r} has no ok attempt number {action.attempt}")
        return action
    if isinstance(action, Solve | Repair | Plan):
        if not observation.admissible(action.pair):
            raise ProtocolViolation(f"pair {action.pair} is not admissible")
        if node.in_flight:
            raise ProtocolViolation(f"node {node.key!r} already has an attempt in flight")
        # A second opinion on an answered node is a Solve with another pair.
        if node.status != "ready" and not (node.status == "answered" and isinstance(action, Solve)):
            raise ProtocolViolation(f"node {node.key!r} is {node.status}; it cannot be solved now")
        if isinstance(action, Plan) and node.kind == "aggregate":
            raise ProtocolViolation("an aggregate node is not planned")
        if isinstance(action, Repair) and not node.attempts:
            raise ProtocolViolation(f"node {node.key!r} has no failed attempt to repair")
        return action
    if isinstance(action, Aggregate):
        if node.kind != "aggregate" or node.status != "ready":
            raise ProtocolViolation(f"node {node.key!r} is not an aggregate node ready to aggregate")
        return action
    check_subtasks(action.subtasks, max_subtasks=max_subtasks)
    if node.status != "ready" or node.kind == "aggregate":
        raise ProtocolViolation(f"node {node.key!r} cannot be decomposed now")
    return action


def check_subtasks(subtasks: tuple[SubtaskSpec, ...], *, max_subtasks: int) -> None:
    """Ids unique, dependencies known, no cycle, size bounded."""
    if not subtasks:
        raise ProtocolViolation("a decomposition needs at least one subtask")
    if len(subtasks) > max_subtasks:
        raise ProtocolViolation(f"a decomposition has at most {max_subtasks} subtasks, not {len(subtasks)}")
    ids = [spec.id for spec in subtasks]
    if len(set(ids)) != len(ids):
        raise ProtocolViolation("subtask ids must be unique")
    known = set(ids)
    for spec in subtasks:
        if not spec.text.strip():
            raise ProtocolViolation(f"subtask {spec.id!r} has no text")
        unknown = set(spec.depends_on) - known
        if unknown:
            raise ProtocolViolation(f"subtask {spec.id!r} depends on unknown {sorted(unknown)}")
        if spec.id in spec.depends_on:
            raise ProtocolViolation(f"subtask {spec.id!r} depends on itself")
    if topological_order(subtasks) is None:
        raise ProtocolViolation("the subtasks' dependencies form a cycle")


def topological_order(subtasks: tuple[SubtaskSpec, ...]) -> list[str] | None:
    """Kahn's algorithm; None when there is a cycle."""
    remaining = {spec.id: set(spec.depends_on) for spec in subtasks}
    order: list[str] = []
    while remaining:
        free = sorted(key for key, deps in remaining.items() if not deps)
        if not free:
            return None
        for key in free:
            order.append(key)
            del remaining[key]
        for deps in remaining.values():
            deps.difference_update(free)
    return order


def plan_to_json(specs: tuple[SubtaskSpec, ...]) -> list[dict[str, Any]]:
    return [{"id": s.id, "text": s.text, "depends_on": list(s.depends_on), "primitive": s.primitive} for s in specs]


def plan_from_json(data: list[dict[str, Any]]) -> tuple[SubtaskSpec, ...]:
    return tuple(
        SubtaskSpec(
            id=str(d["id"]),
            text=str(d["text"]),
            depends_on=tuple(d.get("depends_on", ())),
            primitive=d.get("primitive"),
        )
        for d in data
    )
