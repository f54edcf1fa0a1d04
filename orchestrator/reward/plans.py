"""A plan: what OrchRM scores before anything runs.

A plan is a task's decomposition and its pair assignments. As JSON:

    {"decompose": false,
     "nodes": [{"key": "root", "model": "gpt-4o-mini", "primitive": "cot",
                "kind": "root", "depends_on": []}],
     "cost_estimate": 0.00042}

`kind` is "root" (the task answered whole), "subtask" or "aggregate"; `depends_on` names
other nodes' keys. `cost_estimate` (USD) is optional. A recorded-table outcome is the
one-node plan of its (model, primitive) pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NODE_KINDS = ("root", "subtask", "aggregate")
MAX_NODES = 256


class PlanError(ValueError):
    """A plan that breaks the format; the message names the field."""


@dataclass(frozen=True)
class PlanNode:
    key: str
    model: str
    primitive: str
    kind: str = "root"
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    nodes: tuple[PlanNode, ...]
    decompose: bool = False
    cost_estimate: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def single(cls, model: str, primitive: str, *, cost_estimate: float | None = None) -> Plan:
        """The one-node plan: the whole task to one pair."""
        return cls(nodes=(PlanNode(key="root", model=model, primitive=primitive),), cost_estimate=cost_estimate)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The (model, primitive) of every node, in order."""
        return [(node.model, node.primitive) for node in self.nodes]

    def depth(self) -> int:
        """Nodes on the longest dependency chain (1 for a one-node plan)."""
        by_key = {node.key: node for node in self.nodes}
        memo: dict[str, int] = {}

        def level(key: str) -> int:
            if key not in memo:
                memo[key] = 1 + max((level(dep) for dep in by_key[key].depends_on), default=0)
            return memo[key]

        return max((level(node.key) for node in self.nodes), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decompose": self.decompose,
            "nodes": [
                {
                    "key": n.key,
                    "model": n.model,
                    "primitive": n.primitive,
                    "kind": n.kind,
                    "depends_on": list(n.depends_on),
                }
                for n in self.nodes
            ],
            "cost_estimate": self.cost_estimate,
        }


def plan_from_dict(data: Any) -> Plan:
    """Parse and check a plan dict; PlanError names what is wrong (cycles included)."""
    if not isinstance(data, Mapping):
        raise PlanError("a plan must be an object")
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise PlanError("plan.nodes must be a non-empty list")
    if len(raw_nodes) > MAX_NODES:
        raise PlanError(f"plan.nodes has {len(raw_nodes)} nodes; at most {MAX_NODES} are allowed")
    nodes = []
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, Mapping):
            raise PlanError(f"plan.nodes[{i}] must be an object")
        for name in ("key", "model", "primitive"):
            if not isinstance(raw.get(name), str) or not raw[name]:
                raise PlanError(f"plan.nodes[{i}].{name} must be a non-empty string")
        kind = raw.get("kind", "root" if len(raw_nodes) == 1 else "subtask")
        if kind not in NODE_KINDS:
            raise PlanError(f"plan.nodes[{i}].kind must be one of {', '.join(NODE_KINDS)}, not {kind!r}")
        deps = raw.get("depends_on", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise PlanError(f"plan.nodes[{i}].depends_on must be a list of node keys")
        nodes.append(PlanNode(raw["key"], raw["model"], raw["primitive"], kind, tuple(deps)))
    keys = [node.key for node in nodes]
    if len(set(keys)) != len(keys):
        raise PlanError("plan node keys must be unique")
    for node in nodes:
        for dep in node.depends_on:
            if dep not in keys:
                raise PlanError(f"plan node {node.key!r} depends on unknown node {dep!r}")
    _check_acyclic(nodes)
    decompose = data.get("decompose", len(nodes) > 1)
    if not isinstance(decompose, bool):
        raise PlanError("plan.decompose must be true or false")
    cost = data.get("cost_estimate")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0):
        raise PlanError("plan.cost_estimate must be a non-negative number or null")
    return Plan(nodes=tuple(nodes), decompose=decompose, cost_estimate=None if cost is None else float(cost))


def _check_acyclic(nodes: list[PlanNode]) -> None:
    deps = {node.key: set(node.depends_on) for node in nodes}
    done: set[str] = set()
    while len(done) < len(deps):
        ready = [key for key, d in deps.items() if key not in done and d <= done]
        if not ready:
            raise PlanError("plan dependencies form a cycle")
        done.update(ready)
