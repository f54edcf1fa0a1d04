"""The run engine's live shell: one step of a run, under its row lock.

`run_step(run_id=...)` (the Celery task on queue `orchestrator`) locks the run, loads its
rows as the orchestration core's plain state (`orchestrator.core`), lets the core take the
step (fold in finished attempts, move the DAG on, check the budget, ask the policy for
actions) and writes what changed in bulk: new nodes, new attempts, changed nodes and the
events, in a few statements whatever their number. The attempts it queued go to queue
`workers` after commit, all at once, so independent nodes run in parallel; when an attempt
finishes, its worker schedules the next step. No task waits on another: the state lives in
Postgres, and the decisions are the core's, as in the offline evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Prefetch
from django.utils import timezone

from orchestrator import core
from orchestrator.core.policy import Policy
from orchestrator.core.protocol import NodeKind, NodeStatus
from orchestrator.core.state import AttemptState, NodeState, RunSpec, RunState
from orchestrator.core.step import recorded_metadata
from orchestrator.outcomes import prompt_key
from orchestrator.policies import make_policy
from studio import queues, tracing
from studio.models import RUN_ENDED, Attempt, AttemptStatus, Node, Primitive, RecordedOutcome, Run, RunStatus
from studio.services.bulk import rows_update
from studio.services.events import run_events_append
from studio.services.pairs import admissible_pairs
from studio.services.policies import policy_config

log = logging.getLogger(__name__)

RUN_FIELDS = ("status", "started_at", "end_reason", "final_answer", "verification", "finished_at")
NODE_FIELDS = ["status", "answer", "output", "verification", "plan", "metadata", "endpoint", "primitive", "updated_at"]


# Rows to state


def run_spec(run: Run) -> RunSpec:
    task = run.task
    return RunSpec(
        task_text=task.text, policy=run.policy, pool=run.pool_id, task_metadata=task.metadata, domain=task.domain,
        benchmark=task.benchmark, checker=task.checker, has_gold_answer=bool(task.gold_answer),
        decomposable=task.decomposable, cost_preference=run.cost_preference, best_of=run.best_of,
        max_cost_usd=run.max_cost_usd, max_nodes=run.max_nodes, max_depth=run.max_depth, deadline_s=run.deadline_s,
    )  # fmt: skip


def _attempt_state(row: Attempt) -> AttemptState:
    return AttemptState(
        number=row.number, endpoint_id=row.endpoint_id, primitive=row.primitive.name, status=row.status,
        request=row.request, envelope=row.envelope, error_kind=row.error_kind, error_message=row.error_message,
        cost_usd=row.cost_usd, id=row.pk, created_at=row.created_at, started_at=row.started_at,
    )  # fmt: skip


class Primitives:
    """Primitive ids by name for one step: those of the attempts it loaded, the rest read once if needed."""

    def __init__(self, attempts: list[Attempt]) -> None:
        self.ids = {a.primitive.name: a.primitive_id for a in attempts}
        self.complete = False

    def _read(self) -> None:
        self.ids.update(Primitive.objects.values_list("name", "pk"))
        self.complete = True

    def id(self, name: str | None) -> int | None:
        if name is not None and name not in self.ids and not self.complete:
            self._read()
        return self.ids[name] if name is not None else None

    def name(self, pk: int | None) -> str | None:
        if pk is not None and pk not in self.ids.values() and not self.complete:
            self._read()
        return next(name for name, id in self.ids.items() if id == pk) if pk is not None else None


def _load(run: Run) -> tuple[RunState, Primitives]:
    rows = list(
        Node.objects.filter(run=run)
        .prefetch_related(
            Prefetch("attempts", queryset=Attempt.objects.select_related("primitive").order_by("number")),
            "depends_on",
        )
        .order_by("id")
    )
    keys = {row.pk: row.key for row in rows}
    primitives = Primitives([a for row in rows for a in row.attempts.all()])
    nodes = [
        NodeState(
            key=row.key,
            kind=cast(NodeKind, row.kind),
            text=row.text,
            status=cast(NodeStatus, row.status),
            depth=row.depth,
            parent=keys.get(row.parent_id) if row.parent_id else None,
            depends_on=[keys[d.pk] for d in sorted(row.depends_on.all(), key=lambda d: d.pk)],
            answer=row.answer,
            output=row.output,
            verification=row.verification,
            plan=row.plan,
            metadata=row.metadata,
            endpoint_id=row.endpoint_id,
            primitive=primitives.name(row.primitive_id),
            attempts=[_attempt_state(a) for a in row.attempts.all()],
            id=row.pk,
        )
        for row in rows
    ]
    state = RunState(
        spec=run_spec(run), status=run.status, nodes=nodes, cost_usd=run.cost_usd, tokens_in=run.tokens_in,
        tokens_out=run.tokens_out, latency_s=run.latency_s, started_at=run.started_at,
        verification=dict(run.verification),
    )  # fmt: skip
    return state, primitives


def recorded_query(run: Run) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) of the recordings of the run's task: of its item, or of its
    text. Its rows: model, primitive, domain, benchmark (`recorded_fold` makes them metadata)."""
    item_id = run.task.metadata.get("item_id")
    where, params = (
        ("item_id = %s", [item_id])
        if item_id
        else ("prompt_sha256 = %s AND prompt = %s", [prompt_key(run.task.text), run.task.text])
    )
    table = RecordedOutcome._meta.db_table
    return f"SELECT model, primitive, domain, benchmark FROM {table} WHERE {where} LIMIT 200", params  # noqa: S608 - a model's table; the values are parameters


