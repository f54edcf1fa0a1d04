"""The run engine: one step of a run's persisted state machine, under its row lock.

`run_step(run_id=...)` (called by the Celery task on queue `orchestrator`) locks the run,
folds finished attempts into node states, makes nodes ready whose dependencies are done,
checks the budget, then asks the run's policy for actions until it waits or finishes.
Each action is validated (a violation is counted, recorded and never executed) and
applied; every attempt it creates is sent to queue `workers` after commit, all at once,
so independent nodes run in parallel. When an attempt finishes, its worker schedules the
next step. No task waits on another: the state lives in Postgres.

A step writes in bulk: changed nodes, new attempts and events are kept on the `State`
and written once at its end (`_flush`), in a few statements whatever their number.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from orchestrator.checking import has_checker
from orchestrator.outcomes import prompt_key
from orchestrator.planner import plan_to_json
from orchestrator.policies import Policy, make_policy
from orchestrator.protocol import (
    Accept,
    Action,
    Aggregate,
    Decompose,
    Finish,
    Plan,
    ProtocolViolation,
    Repair,
    Solve,
    Wait,
    check_action,
)
from studio import queues
from studio.models import (
    RUN_ENDED,
    Attempt,
    AttemptStatus,
    Node,
    NodeKind,
    NodeStatus,
    Primitive,
    RecordedOutcome,
    Run,
    RunStatus,
)
from studio.services.bulk import rows_update
from studio.services.events import run_events_append
from studio.services.observation import admissible_pairs, observe
from studio.services.policies import policy_config

log = logging.getLogger(__name__)

IN_FLIGHT = {AttemptStatus.QUEUED, AttemptStatus.RUNNING}
DONE_BADLY = {NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.CANCELLED}
MAX_ACTIONS_PER_STEP = 200
MAX_VIOLATIONS_PER_STEP = 3
MAX_ATTEMPTS_PER_NODE = 4
TEXT_IN_EVENTS = 2000


@dataclass
class State:
    """A run's rows, loaded once per step."""

    run: Run
    nodes: list[Node]
    attempts: dict[int, list[Attempt]]
    deps: dict[int, list[int]]
    dispatch: list[int] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    dirty: dict[int, Node] = field(default_factory=dict)  # changed nodes, saved at the end
    new_attempts: list[tuple[Attempt, dict[str, Any]]] = field(default_factory=list)  # and their event
    primitives: dict[str, Primitive] = field(default_factory=dict)

    @property
    def by_key(self) -> dict[str, Node]:
        return {node.key: node for node in self.nodes}

    def node_attempts(self, node: Node) -> list[Attempt]:
        return self.attempts.setdefault(node.pk, [])

    def in_flight(self, node: Node) -> bool:
        return any(a.status in IN_FLIGHT for a in self.node_attempts(node))

    def children(self, node: Node) -> list[Node]:
        return [n for n in self.nodes if n.parent_id == node.pk]


def emit(state: State, type: str, **payload: Any) -> dict[str, Any]:
    """Record an event; it is written, in order, when the step ends."""
    state.events.append((type, payload))
    return payload


def _save(state: State, node: Node) -> None:
    node.updated_at = timezone.now()
    state.dirty[node.pk] = node


NODE_FIELDS = ["status", "answer", "output", "verification", "plan", "metadata", "endpoint", "primitive", "updated_at"]


def _flush(state: State) -> None:
    """Write what the step changed: new attempts, changed nodes, then the events."""
    if state.new_attempts:
        Attempt.objects.bulk_create([attempt for attempt, _ in state.new_attempts])
        for attempt, payload in state.new_attempts:
            payload["attempt"] = attempt.pk
            if attempt.status == AttemptStatus.QUEUED:
                state.dispatch.append(attempt.pk)
        state.new_attempts.clear()
    if state.dirty:
        rows_update(list(state.dirty.values()), NODE_FIELDS)
        state.dirty.clear()
    run_events_append(run_id=state.run.pk, events=state.events)
    state.events.clear()


