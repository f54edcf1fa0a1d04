"""/v1's fast path: a request the policy delegates to one pair, decided and called in the
process that holds the request, and recorded after the answer.

The decisions are the core's: `orchestrator.core` starts the run and steps it with the
run's policy and pool, as `studio.services.live_shell.run_step` does, on the run's state in
memory instead of its rows. When the first step sends exactly one attempt, on the root, that
attempt is called here, on one of ORCHESTRA_FAST_THREADS threads, through the executor the
workers' batches use too (`studio.services.calls`, on `providers/`; ORCHESTRA_ATTEMPT_EXECUTOR
names it); its envelope is folded in as `attempts_finish` folds it, and a second step ends the
run.

- Ids come from the tables' sequences before the call, in the query that reads the task's
  recordings for the root's metadata (one round trip), so the answer names its run.
- Before the call, the run's rows as they stand are held in Redis (`fast_hold`,
  `studio.fast_intents`, one round trip): if this process dies during the call, the recovery
  sweep writes the run with its call lost (`studio.services.fast_lost`), and until the run is
  written a read of it waits for it. Where Redis cannot hold them, the full machinery takes
  the request: no provider call goes out without a record of it.
- The whole run (task, run, node, attempt, events) goes to queue `orchestrator` as one message
  (`run_record.payload_dump`), sent from the call's thread before the answer goes out; a worker
  writes it (`run_record`). Nothing is lost if this process dies after answering: the message
  is in the broker, acknowledged only once written. If the broker cannot take it, it is
  written here before the answer.
- What a fast run cannot do goes to the full machinery: a request that is decomposable, has a
  deadline or best_of > 1, a first step that plans or sends several attempts, and a run that
  goes on after its call (a repair after a failure): that run is written here, its queued
  attempts are sent to the workers, and the request waits for it as for any run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.utils import timezone
from django.utils.module_loading import import_string

from orchestrator import core
from orchestrator.core.envelope import Envelope
from orchestrator.core.policy import Policy
from orchestrator.core.state import RUN_ENDED, AttemptState, NodeState, RunState
from providers.threads import process_pool
from studio import fast_intents, queues
from studio.db import connection_release
from studio.models import Attempt, Node, Run, RunEvent, Task, User
from studio.selectors.setup_cache import PoolView, cached, pool_view
from studio.services.attempts import AttemptWork, endpoint_work, envelope_redact, finished_event
from studio.services.live_shell import recorded_fold, recorded_query, run_spec
from studio.services.policies import default_policy, policy_build, run_checkpoint
from studio.services.run_record import payload_dump, run_record
from studio.services.runs import no_pairs, preset_lambda
from studio.services.tasks import check_task_text
from studio.streaming import RunTokens

log = logging.getLogger(__name__)


@dataclass
class FastRun:
    """A run decided in memory: its rows (not yet written), its state, and the call to make."""

    task: Task
    run: Run
    state: RunState
    policy: Policy
    view: PoolView
    work: AttemptWork
    api_key: str | None = field(repr=False)
    times: list[datetime] = field(default_factory=list)  # when each batch of events happened
    batches: list[list[tuple[str, dict[str, Any]]]] = field(default_factory=list)
    call: Future[None] | None = None  # the call on its thread, once started (`fast_start`)
    verify: bool = False  # the answer waits for a checker that a worker runs
    called: bool = False  # the call has ended, its answer folded in and the run recorded
    abandoned: bool = False  # the request stopped waiting before that
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def ended(self) -> bool:
        return self.state.status in RUN_ENDED


def enabled() -> bool:
    return bool(settings.ORCHESTRA_FAST_PATH)


def threads() -> ThreadPoolExecutor:
    """The threads that make fast-path calls, up to ORCHESTRA_FAST_THREADS at once. The
    database work around a call runs where Django runs a request's sync code (sync_to_async,
    thread-sensitive: a thread of the request's own), so that it sees what the request's
    connection sees."""
    return process_pool("fast-path", settings.ORCHESTRA_FAST_THREADS)


def _execute(work: AttemptWork) -> Envelope:
    executor: Callable[[AttemptWork], Envelope] = import_string(settings.ORCHESTRA_ATTEMPT_EXECUTOR)
    return executor(work)


NEXT_ID = "nextval(pg_get_serial_sequence(%s, 'id'))"  # SQL: a new id of the table named by the parameter


def _sequence_ids(*models_: type[models.Model]) -> list[int]:
    """One new id from each model's id sequence, in one query."""
    tables = [model._meta.db_table for model in models_]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(NEXT_ID for _ in tables), tables)
        row = cursor.fetchone()
    assert row is not None
    return [int(value) for value in row]