def recorded_fold(run: Run, found: Sequence[Sequence[str]]) -> dict[str, Any]:
    """The root's metadata from `recorded_query`'s rows (`core.recorded_metadata`)."""
    domain, benchmark = (found[0][2], found[0][3]) if found else ("", "")
    pairs = [(model, primitive) for model, primitive, _, _ in found]
    return recorded_metadata(run.task.metadata.get("item_id"), pairs, domain, benchmark)


def root_metadata(run: Run) -> dict[str, Any]:
    """The root's metadata: the recordings of the task's item, or of its text (`core.recorded_metadata`).
    In SQL: every /v1 request asks, and the ORM's building of the query cost four times the query."""
    sql, params = recorded_query(run)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return recorded_fold(run, cursor.fetchall())


# State to rows


def _node_row(run: Run, node: NodeState, parent_id: int | None, now: datetime, primitives: Primitives) -> Node:
    return Node(
        pk=node.id, run=run, parent_id=parent_id, key=node.key, kind=node.kind, text=node.text, depth=node.depth,
        status=node.status, answer=node.answer, output=node.output, verification=node.verification, plan=node.plan,
        metadata=node.metadata, endpoint_id=node.endpoint_id, primitive_id=primitives.id(node.primitive),
        updated_at=now,
    )  # fmt: skip


def _write_nodes(
    run: Run, state: RunState, new: list[NodeState], changed: list[NodeState], now: datetime, primitives: Primitives
) -> None:
    by_key = {node.key: node for node in state.nodes}
    pending = list(new)
    while pending:  # parents first: a node created in this step may be a new node's parent
        ready = [n for n in pending if n.parent is None or by_key[n.parent].id is not None]
        parent_id = {n.key: by_key[n.parent].id if n.parent else None for n in ready}
        rows = Node.objects.bulk_create([_node_row(run, n, parent_id[n.key], now, primitives) for n in ready])
        for node, row in zip(ready, rows, strict=True):
            node.id = row.pk  # Postgres returns the ids
        pending = [n for n in pending if n.id is None]
    Edge = Node.depends_on.through
    Edge.objects.bulk_create(
        Edge(from_node_id=node.id, to_node_id=by_key[dep].id) for node in new for dep in node.depends_on
    )
    rows_update([_node_row(run, node, None, now, primitives) for node in changed], NODE_FIELDS)


def _write_attempts(
    run: Run, new: list[tuple[NodeState, AttemptState, dict[str, Any]]], primitives: Primitives
) -> list[int]:
    """Create the new attempts; return the ids of those to send."""
    rows = Attempt.objects.bulk_create(
        Attempt(  # type: ignore[misc]  # node.id: written just before; the primitive is known
            node_id=node.id,
            number=a.number,
            endpoint_id=a.endpoint_id,
            primitive_id=primitives.id(a.primitive),
            idempotency_key=f"run{run.pk}:{node.key}:{a.number}",
            request=a.request,
            status=a.status,
            error_kind=a.error_kind,
            error_message=a.error_message,
            finished_at=a.finished_at,
        )  # fmt: skip
        for node, a, _ in new
    )
    for (_, attempt, payload), row in zip(new, rows, strict=True):
        attempt.id = payload["attempt"] = row.pk
    return [row.pk for row in rows if row.status == AttemptStatus.QUEUED]


def _cancel(state: RunState, attempts: list[AttemptState], now: datetime) -> None:
    """Cancel the queued attempts the core cancelled, unless a worker claimed one meanwhile;
    the run's last event counts what was cancelled."""
    cancelled = Attempt.objects.filter(pk__in=[a.id for a in attempts], status=AttemptStatus.QUEUED).update(
        status=AttemptStatus.CANCELLED, error_kind="cancelled", error_message=state.end_reason, finished_at=now
    )
    for type, payload in state.changes.events:
        if type == "run.finished":
            payload["cancelled_attempts"] += cancelled - len(attempts)


