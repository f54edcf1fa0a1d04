"""A run's tree: nodes with their attempts, own totals and totals rolled up per subtree."""

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

    return {
        "run": run,
        "nodes": [
            {
                "key": node.key,
                "kind": node.kind,
                "parent": node.parent.key if node.parent else None,
                "depends_on": [d.key for d in node.depends_on.all()],
                "text": node.text,
                "status": node.status,
                "depth": node.depth,
                "model": node.endpoint.model if node.endpoint else None,
                "endpoint_id": node.endpoint_id,
                "primitive": node.primitive.name if node.primitive else None,
                "answer": node.answer,
                "output": node.output,
                "verification": node.verification,
                "item_id": node.metadata.get("item_id"),
                "best_of": node.metadata.get("best_of"),
                "tokens_in": node.tokens_in,
                "tokens_out": node.tokens_out,
                "cost_usd": float(node.cost_usd),
                "latency_s": node.latency_s,
                "subtree": subtree(node),
                "attempts": [
                    {
                        "number": a.number,
                        "model": a.endpoint.model,
                        "primitive": a.primitive.name,
                        "status": a.status,
                        "answer": a.envelope.get("answer"),
                        "tokens_in": a.tokens_in,
                        "tokens_out": a.tokens_out,
                        "cost_usd": float(a.cost_usd),
                        "latency_s": a.latency_s,
                        "error_kind": a.error_kind or None,
                        "error_message": a.error_message or None,
                    }
                    for a in attempts[node.pk]
                ],
            }
            for node in nodes
        ],
    }