def _ids_and_recordings(run: Run) -> tuple[list[int], dict[str, Any]]:
    """New ids for the run's task, run, root and first attempt, and the root's metadata
    (`engine.recorded_query`), in one round trip: every request asks for both. The ids of a
    run that turns out not to fit the fast path go unused (a sequence has gaps anyway)."""
    recorded, params = recorded_query(run)
    tables = [model._meta.db_table for model in (Task, Run, Node, Attempt)]
    ids = ", ".join(NEXT_ID for _ in tables)
    found = "coalesce(json_agg(json_build_array(r.model, r.primitive, r.domain, r.benchmark)), '[]')"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {ids}, (SELECT {found} FROM ({recorded}) AS r)", [*tables, *params])  # noqa: S608 - tables and query are ours; values are parameters
        row = cursor.fetchone()
    assert row is not None
    return [int(value) for value in row[:-1]], recorded_fold(run, row[-1])


def _sent_one_solve(state: RunState) -> tuple[NodeState, AttemptState] | None:
    """The root and its attempt when the step created just those: one call decides the run."""
    changes = state.changes
    if state.status in RUN_ENDED or changes.wake_after_s is not None or changes.verify_answer:
        return None
    if len(changes.new_nodes) != 1 or len(changes.new_attempts) != 1:
        return None
    node, attempt, _ = changes.new_attempts[0]
    if node.kind != "root" or attempt.primitive == "plan" or attempt.status != "queued":
        return None
    return node, attempt


def fast_prepare(
    *,
    user: User,
    text: str,
    policy: str | None,
    pool_id: int,
    preset: str | None,
    cost_preference: float | None,
    max_cost_usd: Decimal | None,
    policy_config: dict[str, Any] | None,
    checkpoint_id: int | None,
    metadata: dict[str, Any],
) -> FastRun | None:
    """Check the request as chat_submit and run_create would, then take the run's first step in
    memory; the run when that step sends one call, else None (the full machinery takes it)."""
    check_task_text(text)
    cost_preference = preset_lambda(preset, cost_preference)
    name = policy or cached(("default-policy",), default_policy)
    checkpoint = cached(
        ("checkpoint", name, checkpoint_id), lambda: run_checkpoint(policy=name, checkpoint_id=checkpoint_id)
    )
    config = policy_config or {}
    made = policy_build(name, config, checkpoint, pool_id=pool_id)
    now = timezone.now()
    task = Task(owner=user, text=text, metadata=metadata, created_at=now)
    run = Run(
        task=task, owner=user, pool_id=pool_id, policy=name, policy_config=config, checkpoint=checkpoint,
        cost_preference=cost_preference, max_cost_usd=max_cost_usd, created_at=now,
    )  # fmt: skip
    view = pool_view(pool_id)
    if not view.pairs:
        raise no_pairs(pool_id)
    state = RunState(spec=run_spec(run))
    created: list[tuple[str, dict[str, Any]]] = [("run.created", {"task": None, "policy": name})]
    ids, metadata = _ids_and_recordings(run)
    core.start(state, now, root_metadata=metadata)
    core.step(state, made, view.pairs, now)
    sent = _sent_one_solve(state)
    if sent is None:
        return None
    node, attempt = sent
    task.pk, run.pk, node.id, attempt.id = ids
    run.task_id = task.pk
    created[0][1]["task"] = task.pk
    state.changes.new_attempts[0][2]["attempt"] = attempt.id
    found = view.by_pair[(attempt.endpoint_id, attempt.primitive)]
    work = endpoint_work(
        attempt_id=attempt.id, endpoint=found.row.endpoint, api_key=found.api_key, primitive=found.row.primitive,
        request=attempt.request, text=node.text, run_id=run.pk, node_key=node.key, number=attempt.number,
    )  # fmt: skip
    work = replace(work, watchable=False)  # the run is written after its call, and a watcher waits for that
    attempt.created_at = attempt.started_at = now
    attempt.status = "running"
    fast = FastRun(task=task, run=run, state=state, policy=made, view=view, work=work, api_key=found.api_key)
    fast.times.append(now)
    fast.batches.append(created + state.take_changes().events)
    return fast