def _write(run: Run, state: RunState, primitives: Primitives, dispatch: list[int]) -> None:
    """Write what the step changed: the run, new nodes and attempts, changed nodes, the events."""
    now = timezone.now()
    changes = state.changes
    if changes.cancelled:
        _cancel(state, changes.cancelled, now)
    fields = [name for name in RUN_FIELDS if name in changes.run_fields]
    if fields:
        for name in fields:
            setattr(run, name, getattr(state, name))
        run.save(update_fields=fields)
    new_ids = {id(node) for node in changes.new_nodes}
    changed = [node for node in changes.nodes.values() if id(node) not in new_ids]
    _write_nodes(run, state, changes.new_nodes, changed, now, primitives)
    dispatch.extend(_write_attempts(run, changes.new_attempts, primitives))
    run_events_append(run_id=run.pk, events=changes.events)
    if changes.wake_after_s is not None:
        countdown = changes.wake_after_s
        transaction.on_commit(lambda: queues.send(queues.RUN_STEP, run.pk, countdown=countdown))
    if changes.verify_answer:
        transaction.on_commit(lambda: queues.send(queues.VERIFY_RUN, run.pk))
    state.take_changes()


# Sending attempts


def _dispatch(attempt_ids: list[int]) -> None:
    """Send the attempts to queue `workers`, in batches of ORCHESTRA_ATTEMPT_BATCH: a worker
    runs a batch's calls concurrently and records them in a few statements."""
    if not attempt_ids:
        return
    size = max(1, settings.ORCHESTRA_ATTEMPT_BATCH)
    for start in range(0, len(attempt_ids), size):
        # If the broker cannot take them, they stay queued and a later step sends them again (_resend_lost).
        queues.send(queues.EXECUTE_ATTEMPTS, attempt_ids[start : start + size])


def _resend_lost(state: RunState, run_id: int, dispatch: list[int]) -> None:
    """Send again attempts whose message was lost: queued long ago and never claimed (a step
    killed after COMMIT, before sending, or the broker away), or running so long that their
    worker must be dead (a delivery cut off by a lost connection, with no message left to come
    back). A duplicate is harmless: only one delivery claims an attempt (attempts_start)."""
    lost_before = timezone.now() - timedelta(seconds=settings.ORCHESTRA_ATTEMPT_STALE_S)
    lost = [
        attempt.id
        for attempt in state.attempts()
        if attempt.id is not None
        and attempt.created_at is not None
        and (
            (attempt.status == AttemptStatus.QUEUED and attempt.created_at < lost_before)
            or (attempt.status == AttemptStatus.RUNNING and (attempt.started_at or attempt.created_at) < lost_before)
        )
    ]
    if lost:
        log.warning("run %s: sending again %d attempt(s) queued before %s", run_id, len(lost), lost_before)
        dispatch.extend(lost)


def _policy(run: Run, state: RunState) -> Policy | None:
    """The run's policy; None, with the run ended, when it cannot be made (a checkpoint that no
    longer loads: the run ends rather than fail every step again)."""
    try:
        config = policy_config(run.policy_config, run.checkpoint, best_of=run.best_of, pool_id=run.pool_id)
        return make_policy(run.policy, config)
    except Exception as error:
        log.exception("policy %s could not be made for run %s", run.policy, run.pk)
        reason = f"the policy {run.policy!r} could not be loaded: {type(error).__name__}: {error}"
        core.end(state, RunStatus.FAILED, reason, timezone.now())
        return None


def run_step(*, run_id: int) -> None:
    """One step of a run. Idempotent: a finished run, or one already up to date, is left as is."""
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("task", "checkpoint").filter(pk=run_id).first()
        if run is None:
            log.warning("run %s no longer exists", run_id)
            return
        if run.status in RUN_ENDED:
            return
        state, primitives = _load(run)
        dispatch: list[int] = []
        # Registered first, so the attempts go out right after COMMIT, ahead of the events'
        # notifications: a worker killed in between loses as little as possible.
        transaction.on_commit(lambda: _dispatch(dispatch))
        if run.status == RunStatus.PENDING:
            core.start(state, timezone.now(), root_metadata=root_metadata(run))
        _resend_lost(state, run.pk, dispatch)
        policy = _policy(run, state)
        if policy is not None:
            core.step(state, policy, admissible_pairs(run), timezone.now())
        _write(run, state, primitives, dispatch)
        if state.status in RUN_ENDED and tracing.enabled():
            transaction.on_commit(lambda: tracing.trace_run(run_id))