def _load(run: Run) -> State:
    nodes = list(
        Node.objects.filter(run=run)
        .prefetch_related(
            Prefetch("attempts", queryset=Attempt.objects.select_related("primitive").order_by("number")),
            "depends_on",
        )
        .order_by("id")
    )
    return State(
        run=run,
        nodes=nodes,
        attempts={n.pk: list(n.attempts.all()) for n in nodes},
        deps={n.pk: sorted(d.pk for d in n.depends_on.all()) for n in nodes},
    )


def _start(state: State) -> None:
    run = state.run
    run.status, run.started_at = RunStatus.RUNNING, timezone.now()
    run.save(update_fields=["status", "started_at"])
    emit(state, "run.started", policy=run.policy, pool=run.pool_id)
    root = Node.objects.create(
        run=run, key="root", kind=NodeKind.ROOT, text=run.task.text, status=NodeStatus.READY,
        metadata=_recorded(run),
    )  # fmt: skip
    state.nodes.append(root)
    _node_created(state, root, [])
    if run.deadline_s:
        # A step just past the deadline ends the run even if no attempt ever comes back.
        countdown = run.deadline_s + 1
        transaction.on_commit(lambda: queues.send(queues.RUN_STEP, run.pk, countdown=countdown))


def _recorded(run: Run) -> dict[str, Any]:
    """For a task that is a recorded item, or whose text is a recorded prompt: which
    (model, primitive) pairs have a recording, so a policy need not guess on replay."""
    item_id = run.task.metadata.get("item_id")
    rows = (
        RecordedOutcome.objects.filter(item_id=item_id)
        if item_id
        else RecordedOutcome.objects.filter(prompt_sha256=prompt_key(run.task.text), prompt=run.task.text)
    )
    found = list(rows.values_list("model", "primitive", "domain", "benchmark")[:200])
    pairs = sorted({(model, primitive) for model, primitive, _, _ in found})
    metadata: dict[str, Any] = {"item_id": item_id} if item_id else {}
    if pairs:
        metadata["recorded_pairs"] = [list(pair) for pair in pairs]
        # What the recordings say the task is, for a task that does not say (a /v1 request).
        metadata["recorded_domain"], metadata["recorded_benchmark"] = found[0][2], found[0][3]
    return metadata


def _node_created(state: State, node: Node, depends_on: list[str]) -> None:
    emit(
        state, "node.created", key=node.key, kind=node.kind, text=node.text[:TEXT_IN_EVENTS], depth=node.depth,
        parent=node.parent.key if node.parent else None, depends_on=depends_on, status=node.status,
        item_id=node.metadata.get("item_id"),
    )  # fmt: skip


def _set_status(state: State, node: Node, status: str, **payload: Any) -> None:
    node.status = status
    _save(state, node)
    emit(state, f"node.{status}", key=node.key, **payload)


# Folding attempts into nodes


def _absorb(state: State, *, reviews: bool) -> None:
    """Fold finished attempts into their nodes. With a policy that `reviews` answers, an
    answer leaves its node `answered` (the policy accepts one, or asks for a second
    opinion); else the node succeeds with it."""
    for node in state.nodes:
        attempts = state.node_attempts(node)
        if node.status != NodeStatus.RUNNING or not attempts or state.in_flight(node) or state.children(node):
            continue  # a decomposed node waits on its children, not on its (planning) attempt
        last = attempts[-1]
        if last.primitive.name == "plan":
            _absorb_plan(state, node, last)
        elif last.status == AttemptStatus.OK and reviews:
            node.answer = last.envelope.get("answer") or ""  # provisional, until one is accepted
            _set_status(state, node, NodeStatus.ANSWERED, answer=node.answer[:TEXT_IN_EVENTS], attempt=last.number)
        elif last.status == AttemptStatus.OK:
            _accept(state, node, last)
        elif last.status != AttemptStatus.CANCELLED:
            _absorb_failure(state, node, last, reviews=reviews)


