"""The orchestration core on its own: plain state in, decisions and changes out, no database.

Each case runs a task through `offline.shell.run_offline` with the default policy and a few
recordings, and reads the tree, the run's end and the changes the core listed for a shell.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from orchestrator.core import RunSpec, RunState, start, step
from orchestrator.core.protocol import Observation, Pair, PairRef, Solve
from orchestrator.core.state import AttemptState
from orchestrator.offline.shell import RecordedExecutor, Recording, run_offline
from orchestrator.policies.default import DefaultConfig, DefaultPolicy

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
    # The real cause, named: the last call that failed, in words, then its own message.
    assert state.end_reason == (
        "no progress: no recording answers this prompt; the policy chose nothing more after that failure "
        "(root.item2, attempt 2, direct: no recording of dear/direct for item 'q2')"
    ), state.end_reason
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


# --- recovery: repair the part, then replan, then solve the whole directly ---

PLANNER = Pair(PairRef(1, "plan"), "scripted/cheap", 0.1, 0.1)
PLAN_A = [
    {"id": "a", "text": "What is 2+3?", "depends_on": []},
    {"id": "b", "text": "Divide by zero.", "depends_on": []},
]
PLAN_B = [{"id": "a", "text": "What is 2+3?", "depends_on": []}, {"id": "c", "text": "What is 4*5?", "depends_on": []}]


class Scripted:
    """Answers attempts by their prompt; "Divide by zero." fails on every pair; the planner's
    first plan has that part, its plan after feedback does not. Records every request."""

    def __init__(self, *, whole: bool = True) -> None:
        self.requests: list[tuple[str, dict[str, object]]] = []
        self.whole = whole

    def execute(self, attempt: AttemptState) -> float:
        self.requests.append((attempt.primitive, dict(attempt.request)))
        prompt = str(attempt.request["prompt"])
        if attempt.primitive == "plan":
            plan = PLAN_B if attempt.request.get("feedback") else PLAN_A
            attempt.status, attempt.envelope = "ok", {"status": "ok", "artifacts": {"plan": plan}}
            return 0.0
        answers = {"What is 2+3?": "5", "What is 4*5?": "20", "Add two and three.": "5" if self.whole else None}
        answer = answers.get(prompt)
        if answer is None:
            attempt.status, attempt.error_kind, attempt.error_message = "error", "bad_request", "cannot"
            return 0.0
        attempt.status, attempt.envelope = "ok", {"status": "ok", "output": answer, "answer": answer}
        return 0.0


def test_a_part_that_fails_on_every_pair_is_replanned_with_feedback_and_the_run_succeeds() -> None:
    executor = Scripted()
    spec = RunSpec(task_text="Add two and three.", decomposable=True)
    state = run_offline(spec, DefaultPolicy(DefaultConfig()), (*PAIRS, PLANNER), executor)
    assert state.status == "succeeded", state.end_reason
    b = state.node("root.b")
    assert b is not None and [a.endpoint_id for a in b.attempts] == [1, 2]  # repaired with the other pair first
    assert b.status == "cancelled"  # then its round was closed
    first_a = state.node("root.a")
    assert first_a is not None and first_a.status == "succeeded"  # kept as it ended
    plans = [request for primitive, request in executor.requests if primitive == "plan"]
    assert len(plans) == 2 and "feedback" not in plans[0]
    assert "part b ('Divide by zero.') failed: bad_request" in str(plans[1]["feedback"])
    root = state.root
    assert root is not None and root.metadata["replans"] == 1
    assert [n.key for n in state.parts(root)] == ["root.a_r1", "root.c_r1", "root.aggregate_r1"]
    assert state.final_answer == "a: 5\nc: 20"


def test_after_its_replans_a_task_is_solved_directly() -> None:
    class AlwaysBadPlan(Scripted):
        def execute(self, attempt: AttemptState) -> float:
            if attempt.primitive == "plan":
                attempt.request = {**attempt.request, "feedback": ""}  # the planner never learns
            return super().execute(attempt)

    executor = AlwaysBadPlan()
    spec = RunSpec(task_text="Add two and three.", decomposable=True)
    state = run_offline(spec, DefaultPolicy(DefaultConfig()), (*PAIRS, PLANNER), executor)
    assert state.status == "succeeded" and state.final_answer == "5"
    root = state.root
    assert root is not None and root.metadata["replans"] == 2  # planned twice, then solved whole
    assert [p for p, _ in executor.requests].count("plan") == 2
    assert root.attempts[-1].primitive == "direct" and root.accepted == len(root.attempts)


def test_each_planner_outcome_is_counted_on_the_run() -> None:
    """`verification.plans`: a plan valid at once, one valid after the repair prompt, and one
    invalid twice (the task is then solved whole) are each counted."""

    class Planner(Scripted):
        def __init__(self, outcome: str) -> None:
            super().__init__()
            self.outcome = outcome

        def execute(self, attempt: AttemptState) -> float:
            if attempt.primitive != "plan":
                return super().execute(attempt)
            self.requests.append(("plan", dict(attempt.request)))
            if self.outcome == "fell_back":
                attempt.status, attempt.error_kind, attempt.error_message = "error", "parse", "invalid twice"
            else:
                artifacts = {"plan": PLAN_B, "repaired": self.outcome == "repaired"}
                attempt.status, attempt.envelope = "ok", {"status": "ok", "artifacts": artifacts}
            return 0.0

    for outcome in ("parsed", "repaired", "fell_back"):
        spec = RunSpec(task_text="Add two and three.", decomposable=True)
        state = run_offline(spec, DefaultPolicy(DefaultConfig()), (*PAIRS, PLANNER), Planner(outcome))
        assert state.status == "succeeded", (outcome, state.end_reason)
        assert state.verification["plans"] == {outcome: 1}
        assert state.final_answer == ("5" if outcome == "fell_back" else "a: 5\nc: 20")


def test_a_lost_part_cancels_its_slow_siblings_at_once_then_replans() -> None:
    """The policy acts while a sibling still runs: the step after one part is lost cancels
    the part in flight (its call left to finish, its answer dropped) and replans, without
    waiting for it."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    state = RunState(spec=RunSpec(task_text="Add two and three.", decomposable=True))
    start(state, now, root_metadata={})
    policy = DefaultPolicy(DefaultConfig())
    pairs = (CHEAP, PLANNER)  # one pair: a failed part has nothing left to try
    step(state, policy, pairs, now)
    plan = state.root.attempts[0]  # type: ignore[union-attr]
    plan.status, plan.envelope = "ok", {"artifacts": {"plan": PLAN_A}}
    step(state, policy, pairs, now)
    a, b = state.node("root.a"), state.node("root.b")
    assert a is not None and b is not None and a.attempts and b.attempts
    a.attempts[0].status = "running"  # slow: still out when b fails
    b.attempts[0].status, b.attempts[0].error_kind = "error", "bad_request"
    state.take_changes()
    step(state, policy, pairs, now)
    events = [(t, p.get("key")) for t, p in state.take_changes().events]
    assert ("node.cancelled", "root.a") in events and ("node.replanned", "root") in events
    assert events.index(("node.cancelled", "root.a")) < events.index(("node.replanned", "root"))
    assert a.status == "cancelled" and a.attempts[0].status == "running"  # left to finish
    assert b.status == "cancelled" and state.root.status == "running"  # type: ignore[union-attr]
    assert state.root.attempts[-1].primitive == "plan"  # type: ignore[union-attr]  # planned anew at once
    assert state.status == "running"
    # The slow call comes back: its answer is dropped; the new round goes on.
    a.attempts[0].status, a.attempts[0].envelope = "ok", {"answer": "5", "output": "5"}
    step(state, policy, pairs, now)
    assert a.status == "cancelled" and a.answer == ""


def test_replan_and_cancel_are_checked() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    state = run_offline(_composite(), DefaultPolicy(DefaultConfig()), PAIRS, _executor())
    from orchestrator.core.observe import observe
    from orchestrator.core.protocol import Cancel, ProtocolViolation, Replan, check_action

    seen = observe(state, PAIRS, now)
    for action, says in (
        (Cancel("root"), "the root is not cancelled"),
        (Cancel("root.item1"), "is succeeded"),
        (Replan("root.item1"), "not decomposed"),
        (Replan("root"), "not decomposed"),  # it succeeded: nothing is running
    ):
        try:
            check_action(action, seen)
        except ProtocolViolation as error:
            assert says in str(error)
        else:
            raise AssertionError(f"{action} passed")
