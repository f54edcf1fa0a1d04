"""A run's state as plain data: what the orchestration core reads and changes.

A shell builds a `RunState` (the live one from the run's rows under its lock, the offline
one in memory), the core (`orchestrator.core.step`) changes it, and the shell writes what
changed: `Changes` lists it, so a shell never compares the state before and after.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from orchestrator.core.protocol import NodeKind, NodeStatus

IN_FLIGHT = frozenset({"queued", "running"})
DONE_BADLY = frozenset({"failed", "skipped", "cancelled"})
RUN_ENDED = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class RunSpec:
    """What a run was asked to do: its task and limits. It does not change during the run."""

    task_text: str
    policy: str = "default"
    pool: int | None = None
    task_metadata: dict[str, Any] = field(default_factory=dict)
    domain: str = ""
    benchmark: str = ""
    checker: str = ""
    has_gold_answer: bool = False
    decomposable: bool = False
    cost_preference: float | None = None
    best_of: int = 1
    max_cost_usd: Decimal | None = None
    max_nodes: int | None = None
    max_depth: int | None = None
    deadline_s: float | None = None


@dataclass(eq=False)
class AttemptState:
    """One call of a (model, primitive) pair on a node."""

    number: int
    endpoint_id: int
    primitive: str
    status: str = "queued"
    request: dict[str, Any] = field(default_factory=dict)
    envelope: dict[str, Any] = field(default_factory=dict)
    error_kind: str = ""
    error_message: str = ""
    cost_usd: Decimal = Decimal(0)
    id: int | None = None  # the shell's identity for it (a row id); None until written
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT


@dataclass(eq=False)
class NodeState:
    key: str
    kind: NodeKind
    text: str
    status: NodeStatus
    depth: int = 0
    parent: str | None = None
    depends_on: list[str] = field(default_factory=list)
    answer: str = ""
    output: str = ""
    verification: dict[str, Any] = field(default_factory=dict)
    plan: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    endpoint_id: int | None = None
    primitive: str | None = None  # the pair last called to solve it (a plan attempt is not)
    attempts: list[AttemptState] = field(default_factory=list)
    accepted: int | None = None  # the number of the attempt whose answer it took
    id: int | None = None  # the shell's identity for it (a row id); None until written

    @property
    def in_flight(self) -> bool:
        return any(attempt.in_flight for attempt in self.attempts)


@dataclass
class Changes:
    """What the core changed, in the order it changed it, for the shell to write."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    nodes: dict[str, NodeState] = field(default_factory=dict)  # changed nodes, by key
    new_nodes: list[NodeState] = field(default_factory=list)  # in creation order: a parent first
    new_attempts: list[tuple[NodeState, AttemptState, dict[str, Any]]] = field(default_factory=list)  # and its event
    cancelled: list[AttemptState] = field(default_factory=list)  # attempts it cancelled that were written before
    run_fields: set[str] = field(default_factory=set)  # fields of the run to save
    wake_after_s: float | None = None  # a step is due then even if no attempt comes back (the deadline)
    verify_answer: bool = False  # the final answer waits for a checker that a worker runs


@dataclass
class RunState:
    """A run: its spec, its counters and its tree; `changes` collects what a step changed."""

    spec: RunSpec
    status: str = "pending"
    nodes: list[NodeState] = field(default_factory=list)
    cost_usd: Decimal = Decimal(0)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    end_reason: str = ""
    final_answer: str = ""
    verification: dict[str, Any] = field(default_factory=dict)
    changes: Changes = field(default_factory=Changes)

    def node(self, key: str) -> NodeState | None:
        return next((node for node in self.nodes if node.key == key), None)

    @property
    def root(self) -> NodeState | None:
        return self.node("root")

    def children(self, node: NodeState) -> list[NodeState]:
        return [n for n in self.nodes if n.parent == node.key]

    def parts(self, node: NodeState) -> list[NodeState]:
        """The node's children in its current decomposition: a replan starts a new round, and
        the earlier rounds' parts stay in the tree as they ended (or cancelled)."""
        round_ = int(node.metadata.get("replans", 0))
        return [n for n in self.children(node) if int(n.metadata.get("round", 0)) == round_]

    def under(self, node: NodeState) -> list[NodeState]:
        """Every node below `node`, depth first."""
        out: list[NodeState] = []
        for child in self.children(node):
            out += [child, *self.under(child)]
        return out

    def dependencies(self, node: NodeState) -> list[NodeState]:
        by_key = {n.key: n for n in self.nodes}
        return [by_key[key] for key in node.depends_on]

    def attempts(self) -> Iterator[AttemptState]:
        for node in self.nodes:
            yield from node.attempts

    @property
    def in_flight(self) -> bool:
        """An attempt in flight whose answer still counts (a cancelled node's is dropped)."""
        return any(a.in_flight for node in self.nodes if node.status != "cancelled" for a in node.attempts)

    def emit(self, type: str, **payload: Any) -> dict[str, Any]:
        """Record an event; the shell writes the events in order when the step ends."""
        self.changes.events.append((type, payload))
        return payload

    def touch(self, node: NodeState) -> None:
        """Mark a written node as changed (a new one is written whole, as it ends the step)."""
        if node.id is not None:
            self.changes.nodes[node.key] = node

    def take_changes(self) -> Changes:
        changes, self.changes = self.changes, Changes()
        return changes