def _accept(state: State, node: Node, attempt: Attempt, **payload: Any) -> None:
    """The node succeeds with `attempt`'s answer."""
    envelope = attempt.envelope
    node.answer, node.output = envelope.get("answer") or "", envelope.get("output") or ""
    recorded = (envelope.get("artifacts") or {}).get("recorded_score")
    node.verification = {"recorded_score": recorded} if recorded is not None else {}
    _set_status(
        state, node, NodeStatus.SUCCEEDED, answer=node.answer[:TEXT_IN_EVENTS], attempt=attempt.number, **payload
    )


def _absorb_plan(state: State, node: Node, attempt: Attempt) -> None:
    if attempt.status == AttemptStatus.OK:
        node.plan = (attempt.envelope.get("artifacts") or {}).get("plan")
        _set_status(state, node, NodeStatus.READY, planned=len(node.plan or []))
    else:
        node.metadata = {**node.metadata, "plan_failed": True}
        _set_status(state, node, NodeStatus.READY, plan_failed=attempt.error_message or attempt.error_kind)


def _absorb_failure(state: State, node: Node, attempt: Attempt, *, reviews: bool) -> None:
    tries = sum(1 for a in state.node_attempts(node) if a.primitive.name != "plan")
    reason = f"{attempt.error_kind or attempt.status}: {attempt.error_message}".strip(": ")
    if reviews and any(a.status == AttemptStatus.OK for a in state.node_attempts(node)):
        # A second opinion failed; the answers in hand stay for the policy to accept.
        _set_status(state, node, NodeStatus.ANSWERED, after_failure=reason[:TEXT_IN_EVENTS], attempts=tries)
    elif tries >= MAX_ATTEMPTS_PER_NODE:
        node.output = f"Gave up after {tries} attempts; the last: {reason}"
        _set_status(state, node, NodeStatus.FAILED, reason=node.output[:TEXT_IN_EVENTS])
    else:
        _set_status(state, node, NodeStatus.READY, after_failure=reason[:TEXT_IN_EVENTS], attempts=tries)


def _propagate(state: State) -> None:
    """Make dependents ready (or skip them), and close decomposed nodes; until nothing changes."""
    by_pk = {node.pk: node for node in state.nodes}
    changed = True
    while changed:
        changed = False
        for node in state.nodes:
            if node.status == NodeStatus.PENDING:
                deps = [by_pk[d] for d in state.deps.get(node.pk, [])]
                bad = next((d for d in deps if d.status in DONE_BADLY), None)
                if bad is not None:
                    _set_status(state, node, NodeStatus.SKIPPED, reason=f"dependency {bad.key} {bad.status}")
                    changed = True
                elif all(d.status == NodeStatus.SUCCEEDED for d in deps):
                    _set_status(state, node, NodeStatus.READY)
                    changed = True
            elif node.status == NodeStatus.RUNNING and not state.in_flight(node):
                aggregate = next((c for c in state.children(node) if c.kind == NodeKind.AGGREGATE), None)
                if aggregate is None:
                    continue
                if aggregate.status == NodeStatus.SUCCEEDED:
                    node.answer, node.verification = aggregate.answer, aggregate.verification
                    _set_status(state, node, NodeStatus.SUCCEEDED, answer=node.answer[:TEXT_IN_EVENTS])
                    changed = True
                elif aggregate.status in DONE_BADLY:
                    node.output = f"subtasks did not complete (aggregate {aggregate.status})"
                    _set_status(state, node, NodeStatus.FAILED, reason=node.output)
                    changed = True


# Budgets and endings


def _budget_exceeded(state: State) -> str | None:
    run = state.run
    if run.max_cost_usd is not None and run.cost_usd >= run.max_cost_usd:
        return f"budget: cost ${run.cost_usd:.6f} reached the limit ${run.max_cost_usd:.6f}"
    if run.deadline_s is not None and run.started_at is not None:
        elapsed = (timezone.now() - run.started_at).total_seconds()
        if elapsed > run.deadline_s:
            return f"budget: deadline of {run.deadline_s} s passed ({elapsed:.1f} s)"
    return None


