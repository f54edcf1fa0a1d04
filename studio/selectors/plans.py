"""A stored run as the plan OrchRM scores (orchestrator.reward.plans)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from orchestrator.reward.plans import Plan, PlanError, PlanNode, plan_from_dict
from studio.models import Node, NodeKind, Run

# A node the engine ran without a model (a local aggregate, a node never attempted).
NO_MODEL = "local"


def run_plan(run: Run) -> Plan | None:
    """The plan of one run; see `run_plans`."""
    return run_plans([run])[run.pk]


def run_plans(runs: Iterable[Run]) -> dict[int, Plan | None]:
    """The plan of each run, by run id, in two queries however many runs.

    A run with nodes: one plan node per run node (the endpoint's model and the primitive's
    name; `local` and the node's kind where it has none), `depends_on` as node keys,
    `decompose` when it has subtasks, and its spent `cost_usd` as `cost_estimate`.
    A run without nodes (an imported one): the plan kept in `policy_config["plan"]`.
    None when it has neither, or the kept plan no longer parses.
    """
    runs = list(runs)
    nodes: dict[int, list[Node]] = defaultdict(list)
    queryset = (
        Node.objects.filter(run_id__in=[run.pk for run in runs])
        .select_related("endpoint", "primitive")
        .prefetch_related("depends_on")
        .order_by("run_id", "id")
    )
    for node in queryset:
        nodes[node.run_id].append(node)
    return {run.pk: _from_nodes(run, nodes[run.pk]) if nodes[run.pk] else _stored(run) for run in runs}


def _from_nodes(run: Run, nodes: list[Node]) -> Plan:
    return Plan(
        nodes=tuple(
            PlanNode(
                key=node.key,
                model=node.endpoint.model if node.endpoint else NO_MODEL,
                primitive=node.primitive.name if node.primitive else node.kind,
                kind=node.kind,
                depends_on=tuple(dep.key for dep in node.depends_on.all()),
            )
            for node in nodes
        ),
        decompose=any(node.kind == NodeKind.SUBTASK for node in nodes),
        cost_estimate=float(run.cost_usd),
    )


def _stored(run: Run) -> Plan | None:
    raw = run.policy_config.get("plan") if isinstance(run.policy_config, dict) else None
    if raw is None:
        return None
    try:
        return plan_from_dict(raw)
    except PlanError:
        return None
