"""Adapt a run's rows into the orchestrator's plain Observation (no Django beyond here)."""

from __future__ import annotations

from django.utils import timezone

from orchestrator.planner import plan_from_json
from orchestrator.protocol import AttemptView, Budget, NodeView, Observation, Pair, PairRef
from studio.models import Admissibility, Attempt, Node, Run


def _float(value: object) -> float | None:
    return float(value) if value is not None else None  # type: ignore[arg-type]


def admissible_pairs(run: Run) -> tuple[Pair, ...]:
    rows = (
        Admissibility.objects.filter(endpoint__pool_id=run.pool_id, allowed=True, endpoint__enabled=True)
        .select_related("endpoint", "primitive")
        .order_by("endpoint_id", "primitive__name")
    )
    return tuple(
        Pair(
            ref=PairRef(row.endpoint_id, row.primitive.name),
            model=row.endpoint.model,
            input_cost_per_mtok=_float(row.endpoint.input_cost_per_mtok),
            output_cost_per_mtok=_float(row.endpoint.output_cost_per_mtok),
            context_window=row.endpoint.context_window,
            descriptors=row.endpoint.descriptors,
        )
        for row in rows
    )


def node_view(
    node: Node, attempts: list[Attempt], keys: dict[int, str], deps: list[int], *, domain: str = "", benchmark: str = ""
) -> NodeView:
    """The node as the policy sees it; `domain` and `benchmark` are the task's, for a node
    that has none of its own (every node but a recorded part)."""
    return NodeView(
        key=node.key,
        kind=node.kind,  # type: ignore[arg-type]
        text=node.text,
        status=node.status,  # type: ignore[arg-type]
        depth=node.depth,
        parent=keys.get(node.parent_id) if node.parent_id else None,
        depends_on=tuple(keys[d] for d in deps),
        item_id=node.metadata.get("item_id"),
        answer=node.answer or None,
        attempts=tuple(
            AttemptView(
                pair=PairRef(a.endpoint_id, a.primitive.name),
                status=a.status,
                number=a.number,
                error_kind=a.error_kind or None,
                cost_usd=float(a.cost_usd),
                output=a.envelope.get("output") if a.status == "ok" else None,
            )
            for a in attempts
            if a.primitive.name != "plan"
        ),
        plan=plan_from_json(node.plan) if node.plan else None,
        plan_failed=bool(node.metadata.get("plan_failed")),
        metadata=node.metadata,
        domain=str(node.metadata.get("domain") or domain),
        benchmark=str(node.metadata.get("benchmark") or benchmark),
    )


def task_domain(run: Run, nodes: list[Node]) -> tuple[str, str]:
    """(domain, benchmark) of the run's task: the task's own, else what the recordings of its
    text say (the root's metadata: `engine._recorded`)."""
    root = next((node for node in nodes if node.kind == "root"), None)
    recorded = root.metadata if root is not None else {}
    domain = run.task.domain or str(recorded.get("recorded_domain", ""))
    return domain, run.task.benchmark or str(recorded.get("recorded_benchmark", ""))


def budget_left(run: Run, node_count: int, max_depth_used: int) -> Budget:
    elapsed = (timezone.now() - run.started_at).total_seconds() if run.started_at else 0.0
    return Budget(
        cost_usd=float(run.max_cost_usd - run.cost_usd) if run.max_cost_usd is not None else None,
        nodes=run.max_nodes - node_count if run.max_nodes is not None else None,
        depth=run.max_depth - max_depth_used if run.max_depth is not None else None,
        seconds=run.deadline_s - elapsed if run.deadline_s is not None else None,
    )


def observe(
    run: Run,
    nodes: list[Node],
    attempts: dict[int, list[Attempt]],
    deps: dict[int, list[int]],
    *,
    pairs: tuple[Pair, ...] | None = None,
) -> Observation:
    keys = {node.pk: node.key for node in nodes}
    domain, benchmark = task_domain(run, nodes)
    return Observation(
        task_text=run.task.text,
        decomposable=run.task.decomposable,
        nodes=tuple(
            node_view(n, attempts.get(n.pk, []), keys, deps.get(n.pk, []), domain=domain, benchmark=benchmark)
            for n in nodes
        ),
        budget_left=budget_left(run, len(nodes), max((n.depth for n in nodes), default=0)),
        pairs=pairs if pairs is not None else admissible_pairs(run),
        cost_preference=run.cost_preference,
        task_metadata=run.task.metadata,
        best_of=run.best_of,
        domain=domain,
        benchmark=benchmark,
    )