def _budget_admits(state: State) -> bool:
    """Whether the cost budget has room for one more attempt now (the step has checked that
    it is not spent). With nothing in flight, yes. Else only while the attempts in flight and
    this one, each at the dearest finished attempt's cost, fit in what is left; with no such
    cost yet, not at all. So a run ends at most one attempt past its budget (the one sent with
    nothing else in flight), unless an attempt costs more than every one before it."""
    run = state.run
    if run.max_cost_usd is None:
        return True
    attempts = [attempt for attempts in state.attempts.values() for attempt in attempts]
    in_flight = sum(1 for attempt in attempts if attempt.status in IN_FLIGHT)
    if in_flight == 0:
        return True
    dearest = max((a.cost_usd for a in attempts if a.status not in IN_FLIGHT), default=Decimal(0))
    return dearest > 0 and run.cost_usd + (in_flight + 1) * dearest <= run.max_cost_usd


def _partial_answer(state: State) -> str:
    root = state.by_key.get("root")
    if root is not None and root.answer:
        return root.answer
    done = [n for n in state.nodes if n.kind == NodeKind.SUBTASK and n.status == NodeStatus.SUCCEEDED]
    return "\n".join(f"{n.key}: {n.answer}" for n in done)


def _end(state: State, status: str, reason: str, answer: str | None = None) -> None:
    run = state.run
    cancelled = Attempt.objects.filter(node__run=run, status=AttemptStatus.QUEUED).update(
        status=AttemptStatus.CANCELLED,
        error_kind="cancelled",
        error_message=reason,
        finished_at=timezone.now(),
    )
    for attempt, _ in state.new_attempts:  # queued in this step, not yet written: never sent
        attempt.status, attempt.error_kind, attempt.error_message = AttemptStatus.CANCELLED, "cancelled", reason
        attempt.finished_at = timezone.now()
        cancelled += 1
    run.status = status
    # A reason quotes a provider's error, which may be long: cut it to fit, or the step fails
    # on every try and the run never ends.
    run.end_reason = _fit(reason, Run._meta.get_field("end_reason").max_length)
    run.final_answer = answer if answer is not None else _partial_answer(state)
    if status == RunStatus.SUCCEEDED:
        run.verification = {**run.verification, **verify(state, run.final_answer)}
        if run.verification.get("pending"):
            transaction.on_commit(lambda: queues.send(queues.VERIFY_RUN, run.pk))
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "end_reason", "final_answer", "verification", "finished_at"])
    emit(
        state, "run.finished", status=status, reason=reason, answer=run.final_answer[:TEXT_IN_EVENTS],
        verification=run.verification, cancelled_attempts=cancelled, tokens_in=run.tokens_in,
        tokens_out=run.tokens_out, cost_usd=float(run.cost_usd), latency_s=run.latency_s,
    )  # fmt: skip


def _fit(text: str, max_length: int | None) -> str:
    if max_length is None or len(text) <= max_length:
        return text
    return text[: max_length - 1] + "…"


def verify(state: State, answer: str) -> dict[str, Any]:
    """How right the answer is: the composite rule, a recorded score, or the benchmark's checker."""
    task = state.run.task
    items = [n for n in state.nodes if n.metadata.get("item_id") and n.kind == NodeKind.SUBTASK]
    if task.metadata.get("items") and items:
        scores = [n.verification.get("recorded_score") for n in items]
        known = [float(s) for s in scores if s is not None]
        score = sum(known) / len(items) if items else 0.0
        correct = len(known) == len(items) and all(s >= 1.0 for s in known)
        return {"method": "composite", "score": score, "correct": correct, "items": len(items)}
    root = state.by_key.get("root")
    recorded = root.verification.get("recorded_score") if root is not None else None
    if recorded is not None:
        return {"method": "recorded_score", "score": recorded, "correct": recorded >= 1.0}
    checker = task.checker or task.benchmark
    if task.gold_answer and has_checker(checker):
        # A worker checks it (studio.services.verification): a checker may run code in the
        # sandbox, which has no place under the run's row lock.
        return {"method": "checker", "checker": checker, "pending": True}
    return {}


# Actions


# What a primitive may need besides the prompt (workers.primitives.PrimitiveInput), read from
# the task's metadata for the root and from a recorded part's own for a part.
PRIMITIVE_INPUTS = ("context", "tests", "entry_point", "tools", "candidate")


