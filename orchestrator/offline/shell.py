"""The offline shell: a run of the orchestration core with no database and no worker, its
attempts answered from a recorded outcome table with the replay provider's semantics.

The recorded response of (item, model, primitive) is the attempt's output, its score the
recorded score, its cost the recorded cost; a pair with no recording fails, as replay
fails a call it has no recording for. A call that takes a composite node whole (its request
lists the leaves' `items`) answers each part with the pair's recording of it, part by part,
at the sum of their costs: no interference between the parts (`composite.items`).
Attempts queued in one step run together: the clock moves on by the slowest one's recorded
latency (0 where none is recorded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

import numpy as np

from orchestrator.core.items import composite_answer
from orchestrator.core.policy import Policy
from orchestrator.core.protocol import Pair, PairRef
from orchestrator.core.state import RUN_ENDED, AttemptState, RunSpec, RunState
from orchestrator.core.step import end, recorded_metadata, start, step_many
from orchestrator.routing.methods import Routes
from orchestrator.routing.table import OutcomeTable

MAX_STEPS = 100  # steps of one run (a step is one round of attempts)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Recording:
    """What a pair answered for an item."""

    response: str | None
    score: float
    cost_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0


class Executor(Protocol):
    def execute(self, attempt: AttemptState) -> float:
        """Finish the attempt (its status, envelope, cost); return its latency in seconds."""
        ...


class RecordedExecutor:
    """Answers attempts from `recordings[(item_id, model, primitive)]`; `models` names each
    endpoint's model (as a replay endpoint's `replay/<model>` does), `extract` reads the
    answer out of an output (the primitive's rule; by default the output itself)."""

    def __init__(
        self,
        recordings: Mapping[tuple[str, str, str], Recording],
        models: Mapping[int, str],
        *,
        extract: Callable[[str, str], str | None] | None = None,
    ) -> None:
        self.recordings, self.models = recordings, models
        self.extract = extract or (lambda primitive, output: output)

    def execute(self, attempt: AttemptState) -> float:
        """Finish the attempt; return its latency in seconds."""
        item_id = attempt.request.get("item_id")
        parts = [str(i) for i in attempt.request.get("items") or ()]
        model = self.models.get(attempt.endpoint_id, "").removeprefix("replay/")
        wanted = parts or ([str(item_id)] if item_id else [])
        found = [self.recordings.get((i, model, attempt.primitive)) for i in wanted]
        missing = [i for i, f in zip(wanted, found, strict=True) if f is None]
        if not wanted or missing:
            attempt.status, attempt.error_kind = "error", "no_recording"
            what = missing[0] if missing else item_id
            attempt.error_message = f"no recording of {model}/{attempt.primitive} for item {what!r}"
            return 0.0
        recorded = [f for f in found if f is not None]
        if parts:  # one call answers every part: each with its own recording (no interference)
            output = composite_answer([f.response or "" for f in recorded])
            answer: str | None = composite_answer(
                [self.extract(attempt.primitive, f.response or "") or "" for f in recorded]
            )
            scores = [f.score for f in recorded]
            artifacts = {"replay": True, "recorded_score": sum(scores) / len(scores), "part_scores": scores}
        else:
            output = recorded[0].response or ""
            artifacts = {"replay": True, "recorded_score": recorded[0].score, "item_id": item_id}
            answer = self.extract(attempt.primitive, output) if output else None
        attempt.status = "ok"
        attempt.cost_usd = sum((Decimal(str(f.cost_usd)) for f in recorded), Decimal(0))
        attempt.envelope = {
            "status": "ok",
            "output": output,
            "answer": answer,
            "artifacts": {**artifacts, "items": parts} if parts else artifacts,
            "tokens_in": sum(f.tokens_in for f in recorded),
            "tokens_out": sum(f.tokens_out for f in recorded),
        }
        return max(f.latency_s for f in recorded)


def run_offline(
    spec: RunSpec,
    policy: Policy,
    pairs: tuple[Pair, ...],
    executor: Executor,
    *,
    root_metadata: Mapping[str, Any] | None = None,
    max_steps: int = MAX_STEPS,
) -> RunState:
    """Run a task to its end through the core; the state holds its tree and attempts."""
    return run_many([(spec, root_metadata or {})], policy, pairs, executor, max_steps=max_steps)[0]


def run_many(
    tasks: Sequence[tuple[RunSpec, Mapping[str, Any]]],
    policy: Policy,
    pairs: tuple[Pair, ...],
    executor: Executor,
    *,
    max_steps: int = MAX_STEPS,
) -> list[RunState]:
    """Run tasks (spec, root metadata) to their ends through the core in lockstep: each step
    moves every run still going on (`core.step.step_many`: the policy decides for all of them
    at once), then executes their queued attempts. Each run has its own clock and ends as it
    would alone."""
    states = [RunState(spec=spec) for spec, _ in tasks]
    clocks = [EPOCH] * len(states)
    for state, (_, metadata) in zip(states, tasks, strict=True):
        start(state, EPOCH, root_metadata=dict(metadata))
    going = list(range(len(states)))
    for _ in range(max_steps):
        if not going:
            return states
        step_many([(states[i], clocks[i]) for i in going], policy, pairs)
        still = []
        for i in going:
            state = states[i]
            state.take_changes()
            if state.status in RUN_ENDED:
                continue
            clocks[i] += timedelta(seconds=execute_queued(state, executor))
            still.append(i)
        going = still
    for i in going:
        end(states[i], "failed", f"no end after {max_steps} steps", clocks[i])
        states[i].take_changes()
    return states


def execute_queued(state: RunState, executor: Executor) -> float:
    """Execute the run's queued attempts together, adding up their cost and tokens; return the
    slowest one's latency, by which the run's clock moves on."""
    latency = 0.0
    for attempt in state.attempts():
        if attempt.status != "queued":
            continue
        latency = max(latency, executor.execute(attempt))
        state.cost_usd += attempt.cost_usd
        state.tokens_in += int(attempt.envelope.get("tokens_in", 0))
        state.tokens_out += int(attempt.envelope.get("tokens_out", 0))
    state.latency_s += latency
    return latency


# A recorded outcome table as a pool: column j is endpoint j + 1, `replay/<model>`.


def table_pairs(table: OutcomeTable, prices: Mapping[str, Mapping[str, float]] | None = None) -> tuple[Pair, ...]:
    """The table's columns as admissible pairs, priced per million tokens where `prices` says."""
    found = []
    for j, (model, primitive) in enumerate(table.pairs):
        price = (prices or {}).get(model, {})
        found.append(
            Pair(
                ref=PairRef(j + 1, primitive),
                model=f"replay/{model}",
                input_cost_per_mtok=price.get("input_per_mtok"),
                output_cost_per_mtok=price.get("output_per_mtok"),
            )
        )
    return tuple(found)


def table_executor(table: OutcomeTable) -> RecordedExecutor:
    score, cost = table.score.tolist(), np.nan_to_num(table.cost).tolist()
    tokens_in, tokens_out = np.nan_to_num(table.tokens_in).tolist(), np.nan_to_num(table.tokens_out).tolist()
    recordings = {
        (item_id, model, primitive): Recording(
            response=table.responses[i][j],
            score=score[i][j],
            cost_usd=cost[i][j],
            tokens_in=int(tokens_in[i][j]),
            tokens_out=int(tokens_out[i][j]),
        )  # fmt: skip
        for i, item_id in enumerate(table.item_ids)
        for j, (model, primitive) in enumerate(table.pairs)
        if not math.isnan(score[i][j])
    }
    return RecordedExecutor(recordings, {j + 1: model for j, (model, _) in enumerate(table.pairs)})


class TableRuns:
    """A recorded table's items as single-item tasks through the core, made ready once (the
    pool, the executor, each task's spec and root metadata) and routed at any λ."""

    def __init__(self, table: OutcomeTable, pairs: tuple[Pair, ...] | None = None) -> None:
        self.table, self.pairs = table, pairs if pairs is not None else table_pairs(table)
        self.executor = table_executor(table)
        self.tasks = []
        for i, item_id in enumerate(table.item_ids):
            recorded = [table.pairs[j] for j in np.flatnonzero(~np.isnan(table.score[i]))]
            spec = RunSpec(
                task_text=table.prompts[i], policy="learned", domain=table.domains[i], benchmark=table.benchmarks[i],
            )  # fmt: skip
            self.tasks.append((spec, recorded_metadata(item_id, recorded, table.domains[i], table.benchmarks[i])))

    def route(self, policy: Policy, *, lam: float) -> tuple[Routes, list[RunState]]:
        """Every item at λ, all in lockstep (`run_many`): the pairs its root called, in order, and
        the one whose answer it accepted (-1 for none), as `Routes` over the table's columns."""
        tasks = [(replace(spec, cost_preference=lam), metadata) for spec, metadata in self.tasks]
        states = run_many(tasks, policy, self.pairs, self.executor)
        executed, final = [], []
        for state in states:
            root = state.root
            assert root is not None
            calls = [a for a in root.attempts if a.primitive != "plan" and a.status != "cancelled"]
            executed.append(tuple(a.endpoint_id - 1 for a in calls))
            accepted = root.attempts[root.accepted - 1] if root.accepted and root.status == "succeeded" else None
            final.append(accepted.endpoint_id - 1 if accepted is not None else -1)
        return Routes(executed=executed, final=final), states


def route_table(
    table: OutcomeTable, policy: Policy, *, lam: float, pairs: tuple[Pair, ...] | None = None
) -> tuple[Routes, list[RunState]]:
    """Each item as a single-item task through the core, all in lockstep (`TableRuns.route`)."""
    return TableRuns(table, pairs).route(policy, lam=lam)
