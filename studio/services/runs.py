"""Creating, cancelling and re-running runs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from orchestrator.policies import COST_PRESETS
from studio import queues, tracing
from studio.errors import Conflict, Invalid, NotFound
from studio.models import (
    RUN_ENDED,
    Admissibility,
    Attempt,
    AttemptStatus,
    Node,
    NodeStatus,
    Run,
    RunStatus,
    Task,
    User,
)
from studio.permissions import can_view_run, can_view_task
from studio.services.events import run_event_append
from studio.services.policies import check_policy, default_policy, run_checkpoint
from studio.services.reward import check_best_of
from studio.services.scheduling import step_request

PRESETS = COST_PRESETS


def preset_lambda(preset: str | None, cost_preference: float | None) -> float | None:
    """The cost preference λ a run keeps: its preset's, if it names one, else the one given."""
    if preset is None:
        return cost_preference
    if preset not in PRESETS:
        raise Invalid("preset", f"Unknown preset {preset!r}; one of {', '.join(PRESETS)}.")
    return PRESETS[preset]


def no_pairs(pool_id: int) -> Invalid:
    return Invalid("pool_id", f"Pool {pool_id} does not exist or has no admissible (model, primitive) pair.")


def _enqueue_step(run_id: int) -> None:
    transaction.on_commit(lambda: step_request(run_id))


@transaction.atomic
def run_create(
    *,
    owner: User,
    task_id: int,
    pool_id: int,
    policy: str | None = None,
    policy_config: dict[str, Any] | None = None,
    cost_preference: float | None = None,
    best_of: int = 1,
    max_cost_usd: Decimal | None = None,
    max_nodes: int | None = None,
    max_depth: int | None = None,
    deadline_s: int | None = None,
    checkpoint_id: int | None = None,
    preset: str | None = None,
) -> Run:
    """A pending run of a task; its first step is queued once this commits. A `preset` stands
    for its cost preference λ (resolved here, and only here: the run keeps the number)."""
    cost_preference = preset_lambda(preset, cost_preference)
    task = Task.objects.filter(pk=task_id).first()
    if task is None or not can_view_task(owner, task):
        raise NotFound(f"Task {task_id} does not exist.")
    if not Admissibility.objects.filter(endpoint__pool_id=pool_id, allowed=True, endpoint__enabled=True).exists():
        raise no_pairs(pool_id)
    config = policy_config or {}
    policy = policy or default_policy()
    checkpoint = run_checkpoint(policy=policy, checkpoint_id=checkpoint_id)
    check_policy(policy, config, checkpoint)
    check_best_of(best_of=best_of)
    run = Run.objects.create(
        task=task, owner=owner, pool_id=pool_id, policy=policy, policy_config=config, checkpoint=checkpoint,
        cost_preference=cost_preference, best_of=best_of, max_cost_usd=max_cost_usd, max_nodes=max_nodes,
        max_depth=max_depth, deadline_s=deadline_s,
    )  # fmt: skip
    run_event_append(run_id=run.pk, type="run.created", payload={"task": task.pk, "policy": policy})
    _enqueue_step(run.pk)
    return run


def _locked_run(user: User, run_id: int) -> Run:
    run = Run.objects.select_for_update(of=("self",)).filter(pk=run_id).first()
    if run is None or not can_view_run(user, run):
        raise NotFound(f"Run {run_id} does not exist.")
    return run


@transaction.atomic
def run_cancel(*, user: User, run_id: int) -> Run:
    run = _locked_run(user, run_id)
    if run.status in RUN_ENDED:
        raise Conflict(f"Run {run_id} has already ended ({run.status}).")
    now = timezone.now()
    reason = f"cancelled by {user.username}"
    cancelled = Attempt.objects.filter(node__run=run, status=AttemptStatus.QUEUED).update(
        status=AttemptStatus.CANCELLED, error_kind="cancelled", error_message=reason, finished_at=now
    )
    Node.objects.filter(run=run, status__in=[NodeStatus.PENDING, NodeStatus.READY]).update(status=NodeStatus.CANCELLED)
    run.status, run.end_reason, run.finished_at = RunStatus.CANCELLED, reason, now
    run.save(update_fields=["status", "end_reason", "finished_at"])
    run_event_append(
        run_id=run.pk,
        type="run.finished",
        payload={"status": "cancelled", "reason": reason, "cancelled_attempts": cancelled},
    )
    if tracing.enabled():
        transaction.on_commit(lambda: tracing.trace_run(run.pk))
    return run


def _reopen_downstream(node: Node) -> None:
    """What was composed from this node's answer is composed again: its dependents (to
    pending) and its ancestors (back to running, waiting on their children)."""
    frontier, seen = [node], {node.pk}
    while frontier:
        current = frontier.pop()
        for dependent in current.dependents.all():
            if dependent.pk not in seen:
                seen.add(dependent.pk)
                frontier.append(dependent)
    Node.objects.filter(pk__in=seen - {node.pk}).update(status=NodeStatus.PENDING, answer="")
    ancestors = []
    parent = node.parent
    while parent is not None:
        ancestors.append(parent.pk)
        parent = parent.parent
    Node.objects.filter(pk__in=ancestors).update(status=NodeStatus.RUNNING, answer="")


@transaction.atomic
def node_rerun(*, user: User, run_id: int, node_key: str, endpoint_id: int, primitive: str) -> Attempt:
    """Run one node again with another pair; the answer it gives replaces the node's answer.

    The run reopens while the attempt runs; its next step folds the result in."""
    run = _locked_run(user, run_id)
    node = Node.objects.filter(run=run, key=node_key).first()
    if node is None:
        raise NotFound(f"Run {run_id} has no node {node_key!r}.")
    if node.kind == "aggregate":
        raise Invalid("node", "An aggregate node is composed from its children; re-run one of them instead.")
    pair = (
        Admissibility.objects.filter(
            endpoint_id=endpoint_id, primitive__name=primitive, endpoint__pool_id=run.pool_id, allowed=True
        )
        .select_related("primitive")
        .first()
    )
    if pair is None:
        raise Invalid("pair", f"({endpoint_id}, {primitive!r}) is not an admissible pair of this run's pool.")
    if node.attempts.filter(status__in=[AttemptStatus.QUEUED, AttemptStatus.RUNNING]).exists():
        raise Conflict(f"Node {node_key!r} already has an attempt in flight.")
    _reopen_downstream(node)
    number = node.attempts.count() + 1
    request: dict[str, Any] = {"prompt": node.text}
    if node.metadata.get("item_id"):
        request["item_id"] = node.metadata["item_id"]
    attempt = Attempt.objects.create(
        node=node, number=number, endpoint_id=endpoint_id, primitive=pair.primitive,
        idempotency_key=f"run{run.pk}:{node.key}:{number}",
        request=request,
    )  # fmt: skip
    node.status, node.endpoint_id, node.primitive = NodeStatus.RUNNING, endpoint_id, pair.primitive
    node.save(update_fields=["status", "endpoint", "primitive", "updated_at"])
    if run.status != RunStatus.RUNNING:
        run.status, run.finished_at, run.end_reason = RunStatus.RUNNING, None, ""
        run.save(update_fields=["status", "finished_at", "end_reason"])
    run_event_append(
        run_id=run.pk, type="attempt.queued",
        payload={"key": node.key, "attempt": attempt.pk, "number": number, "endpoint": endpoint_id,
                 "primitive": primitive, "rerun_by": user.username},
    )  # fmt: skip
    transaction.on_commit(lambda: queues.send(queues.EXECUTE_ATTEMPTS, [attempt.pk]))
    return attempt