def _inputs(state: State, node: Node, primitive: str) -> dict[str, Any]:
    source = state.run.task.metadata if node.kind == NodeKind.ROOT else node.metadata
    inputs = {key: source[key] for key in PRIMITIVE_INPUTS if source.get(key)}
    if primitive == "verify":
        # The answer under review: the node's own, once an attempt has given one.
        answered = [a for a in state.node_attempts(node) if a.status == AttemptStatus.OK and a.envelope.get("answer")]
        if answered:
            inputs["candidate"] = answered[-1].envelope.get("output") or answered[-1].envelope["answer"]
    return inputs


def _request(state: State, node: Node, primitive: str) -> dict[str, Any]:
    by_pk = {n.pk: n for n in state.nodes}
    deps = [by_pk[d] for d in state.deps.get(node.pk, [])]
    prompt = node.text
    if deps and node.kind != NodeKind.AGGREGATE and not node.metadata.get("item_id"):
        earlier = "\n".join(f"- {d.text}\n  Answer: {d.answer}" for d in deps)
        prompt = f"Results of earlier subtasks:\n{earlier}\n\nNow: {node.text}"
    elif node.kind == NodeKind.AGGREGATE:
        answers = "\n".join(f"- {d.text}\n  Answer: {d.answer}" for d in deps)
        prompt = f"Task:\n{state.run.task.text}\n\nAnswers to its subtasks:\n{answers}\n\nGive the final answer."
    request: dict[str, Any] = {
        "prompt": prompt,
        "benchmark": node.metadata.get("benchmark", state.run.task.benchmark),
        **_inputs(state, node, primitive),
    }
    if node.metadata.get("item_id"):
        request["item_id"] = node.metadata["item_id"]
    return request


def _queue_attempt(state: State, node: Node, endpoint_id: int, primitive: str, *, repair: bool = False) -> None:
    attempts = state.node_attempts(node)
    number = len(attempts) + 1
    request = {"prompt": state.run.task.text} if primitive == "plan" else _request(state, node, primitive)
    if primitive not in state.primitives:
        state.primitives[primitive] = Primitive.objects.get(name=primitive)
    attempt = Attempt(
        node=node, number=number, endpoint_id=endpoint_id, primitive=state.primitives[primitive],
        idempotency_key=f"run{state.run.pk}:{node.key}:{number}", request=request, status=AttemptStatus.QUEUED,
    )  # fmt: skip
    attempts.append(attempt)
    if primitive != "plan":
        node.endpoint_id, node.primitive = endpoint_id, attempt.primitive
    node.status = NodeStatus.RUNNING
    _save(state, node)
    payload = emit(
        state, "attempt.queued", key=node.key, attempt=None, number=number,
        endpoint=endpoint_id, primitive=primitive, repair=repair,
    )  # fmt: skip
    state.new_attempts.append((attempt, payload))  # its id is filled in when written


