"""A run's tree: nodes with their attempts, own totals and totals rolled up per subtree.

The rows themselves go to the API's schemas (`studio.api.runs.NodeOut`), which read what
they show off them; each node gets two attributes here: `tree_attempts` (its attempts, in
order) and `subtree` (totals over the node and its descendants)."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import Any

from studio.models import Attempt, Node, User
from studio.selectors.runs import run_get


def run_tree(*, user: User, run_id: int) -> dict[str, Any]:
    run = run_get(user=user, run_id=run_id)
    nodes = list(
        Node.objects.filter(run=run)
        .select_related("endpoint", "primitive", "parent")
        .prefetch_related("depends_on")
        .order_by("id")
    )
    attempts: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in Attempt.objects.filter(node__run=run).select_related("endpoint", "primitive").order_by("number"):
        attempts[attempt.node_id].append(attempt)
    children: dict[int | None, list[Node]] = defaultdict(list)
    for node in nodes:
        children[node.parent_id].append(node)

    @cache
    def subtree(node: Node) -> dict[str, float]:
        totals = {
            "tokens_in": float(node.tokens_in),
            "tokens_out": float(node.tokens_out),
            "cost_usd": float(node.cost_usd),
            "latency_s": node.latency_s,
        }
        for child in children[node.pk]:
            for key, value in subtree(child).items():
                totals[key] += value
        return totals

    for node in nodes:
        node.tree_attempts = attempts[node.pk]  # type: ignore[attr-defined]
        node.subtree = subtree(node)  # type: ignore[attr-defined]
    return {"run": run, "nodes": nodes}
