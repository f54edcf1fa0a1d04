"""The orchestration core on its own: plain state in, decisions and changes out, no database.

Each case runs a task through `core.offline.run_offline` with the default policy and a few
recordings, and reads the tree, the run's end and the changes the core listed for a shell.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from orchestrator.core import RunSpec, RunState, start, step
from orchestrator.core.offline import RecordedExecutor, Recording, run_offline
from orchestrator.policies.default import DefaultConfig, DefaultPolicy
from orchestrator.protocol import Observation, Pair, PairRef, Solve

CHEAP, DEAR = Pair(PairRef(1, "direct"), "replay/cheap", 0.1, 0.1), Pair(PairRef(2, "direct"), "replay/dear", 5.0, 5.0)
PAIRS = (CHEAP, DEAR)
MODELS = {1: "cheap", 2: "dear"}
ITEMS = [{"item_id": "q1", "prompt": "2 + 2?"}, {"item_id": "q2", "prompt": "3 + 3?"}]


def _executor(**missing: bool) -> RecordedExecutor:
    recordings = {
        ("q1", "cheap", "direct"): Recording("4", 1.0, cost_usd=0.001),
        ("q1", "dear", "direct"): Recording("4", 1.0, cost_usd=0.01),
        ("q2", "cheap", "direct"): Recording("7", 0.0, cost_usd=0.001),
        ("q2", "dear", "direct"): Recording("6", 1.0, cost_usd=0.01),
    }
    return RecordedExecutor({k: v for k, v in recordings.items() if not missing.get(f"{k[0]}_{k[1]}")}, MODELS)


def _composite(**limits: object) -> RunSpec:
    return RunSpec(task_text="Both sums.", task_metadata={"items": ITEMS}, decomposable=True, **limits)  # type: ignore[arg-type]


def test_a_composite_task_runs_its_items_together_then_aggregates() -> None:
    state = run_offline(_composite(), DefaultPolicy(DefaultConfig()), PAIRS, _executor())
    assert state.status == "succeeded", state.end_reason
    keys = [node.key for node in state.nodes]
    assert keys == ["root", "root.item1", "root.item2", "root.aggregate"]
    item1, item2 = state.nodes[1], state.nodes[2]
    # Both items went out in the first round (the cheapest pair), not one after the other.
    assert [a.endpoint_id for a in item1.attempts] == [1] and [a.endpoint_id for a in item2.attempts] == [1]
    assert state.nodes[3].depends_on == ["root.item1", "root.item2"]
    assert state.final_answer == "item1: 4\nitem2: 7"
    assert state.verification == {"method": "composite", "score": 0.5, "correct": False, "items": 2}
    assert state.cost_usd == Decimal("0.002")


def test_a_pair_without_a_recording_is_repaired_with_the_next() -> None:
    state = run_offline(_composite(), DefaultPolicy(DefaultConfig()), PAIRS, _executor(q1_cheap=True))
    item1 = state.node("root.item1")
    assert item1 is not None and item1.status == "succeeded"
    assert [(a.endpoint_id, a.status) for a in item1.attempts] == [(1, "error"), (2, "ok")]
    assert item1.attempts[0].error_kind == "no_recording" and item1.accepted == 2


def test_an_item_no_pair_can_answer_ends_the_run_with_the_partial_answer() -> None:
    state = run_offline(_composite(), DefaultPolicy(DefaultConfig()), PAIRS, _executor(q2_cheap=True, q2_dear=True))
    item2 = state.node("root.item2")
    assert item2 is not None and [a.status for a in item2.attempts] == ["error", "error"]
    assert state.status == "failed"
    assert state.end_reason == "no progress: the policy chose nothing and no attempt is in flight"
    assert state.final_answer == "root.item1: 4"  # the partial answer


def test_a_decomposition_past_the_node_budget_ends_the_run() -> None:
    state = run_offline(_composite(max_nodes=3), DefaultPolicy(DefaultConfig()), PAIRS, _executor())
    assert state.status == "failed"
    assert state.end_reason == "budget: decomposing root would make 4 nodes; the limit is 3"
    assert [node.key for node in state.nodes] == ["root"]


class Outsider(DefaultPolicy):
    """Solves with a pair that is not admissible: every action is a protocol violation."""

    def act(self, observation: Observation) -> Solve:
        return Solve("root", PairRef(99, "direct"))


def test_a_violation_is_counted_and_never_carried_out() -> None:
    state = RunState(spec=RunSpec(task_text="2 + 2?", task_metadata={"item_id": "q1"}))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    start(state, now, root_metadata={"item_id": "q1"})
    step(state, Outsider(DefaultConfig()), PAIRS, now)
    changes = state.take_changes()
    assert state.verification["protocol_violations"] == 3  # then the step stops asking
    assert not changes.new_attempts and state.status == "failed"
    assert [t for t, _ in changes.events].count("protocol.violation") == 3
    assert "verification" in changes.run_fields and changes.events[-1][0] == "run.finished"


def test_a_cost_budget_waits_for_the_attempts_in_flight() -> None:
    """With a cost limit, a second attempt is not sent while one is in flight whose cost is
    unknown: the next step decides once it is back."""
    spec = _composite(max_cost_usd=Decimal("0.05"))
    state = RunState(spec=spec)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    start(state, now, root_metadata={})
    step(state, DefaultPolicy(DefaultConfig()), PAIRS, now)
    changes = state.take_changes()
    assert [(node.key, a.number) for node, a, _ in changes.new_attempts] == [("root.item1", 1)]
    assert [node.key for node in changes.new_nodes] == ["root", "root.item1", "root.item2", "root.aggregate"]