def _decompose(state: State, action: Decompose) -> str | None:
    """Create the subtasks and their aggregate node; a reason instead if a budget forbids it."""
    run, parent = state.run, state.by_key[action.node]
    total = len(state.nodes) + len(action.subtasks) + 1
    if run.max_nodes is not None and total > run.max_nodes:
        return f"budget: decomposing {parent.key} would make {total} nodes; the limit is {run.max_nodes}"
    if run.max_depth is not None and parent.depth + 1 > run.max_depth:
        depth = parent.depth + 1
        return f"budget: decomposing {parent.key} would reach depth {depth}; the limit is {run.max_depth}"
    parent.status = NodeStatus.RUNNING
    _save(state, parent)
    emit(state, "node.decomposed", key=parent.key, subtasks=plan_to_json(action.subtasks))
    created: dict[str, Node] = {}
    for spec in action.subtasks:
        metadata = dict(spec.metadata)
        if spec.item_id:
            metadata["item_id"] = spec.item_id
        if spec.primitive:
            metadata["suggested_primitive"] = spec.primitive
        created[spec.id] = Node(
            run=run, parent=parent, key=f"{parent.key}.{spec.id}", kind=NodeKind.SUBTASK, text=spec.text,
            depth=parent.depth + 1, status=NodeStatus.PENDING if spec.depends_on else NodeStatus.READY,
            metadata=metadata,
        )  # fmt: skip
    aggregate = Node(
        run=run, parent=parent, key=f"{parent.key}.aggregate", kind=NodeKind.AGGREGATE,
        text=f"Compose the answer to: {parent.text[:500]}", depth=parent.depth + 1, status=NodeStatus.PENDING,
    )  # fmt: skip
    Node.objects.bulk_create([*created.values(), aggregate])  # one INSERT; Postgres returns the ids
    depended_on = {dep for spec in action.subtasks for dep in spec.depends_on}
    edges = {created[spec.id]: [created[d] for d in spec.depends_on] for spec in action.subtasks}
    edges[aggregate] = [created[spec.id] for spec in action.subtasks if spec.id not in depended_on]
    Edge = Node.depends_on.through
    Edge.objects.bulk_create(
        Edge(from_node_id=node.pk, to_node_id=dep.pk) for node, deps in edges.items() for dep in deps
    )
    for node, deps in edges.items():
        state.nodes.append(node)
        state.deps[node.pk] = [d.pk for d in deps]
        _node_created(state, node, [d.key for d in deps])
    return None


def _aggregate(state: State, action: Aggregate) -> None:
    node = state.by_key[action.node]
    by_pk = {n.pk: n for n in state.nodes}
    deps = [by_pk[d] for d in state.deps.get(node.pk, [])]
    node.answer = deps[0].answer if len(deps) == 1 else "\n".join(f"{d.key.split('.')[-1]}: {d.answer}" for d in deps)
    _set_status(state, node, NodeStatus.SUCCEEDED, answer=node.answer[:TEXT_IN_EVENTS], aggregated=len(deps))


def _apply(state: State, action: Action) -> str | None:
    """Carry out a checked action; return a reason to end the run, if it must end."""
    node = state.by_key.get(getattr(action, "node", ""), None)
    if isinstance(action, Solve) and action.note and node is not None:
        _note(state, node, dict(action.note))
    if isinstance(action, Solve | Repair) and node is not None:
        _queue_attempt(state, node, action.pair.endpoint_id, action.pair.primitive, repair=isinstance(action, Repair))
    elif isinstance(action, Plan) and node is not None:
        _queue_attempt(state, node, action.pair.endpoint_id, "plan")
    elif isinstance(action, Decompose):
        return _decompose(state, action)
    elif isinstance(action, Aggregate):
        _aggregate(state, action)
    elif isinstance(action, Accept) and node is not None:
        _accept(state, node, state.node_attempts(node)[action.attempt - 1], accepted=True)
    return None


def _note(state: State, node: Node, note: dict[str, Any]) -> None:
    """Keep what the policy recorded with its choice (e.g. best-of-N candidates) on the node, and as an event."""
    node.metadata = {**node.metadata, **note}
    _save(state, node)
    emit(state, "node.noted", key=node.key, **note)


def _violation(state: State, action: object, error: Exception) -> None:
    run = state.run
    count = int(run.verification.get("protocol_violations", 0)) + 1
    run.verification = {**run.verification, "protocol_violations": count}
    run.save(update_fields=["verification"])
    emit(state, "protocol.violation", action=repr(action)[:500], reason=str(error)[:500], count=count)


def _policy(state: State) -> Policy | None:
    """The run's policy; None, with the run ended, when it cannot be made (a checkpoint that no
    longer loads: the run ends rather than fail every step again)."""
    run = state.run
    try:
        return make_policy(run.policy, policy_config(run.policy_config, run.checkpoint, best_of=run.best_of))
    except Exception as error:
        log.exception("policy %s could not be made for run %s", run.policy, run.pk)
        _end(state, RunStatus.FAILED, f"the policy {run.policy!r} could not be loaded: {type(error).__name__}: {error}")
        return None


