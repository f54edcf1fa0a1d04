"""What a policy sees of a run: the `Observation` of a `RunState`."""

from __future__ import annotations

from datetime import datetime

from orchestrator.core.protocol import AttemptView, Budget, NodeView, Observation, Pair, PairRef, plan_from_json
from orchestrator.core.state import NodeState, RunState


def node_view(node: NodeState, *, domain: str = "", benchmark: str = "") -> NodeView:
    """The node as the policy sees it; `domain` and `benchmark` are the task's, for a node
    that has none of its own (every node but a recorded part)."""
    return NodeView(
        key=node.key,
        kind=node.kind,
        text=node.text,
        status=node.status,
        depth=node.depth,
        parent=node.parent,
        depends_on=tuple(node.depends_on),
        item_id=node.metadata.get("item_id"),
        answer=node.answer or None,
        attempts=tuple(
            AttemptView(
                pair=PairRef(a.endpoint_id, a.primitive),
                status=a.status,
                number=a.number,
                error_kind=a.error_kind or None,
                cost_usd=float(a.cost_usd),
                output=a.envelope.get("output") if a.status == "ok" else None,
            )
            for a in node.attempts
            if a.primitive != "plan"
        ),
        plan=plan_from_json(node.plan) if node.plan else None,
        plan_failed=bool(node.metadata.get("plan_failed")),
        metadata=node.metadata,
        domain=str(node.metadata.get("domain") or domain),
        benchmark=str(node.metadata.get("benchmark") or benchmark),
    )


def task_domain(state: RunState) -> tuple[str, str]:
    """(domain, benchmark) of the run's task: the task's own, else what the recordings of its
    text say (the root's metadata, filled in when the run starts)."""
    root = state.root
    recorded = root.metadata if root is not None else {}
    domain = state.spec.domain or str(recorded.get("recorded_domain", ""))
    return domain, state.spec.benchmark or str(recorded.get("recorded_benchmark", ""))


def budget_left(state: RunState, now: datetime) -> Budget:
    spec = state.spec
    elapsed = (now - state.started_at).total_seconds() if state.started_at else 0.0
    depth = max((node.depth for node in state.nodes), default=0)
    return Budget(
        cost_usd=float(spec.max_cost_usd - state.cost_usd) if spec.max_cost_usd is not None else None,
        nodes=spec.max_nodes - len(state.nodes) if spec.max_nodes is not None else None,
        depth=spec.max_depth - depth if spec.max_depth is not None else None,
        seconds=spec.deadline_s - elapsed if spec.deadline_s is not None else None,
    )


def observe(state: RunState, pairs: tuple[Pair, ...], now: datetime) -> Observation:
    spec = state.spec
    domain, benchmark = task_domain(state)
    return Observation(
        task_text=spec.task_text,
        decomposable=spec.decomposable,
        nodes=tuple(node_view(n, domain=domain, benchmark=benchmark) for n in state.nodes),
        budget_left=budget_left(state, now),
        pairs=pairs,
        cost_preference=spec.cost_preference,
        task_metadata=spec.task_metadata,
        best_of=spec.best_of,
        domain=domain,
        benchmark=benchmark,
    )