def fast_hold(fast: FastRun) -> bool:
    """Hold the run's rows as they stand, its call about to start, until its record is written
    (`studio.fast_intents`); False when Redis cannot: then the call must not go out from here."""
    return fast_intents.hold(fast.run.pk, _payload(fast, []))


def fast_stream(fast: FastRun) -> None:
    """Stream the run's call: its tokens to the request and the run's group as they arrive."""
    work = fast.work
    fast.work = replace(work, tokens=RunTokens(work.run_id, work.node_key, work.number, work.primitive))


def fast_streamed(fast: FastRun | None) -> RunTokens | None:
    """The streamed call's tokens where they make the answer as they come: a `direct` call's."""
    if fast is None or fast.work.tokens is None or fast.work.primitive != "direct":
        return None
    return fast.work.tokens


def fast_start(fast: FastRun) -> None:
    """Start the run's call (`fast_called`) on a fast-path thread (`fast.call`); straight from
    the thread that decided it, so that it need not wait for the event loop to hand it over."""
    fast.call = threads().submit(fast_called, fast)


def fast_call(fast: FastRun) -> Envelope:
    """Make the run's one call (on a fast-path thread, `threads()`)."""
    return _execute(fast.work)


def fast_called(fast: FastRun) -> None:
    """Make the call, fold its answer in and record the run (on a fast-path thread, so the
    request's answer waits for no other thread): sent to a worker, or, when the run goes on
    or the broker cannot take it, written here. A failure is the request's error, unless the
    request has stopped waiting (`fast_abandon`): then it is logged."""
    try:
        fast_finish(fast, fast_call(fast))
        fast_recorded(fast)
    except Exception:
        if not _done(fast):
            raise
        log.exception("run %s failed after its request stopped waiting", fast.run.pk)
    else:
        _done(fast)
    finally:
        connection_release()


def _done(fast: FastRun) -> bool:
    """The call and its record have ended; whether the request had stopped waiting for them."""
    with fast.lock:
        fast.called = True
        return fast.abandoned


def fast_abandon(fast: FastRun) -> bool:
    """The request stops waiting for the call: True if the call is still going, False if it has
    just ended (the request answers as usual)."""
    with fast.lock:
        fast.abandoned = not fast.called
        return fast.abandoned


def fast_recorded(fast: FastRun) -> None:
    """Record the run once its call is folded in: ended, or handed over."""
    if fast.ended:
        fast_record(fast)
    else:
        fast_hand_over(fast)


def fast_finish(fast: FastRun, envelope: Envelope) -> None:
    """Fold the call's envelope into the run, as attempts_finish writes it and the next step
    reads it back, and take that step: the run ends, or goes on (handed over)."""
    state = fast.state
    envelope = envelope_redact(envelope, fast.api_key)
    node = state.root
    assert node is not None
    attempt = node.attempts[-1]
    now = timezone.now()
    cost = Decimal(repr(envelope.cost_usd))
    attempt.status, attempt.envelope = envelope.status, envelope.to_dict()
    attempt.error_kind, attempt.error_message = envelope.error_kind or "", envelope.error_message or ""
    attempt.cost_usd, attempt.finished_at = cost, now
    state.cost_usd += cost
    state.tokens_in += envelope.tokens_in
    state.tokens_out += envelope.tokens_out
    state.latency_s += envelope.latency_s
    assert attempt.id is not None
    fast.times.append(now)
    fast.batches.append([finished_event(attempt.id, node.key, envelope)])
    core.step(state, fast.policy, fast.view.pairs, now)
    fast.verify = state.changes.verify_answer
    fast.times.append(now)
    fast.batches.append(state.take_changes().events)