def _decide(state: State, policy: Policy) -> None:
    run = state.run
    pairs = admissible_pairs(run)
    violations = 0
    for _ in range(MAX_ACTIONS_PER_STEP):
        observation = observe(run, state.nodes, state.attempts, state.deps, pairs=pairs)
        try:
            action = check_action(policy.act(observation), observation)
        except ProtocolViolation as error:
            _violation(state, "policy action", error)
            violations += 1
            if violations >= MAX_VIOLATIONS_PER_STEP:
                break
            continue
        except Exception as error:  # a broken policy must not wedge the run
            log.exception("policy %s failed on run %s", run.policy, run.pk)
            _end(state, RunStatus.FAILED, f"the policy {run.policy!r} failed: {type(error).__name__}: {error}")
            return
        if isinstance(action, Wait):
            break
        if isinstance(action, Finish):
            _end(state, RunStatus.SUCCEEDED, "finished", answer=action.answer)
            return
        if isinstance(action, Solve | Repair | Plan) and not _budget_admits(state):
            break  # the next attempt waits for those in flight: the budget may not cover them all
        reason = _apply(state, action)
        if reason is not None:
            _end(state, RunStatus.FAILED, reason)
            return
        _propagate(state)  # an aggregate just composed may complete its parent
    if not any(state.in_flight(node) for node in state.nodes):
        root = state.by_key["root"]
        if root.status == NodeStatus.SUCCEEDED:
            _end(state, RunStatus.SUCCEEDED, "finished", answer=root.answer)
        elif root.status in DONE_BADLY:
            _end(state, RunStatus.FAILED, f"the task failed: {root.output or root.status}")
        else:
            _end(state, RunStatus.FAILED, "no progress: the policy chose nothing and no attempt is in flight")


def _dispatch(attempt_ids: list[int]) -> None:
    """Send the attempts to queue `workers`, in batches of ORCHESTRA_ATTEMPT_BATCH: a worker
    runs a batch's calls concurrently and records them in a few statements."""
    if not attempt_ids:
        return
    size = max(1, settings.ORCHESTRA_ATTEMPT_BATCH)
    for start in range(0, len(attempt_ids), size):
        # If the broker cannot take them, they stay queued and a later step sends them again (_resend_lost).
        queues.send(queues.EXECUTE_ATTEMPTS, attempt_ids[start : start + size])


def _resend_lost(state: State) -> None:
    """Send again attempts whose message was lost: queued long ago and never claimed (a step
    killed after COMMIT, before sending, or the broker away), or running so long that their
    worker must be dead (a delivery cut off by a lost connection, with no message left to come
    back). A duplicate is harmless: only one delivery claims an attempt (attempts_start)."""
    lost_before = timezone.now() - timedelta(seconds=settings.ORCHESTRA_ATTEMPT_STALE_S)
    lost = [
        attempt.pk
        for attempts in state.attempts.values()
        for attempt in attempts
        if (attempt.status == AttemptStatus.QUEUED and attempt.created_at < lost_before)
        or (attempt.status == AttemptStatus.RUNNING and (attempt.started_at or attempt.created_at) < lost_before)
    ]
    if lost:
        log.warning("run %s: sending again %d attempt(s) queued before %s", state.run.pk, len(lost), lost_before)
        state.dispatch.extend(lost)


def run_step(*, run_id: int) -> None:
    """One step of a run. Idempotent: a finished run, or one already up to date, is left as is."""
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("task", "checkpoint").filter(pk=run_id).first()
        if run is None:
            log.warning("run %s no longer exists", run_id)
            return
        if run.status in RUN_ENDED:
            return
        state = _load(run)
        # Registered first, so the attempts go out right after COMMIT, ahead of the events'
        # notifications: a worker killed in between loses as little as possible.
        transaction.on_commit(lambda: _dispatch(state.dispatch))
        if run.status == RunStatus.PENDING:
            _start(state)
        _resend_lost(state)
        policy = _policy(state)
        if policy is not None:
            _absorb(state, reviews=policy.reviews_answers)
            _propagate(state)
            reason = _budget_exceeded(state)
            if reason is not None:
                _end(state, RunStatus.FAILED, reason)
            else:
                _decide(state, policy)
        _flush(state)
