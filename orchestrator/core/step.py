"""One step of a run's state machine, with no I/O: the functional core of the engine.

`step(state, policy, pairs, now)` folds finished attempts into node states, makes nodes
ready whose dependencies are done, checks the budget, then asks the policy for actions
until it waits or the run ends. Each action is checked (a violation is counted, recorded
and never carried out) and applied. What changed is on `state.changes`: new nodes and
attempts, changed nodes, the events in order, the run's changed fields.

`step_many` steps several runs in lockstep: each round asks the policy once for every run
still deciding (`act_all`: its `act_many`, one batched pass, where it has one), and each run
decides exactly as it would alone.

Two shells drive it: the live one (`studio.services.live_shell`, the run's rows under their
lock, attempts executed by Celery workers) and the offline one (`orchestrator.offline.shell`,
attempts answered from a recorded outcome table), so the evaluation's decisions are a run's.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from orchestrator.core.actions import apply
from orchestrator.core.checking import has_checker
from orchestrator.core.envelope import ERROR_CAUSES
from orchestrator.core.items import leaves
from orchestrator.core.observe import observe
from orchestrator.core.policy import Policy
from orchestrator.core.protocol import (
    Action,
    Finish,
    Observation,
    Pair,
    Plan,
    ProtocolViolation,
    Repair,
    Solve,
    Wait,
    check_action,
)
from orchestrator.core.state import DONE_BADLY, NodeState, RunSpec, RunState
from orchestrator.core.tree import TEXT_IN_EVENTS, absorb, node_created, propagate

log = logging.getLogger(__name__)

MAX_ACTIONS_PER_STEP = 200
MAX_VIOLATIONS_PER_STEP = 3
END_REASON_MAX = 300  # characters of a run's end reason (the column's size)


def start(state: RunState, now: datetime, *, root_metadata: dict[str, Any]) -> None:
    """A pending run starts: its root node, ready, and a wake-up at its deadline."""
    state.status, state.started_at = "running", now
    state.changes.run_fields.update({"status", "started_at"})
    state.emit("run.started", policy=state.spec.policy, pool=state.spec.pool)
    root = NodeState(key="root", kind="root", text=state.spec.task_text, status="ready", metadata=root_metadata)
    state.nodes.append(root)
    state.changes.new_nodes.append(root)
    node_created(state, root)
    if state.spec.deadline_s:
        # A step just past the deadline ends the run even if no attempt ever comes back.
        state.changes.wake_after_s = state.spec.deadline_s + 1


def recorded_metadata(item_id: str | None, pairs: list[tuple[str, str]], domain: str, benchmark: str) -> dict[str, Any]:
    """The root's metadata: which (model, primitive) `pairs` have a recording of the task (a
    recorded item, `item_id`, or a recorded prompt), so a policy need not guess on replay, and
    an empty list where none has (a user's own prompt: only a live endpoint can answer it); and
    what the recordings say the task is, for a task that does not say (a /v1 request)."""
    metadata: dict[str, Any] = {"item_id": item_id} if item_id else {}
    metadata["recorded_pairs"] = [list(pair) for pair in sorted(set(pairs))]
    if pairs:
        metadata["recorded_domain"], metadata["recorded_benchmark"] = domain, benchmark
    return metadata


# A chat that sets tools or a response format goes to these primitives only: they pass both
# to the provider untouched (providers/primitives/direct.py); the others word the task their way.
PASSTHROUGH_PRIMITIVES = frozenset({"direct"})


def usable_pairs(spec: RunSpec, pairs: tuple[Pair, ...]) -> tuple[Pair, ...]:
    chat = spec.task_metadata.get("chat") or {}
    if not (chat.get("tools") or chat.get("response_format")):
        return pairs
    return tuple(pair for pair in pairs if pair.ref.primitive in PASSTHROUGH_PRIMITIVES)


def step(state: RunState, policy: Policy, pairs: tuple[Pair, ...], now: datetime) -> None:
    """Fold in what finished, then let the policy act until it waits or the run ends."""
    step_many([(state, now)], policy, pairs)


def step_many(runs: Sequence[tuple[RunState, datetime]], policy: Policy, pairs: tuple[Pair, ...]) -> None:
    """`step` for each (run, its clock), the policy asked for all of them at once each round."""
    deciding = []
    for state, now in runs:
        absorb(state, reviews=policy.reviews_answers)
        propagate(state)
        reason = budget_exceeded(state, now)
        if reason is not None:
            end(state, "failed", reason, now)
        else:
            deciding.append(decisions(state, usable_pairs(state.spec, pairs), now))
    decide_all(deciding, policy)


def budget_exceeded(state: RunState, now: datetime) -> str | None:
    spec = state.spec
    if spec.max_cost_usd is not None and state.cost_usd >= spec.max_cost_usd:
        return f"budget: cost ${state.cost_usd:.6f} reached the limit ${spec.max_cost_usd:.6f}"
    if spec.deadline_s is not None and state.started_at is not None:
        elapsed = (now - state.started_at).total_seconds()
        if elapsed > spec.deadline_s:
            return f"budget: deadline of {spec.deadline_s:g} s passed ({elapsed:.1f} s)"
    return None


def budget_admits(state: RunState) -> bool:
    """Whether the cost budget has room for one more attempt now (the step has checked that
    it is not spent). With nothing in flight, yes. Else only while the attempts in flight and
    this one, each at the dearest finished attempt's cost, fit in what is left; with no such
    cost yet, not at all. So a run ends at most one attempt past its budget (the one sent with
    nothing else in flight), unless an attempt costs more than every one before it."""
    limit = state.spec.max_cost_usd
    if limit is None:
        return True
    in_flight = sum(1 for attempt in state.attempts() if attempt.in_flight)
    if in_flight == 0:
        return True
    dearest = max((a.cost_usd for a in state.attempts() if not a.in_flight), default=Decimal(0))
    return dearest > 0 and state.cost_usd + (in_flight + 1) * dearest <= limit


# What a run's decisions are sent: the policy's action, or the exception acting raised.
Answer = Action | Exception
Decisions = Generator[Observation, Answer, None]


def decide_all(deciding: Sequence[Decisions], policy: Policy) -> None:
    """Drive runs' decisions in lockstep: each round, one `act_all` for every run still deciding."""
    pending: list[tuple[Decisions, Observation]] = []
    for run in deciding:
        pending.append((run, next(run)))  # a fresh run always has a first observation
    while pending:
        answers = act_all(policy, [observation for _, observation in pending])
        resumed = [(run, resume(run, answer)) for (run, _), answer in zip(pending, answers, strict=True)]
        pending = [(run, observation) for run, observation in resumed if observation is not None]


def resume(run: Decisions, answer: Answer) -> Observation | None:
    """The run's next observation once it has the answer; None where its decisions are over."""
    try:
        return run.send(answer)
    except StopIteration:
        return None


def act_all(policy: Policy, observations: Sequence[Observation]) -> list[Answer]:
    """The policy's action for each observation, as `act` gives it alone: through its
    `act_many` (one batched pass) where it has one and there are several; where that fails,
    or there is one, `act` on each, an exception being that observation's answer only."""
    many = getattr(policy, "act_many", None)
    if many is not None and len(observations) > 1:
        try:
            actions: list[Answer] = list(many(observations))
        except Exception:
            log.warning("the policy %s failed on %d runs at once; acting on each", policy.name, len(observations))
        else:
            if len(actions) == len(observations):
                return actions
    answers: list[Answer] = []
    for observation in observations:
        try:
            answers.append(policy.act(observation))
        except Exception as error:  # a broken policy must not wedge the run
            answers.append(error)
    return answers


def decisions(state: RunState, pairs: tuple[Pair, ...], now: datetime) -> Decisions:
    """One run's decisions in a step: yields each observation, is sent the policy's answer to
    it, and applies it, until the policy waits or the run ends."""
    violations = 0
    for _ in range(MAX_ACTIONS_PER_STEP):
        observation = observe(state, pairs, now)
        answer = yield observation
        try:
            if isinstance(answer, Exception):
                raise answer
            action = check_action(answer, observation)
        except ProtocolViolation as error:
            violation(state, "policy action", error)
            violations += 1
            if violations >= MAX_VIOLATIONS_PER_STEP:
                break
            continue
        except Exception as error:  # a broken policy must not wedge the run
            log.exception("the policy %s failed", state.spec.policy)
            end(state, "failed", f"the policy {state.spec.policy!r} failed: {type(error).__name__}: {error}", now)
            return
        if isinstance(action, Wait):
            break
        if isinstance(action, Finish):
            end(state, "succeeded", "finished", now, answer=action.answer)
            return
        if isinstance(action, Solve | Repair | Plan) and not budget_admits(state):
            break  # the next attempt waits for those in flight: the budget may not cover them all
        reason = apply(state, action)
        if reason is not None:
            end(state, "failed", reason, now)
            return
        propagate(state)  # an aggregate just composed may complete its parent
    if not state.in_flight:
        root = state.root
        assert root is not None
        if root.status == "succeeded":
            end(state, "succeeded", "finished", now, answer=root.answer)
        elif root.status in DONE_BADLY:
            end(state, "failed", f"the task failed: {root.output or root.status}", now)
        elif (part := next((n for n in state.nodes if n.status == "failed"), None)) is not None:
            end(
                state,
                "failed",
                f"the task failed: {part.key} failed, and the policy did not recover: {part.output}",
                now,
            )
        else:
            end(state, "failed", no_progress(state), now)


FAILED = {"error", "timeout"}
EPOCH = datetime.min.replace(tzinfo=UTC)


def no_progress(state: RunState) -> str:
    """Why a run ends with nothing in flight and nothing chosen: the last call that failed, in
    words, when one did (the policy gave up on it), else that nothing was chosen at all."""
    failed = [(node.key, attempt) for node in state.nodes for attempt in node.attempts if attempt.status in FAILED]
    if not failed:
        return "no progress: the policy chose nothing and no attempt is in flight"
    # The latest made (shells set created_at; offline, the order they were made in is the list's).
    key, attempt = max(enumerate(failed), key=lambda found: (found[1][1].created_at or EPOCH, found[0]))[1]
    cause = ERROR_CAUSES.get(attempt.error_kind, attempt.error_kind or attempt.status)
    return (
        f"no progress: {cause}; the policy chose nothing more after that failure "
        f"({key}, attempt {attempt.number}, {attempt.primitive}: {attempt.error_message or attempt.error_kind})"
    )


def violation(state: RunState, action: object, error: Exception) -> None:
    count = int(state.verification.get("protocol_violations", 0)) + 1
    state.verification = {**state.verification, "protocol_violations": count}
    state.changes.run_fields.add("verification")
    state.emit("protocol.violation", action=repr(action)[:500], reason=str(error)[:500], count=count)


def end(state: RunState, status: str, reason: str, now: datetime, answer: str | None = None) -> None:
    """The run ends: attempts still queued are cancelled (never sent), the answer verified."""
    cancelled = 0
    for attempt in state.attempts():
        if attempt.status == "queued":
            attempt.status, attempt.error_kind, attempt.error_message = "cancelled", "cancelled", reason
            attempt.finished_at = now
            cancelled += 1
            if attempt.id is not None:
                state.changes.cancelled.append(attempt)
    state.status = status
    # A reason quotes a provider's error, which may be long: cut it to fit, or the step fails
    # on every try and the run never ends.
    state.end_reason = fit(reason, END_REASON_MAX)
    state.final_answer = answer if answer is not None else partial_answer(state)
    if status == "succeeded":
        state.verification = {**state.verification, **verify(state, state.final_answer)}
        state.changes.verify_answer = bool(state.verification.get("pending"))
    state.finished_at = now
    state.changes.run_fields.update({"status", "end_reason", "final_answer", "verification", "finished_at"})
    state.emit(
        "run.finished", status=status, reason=reason, answer=state.final_answer[:TEXT_IN_EVENTS],
        verification=state.verification, cancelled_attempts=cancelled, tokens_in=state.tokens_in,
        tokens_out=state.tokens_out, cost_usd=float(state.cost_usd), latency_s=state.latency_s,
    )  # fmt: skip


def fit(text: str, max_length: int) -> str:
    return text if len(text) <= max_length else text[: max_length - 1] + "…"


def partial_answer(state: RunState) -> str:
    root = state.root
    if root is not None and root.answer:
        return root.answer
    done = [n for n in state.nodes if n.kind == "subtask" and n.status == "succeeded"]
    return "\n".join(f"{n.key}: {n.answer}" for n in done)


def composite_scores(state: RunState) -> tuple[list[float], int] | None:
    """(the recorded scores known, how many items) of a composite task, down its current tree:
    a node answered whole gives its parts' scores, a split one its current parts', an item
    its own; None before any node took an item (a run that ended before it did anything)."""
    known: list[float] = []
    took = False

    def walk(node: NodeState) -> None:
        nonlocal took
        if node.status == "succeeded" and node.verification.get("part_scores") is not None:
            took = True
            known.extend(float(s) for s in node.verification["part_scores"])
        elif node.kind == "subtask" and node.metadata.get("item_id"):
            took = True
            score = node.verification.get("recorded_score") if node.status == "succeeded" else None
            known.extend([float(score)] if score is not None else [])
        else:
            for part in state.parts(node):
                walk(part)

    if state.root is not None:
        walk(state.root)
    return (known, len(leaves(state.spec.task_metadata["items"]))) if took else None


def verify(state: RunState, answer: str) -> dict[str, Any]:
    """How right the answer is: the composite rule, a recorded score, or the benchmark's checker."""
    spec = state.spec
    if spec.task_metadata.get("items"):
        found = composite_scores(state)
        if found is not None:
            known, count = found
            score = sum(known) / count
            correct = len(known) == count and all(s >= 1.0 for s in known)
            return {"method": "composite", "score": score, "correct": correct, "items": count}
    root = state.root
    recorded = root.verification.get("recorded_score") if root is not None else None
    if recorded is not None:
        return {"method": "recorded_score", "score": recorded, "correct": recorded >= 1.0}
    checker = spec.checker or spec.benchmark
    if spec.has_gold_answer and has_checker(checker):
        # A worker checks it (studio.services.verification): a checker may run code in the
        # sandbox, which has no place under the run's row lock.
        return {"method": "checker", "checker": checker, "pending": True}
    return {}