def _new_ids(fast: FastRun) -> list[int]:
    """Ids for the nodes and attempts the last step created (a run handed over); the queued ones."""
    state, queued = fast.state, []
    for node in state.nodes:
        if node.id is None:
            node.id = _sequence_ids(Node)[0]
        for attempt in node.attempts:
            if attempt.id is None:
                attempt.id = _sequence_ids(Attempt)[0]
                attempt.created_at = timezone.now()
            if attempt.status == "queued":
                queued.append(attempt.id)
    for events in fast.batches:
        for type, payload in events:
            if type == "attempt.queued" and payload["attempt"] is None:
                owner = state.node(payload["key"])
                assert owner is not None
                payload["attempt"] = owner.attempts[payload["number"] - 1].id
    return queued


def _rows(fast: FastRun) -> list[models.Model]:
    """The run's rows as the engine would have written them, events in order."""
    state, run, task = fast.state, fast.run, fast.task
    for name in ("status", "started_at", "end_reason", "final_answer", "verification", "finished_at"):
        setattr(run, name, getattr(state, name))
    run.tokens_in, run.tokens_out, run.cost_usd, run.latency_s = (
        state.tokens_in, state.tokens_out, state.cost_usd, state.latency_s,
    )  # fmt: skip
    events = [
        RunEvent(run_id=run.pk, seq=0, type=type, payload=payload, created_at=at)
        for at, batch in zip(fast.times, fast.batches, strict=True)
        for type, payload in batch
    ]
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    run.last_seq = len(events)
    by_key = {node.key: node for node in state.nodes}
    nodes: list[models.Model] = []
    attempts: list[models.Model] = []
    for node in state.nodes:
        envelopes = [a.envelope for a in node.attempts]
        nodes.append(
            Node(
                pk=node.id, run_id=run.pk, parent_id=by_key[node.parent].id if node.parent else None, key=node.key,
                kind=node.kind, text=node.text, depth=node.depth, status=node.status, answer=node.answer,
                output=node.output, verification=node.verification, plan=node.plan, metadata=node.metadata,
                endpoint_id=node.endpoint_id, primitive_id=fast.view.primitive_id(node.primitive),
                tokens_in=sum(int(e.get("tokens_in", 0)) for e in envelopes),
                tokens_out=sum(int(e.get("tokens_out", 0)) for e in envelopes),
                cost_usd=sum((a.cost_usd for a in node.attempts), Decimal(0)),
                latency_s=sum(float(e.get("latency_s", 0.0)) for e in envelopes),
                created_at=fast.times[0], updated_at=fast.times[-1],
            )
        )  # fmt: skip
        for attempt in node.attempts:
            envelope = attempt.envelope
            attempts.append(
                Attempt(  # type: ignore[misc]  # ids and times: set before the rows are made
                    pk=attempt.id, node_id=node.id, number=attempt.number, endpoint_id=attempt.endpoint_id,
                    primitive_id=fast.view.primitive_id(attempt.primitive),
                    idempotency_key=f"run{run.pk}:{node.key}:{attempt.number}", request=attempt.request,
                    status=attempt.status, envelope=envelope, tokens_in=int(envelope.get("tokens_in", 0)),
                    tokens_out=int(envelope.get("tokens_out", 0)), cost_usd=attempt.cost_usd,
                    latency_s=float(envelope.get("latency_s", 0.0)), error_kind=attempt.error_kind,
                    error_message=attempt.error_message, created_at=attempt.created_at,
                    started_at=attempt.started_at, finished_at=attempt.finished_at,
                )
            )  # fmt: skip
    return [task, run, *nodes, *attempts, *events]


def _payload(fast: FastRun, dispatch: list[int]) -> str:
    return payload_dump(_rows(fast), dispatch=dispatch, verify=fast.verify)


def fast_record(fast: FastRun) -> None:
    """Record a run that has ended: sent to a worker to write, before the answer goes out; written
    here when the broker cannot take it (then a database that is away is a 503)."""
    payload = _payload(fast, [])
    if not queues.send(queues.RECORD_RUN, payload):
        log.warning("run %s: the broker took no record; writing it here", fast.run.pk)
        run_record(payload=payload)


def fast_hand_over(fast: FastRun) -> None:
    """A run that goes on after its call (a retry): written now, its queued attempts sent to the
    workers; the engine takes it from there, as any run."""
    run_record(payload=_payload(fast, _new_ids(fast)))
