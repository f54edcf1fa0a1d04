"""The action protocol: what is a violation, and what the default policy does."""

from __future__ import annotations

import pytest

from orchestrator.core.protocol import (
    Aggregate,
    AttemptView,
    Budget,
    Decompose,
    Finish,
    NodeView,
    Observation,
    Pair,
    PairRef,
    Plan,
    ProtocolViolation,
    Repair,
    Solve,
    SubtaskSpec,
    Wait,
    check_action,
)
from orchestrator.planner import PlanError, parse_plan
from orchestrator.policies import make_policy, policy_names
from orchestrator.policies.default import DefaultPolicy

CHEAP, DEAR = PairRef(1, "direct"), PairRef(2, "direct")
PAIRS = (
    Pair(CHEAP, "openai/cheap", 0.1, 0.2),
    Pair(DEAR, "openai/dear", 10.0, 30.0),
    Pair(PairRef(2, "plan"), "openai/dear", 10.0, 30.0),
)


def observe(*nodes: NodeView, decomposable: bool = False, metadata: dict | None = None) -> Observation:
    return Observation(
        task_text="t", decomposable=decomposable, nodes=nodes, budget_left=Budget(), pairs=PAIRS,
        task_metadata=metadata or {},
    )  # fmt: skip


def root(**fields: object) -> NodeView:
    base: dict[str, object] = {"key": "root", "kind": "root", "text": "t", "status": "ready", "depth": 0}
    base.update(fields)
    return NodeView(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (Solve("root", PairRef(9, "direct")), "not admissible"),
        (Solve("nope", CHEAP), "no node"),
        (Repair("root", DEAR), "no failed attempt"),
        (Aggregate("root"), "not an aggregate node"),
        ("solve everything", "not an action"),
        (Decompose("root", ()), "at least one subtask"),
        (Decompose("root", (SubtaskSpec("a", "x"), SubtaskSpec("a", "y"))), "unique"),
        (Decompose("root", (SubtaskSpec("a", "x", ("b",)), SubtaskSpec("b", "y", ("a",)))), "cycle"),
        (Decompose("root", (SubtaskSpec("a", "x", ("zz",)),)), "unknown"),
        (Decompose("root", tuple(SubtaskSpec(f"s{i}", "x") for i in range(40))), "at most"),
    ],
)
def test_violations_are_refused(action: object, reason: str) -> None:
    with pytest.raises(ProtocolViolation, match=reason):
        check_action(action, observe(root()))


def test_a_node_with_an_attempt_in_flight_cannot_be_solved_again() -> None:
    busy = root(status="running", attempts=(AttemptView(CHEAP, "running"),))
    with pytest.raises(ProtocolViolation):
        check_action(Solve("root", CHEAP), observe(busy))


def test_default_policy_solves_with_the_preferred_pair_else_the_cheapest() -> None:
    assert make_policy("default").act(observe(root())) == Solve("root", CHEAP)
    preferring = make_policy("default", {"pairs": [[2, "direct"]]})
    assert preferring.act(observe(root())) == Solve("root", DEAR)


def test_default_policy_retries_transient_errors_then_repairs() -> None:
    policy = make_policy("default", {"retries": 1})
    once = root(attempts=(AttemptView(CHEAP, "error", "rate_limit"),))
    assert policy.act(observe(once)) == Solve("root", CHEAP)
    twice = root(attempts=(AttemptView(CHEAP, "error", "rate_limit"), AttemptView(CHEAP, "error", "rate_limit")))
    assert policy.act(observe(twice)) == Repair("root", DEAR)
    permanent = root(attempts=(AttemptView(CHEAP, "error", "auth"),))
    assert policy.act(observe(permanent)) == Repair("root", DEAR)
    exhausted = root(attempts=(AttemptView(CHEAP, "error", "auth"), AttemptView(DEAR, "error", "auth")))
    assert isinstance(policy.act(observe(exhausted)), Wait)


def test_an_endpoint_that_cannot_take_the_prompt_is_not_tried_with_its_other_primitives() -> None:
    """A refused key, an unknown model or a prompt past the context fails every primitive of
    that endpoint alike: the repair goes to another endpoint, or there is none."""
    cheap_cot = PairRef(1, "cot")
    pairs = (Pair(CHEAP, "openai/cheap", 0.1, 0.2), Pair(cheap_cot, "openai/cheap", 0.1, 0.2),
             Pair(DEAR, "openai/dear", 10.0, 30.0))  # fmt: skip
    policy = make_policy("default")
    for kind in ("context_length", "auth", "not_found"):
        failed = root(attempts=(AttemptView(CHEAP, "error", kind),))
        observation = Observation(task_text="t", decomposable=False, nodes=(failed,), budget_left=Budget(), pairs=pairs)
        assert policy.act(observation) == Repair("root", DEAR)
        alone = Observation(task_text="t", decomposable=False, nodes=(failed,), budget_left=Budget(), pairs=pairs[:2])
        assert isinstance(policy.act(alone), Wait)
    # Any other failure of a pair leaves the endpoint's other primitives to try.
    parse = root(attempts=(AttemptView(CHEAP, "error", "parse"),))
    observation = Observation(task_text="t", decomposable=False, nodes=(parse,), budget_left=Budget(), pairs=pairs)
    assert policy.act(observation) == Repair("root", cheap_cot)


def test_a_live_critic_reviews_an_answer_and_never_solves_a_fresh_node() -> None:
    live_verify = PairRef(3, "verify")
    pairs = (Pair(live_verify, "openai/smollm2", 0.0, 0.0), Pair(CHEAP, "openai/cheap", 0.1, 0.2))
    fresh = Observation(task_text="t", decomposable=False, nodes=(root(),), budget_left=Budget(), pairs=pairs)
    assert make_policy("default").act(fresh) == Solve("root", CHEAP)  # the critic is cheaper, but has nothing to judge
    answered = root(attempts=(AttemptView(CHEAP, "error", "parse"), AttemptView(CHEAP, "ok")))
    policy = make_policy("default")
    assert isinstance(policy, DefaultPolicy) and live_verify in policy._candidates(answered, fresh)
    given = Observation(task_text="t", decomposable=False, nodes=(root(),), budget_left=Budget(), pairs=pairs,
                        task_metadata={"candidate": "42"})  # fmt: skip
    assert policy.act(given) == Solve("root", live_verify)


def test_live_reflexion_needs_the_tasks_unit_tests() -> None:
    reflexion = PairRef(3, "reflexion")
    pairs = (Pair(reflexion, "openai/smollm2", 0.0, 0.0), Pair(CHEAP, "openai/cheap", 0.1, 0.2))

    def act(metadata: dict[str, object]) -> object:
        observation = Observation(task_text="t", decomposable=False, nodes=(root(),), budget_left=Budget(),
                                  pairs=pairs, task_metadata=metadata)  # fmt: skip
        return make_policy("default").act(observation)

    assert act({}) == Solve("root", CHEAP)
    assert act({"tests": ["assert f(1) == 2"]}) == Solve("root", reflexion)


def test_default_policy_plans_decomposable_tasks_then_decomposes() -> None:
    policy = make_policy("default")
    assert policy.act(observe(root(), decomposable=True)) == Plan("root", PairRef(2, "plan"))
    plan = (SubtaskSpec("a", "x"),)
    assert policy.act(observe(root(plan=plan), decomposable=True)) == Decompose("root", plan)
    # A failed plan falls back to solving directly.
    assert policy.act(observe(root(plan_failed=True), decomposable=True)) == Solve("root", CHEAP)


def test_a_composite_task_is_split_into_its_items_without_a_planner() -> None:
    items = [{"item_id": "i1", "prompt": "p1"}, {"item_id": "i2", "prompt": "p2"}]
    action = make_policy("default").act(observe(root(), decomposable=True, metadata={"items": items}))
    assert isinstance(action, Decompose)
    assert [(s.id, s.item_id, s.text) for s in action.subtasks] == [
        ("item1", "i1", "p1"),
        ("item2", "i2", "p2"),
    ]


def test_recorded_items_are_solved_with_a_recorded_pair() -> None:
    item = NodeView(
        key="root.item1", kind="subtask", text="p", status="ready", depth=1,
        metadata={"item_id": "i1", "recorded_pairs": [["dear", "direct"]]},
    )  # fmt: skip
    replay_pairs = (Pair(CHEAP, "replay/cheap", 0.1, 0.2), Pair(DEAR, "replay/dear", 10.0, 30.0))
    observation = Observation(
        task_text="t",
        decomposable=True,
        nodes=(root(status="running"), item),
        budget_left=Budget(),
        pairs=replay_pairs,
    )
    # The cheaper pair has no recording of this item, so it is not a candidate.
    assert make_policy("default").act(observation) == Solve("root.item1", DEAR)


def test_a_prompt_no_recording_answers_goes_to_a_live_endpoint() -> None:
    """The recordings were looked up and none answers (a user's own prompt): the replay pairs,
    dear or cheap, are not candidates; the live one is. A recorded prompt keeps its recordings.
    A pool with nothing live still tries replay, which fails with its own clear error."""
    live = PairRef(3, "direct")
    pairs = (
        Pair(CHEAP, "replay/cheap", 0.01, 0.01),
        Pair(DEAR, "replay/dear", 10.0, 30.0),
        Pair(live, "openai/smollm2", 0.1, 0.1),
    )

    def act(recorded: list[list[str]], pool: tuple[Pair, ...] = pairs) -> object:
        node = root(metadata={"recorded_pairs": recorded})
        observation = Observation(task_text="t", decomposable=False, nodes=(node,), budget_left=Budget(), pairs=pool)
        return make_policy("default").act(observation)

    assert act([]) == Solve("root", live)
    assert act([["dear", "direct"]]) == Solve("root", DEAR)
    assert act([], pairs[:2]) == Solve("root", CHEAP)


def test_default_policy_aggregates_and_finishes() -> None:
    aggregate = NodeView(key="root.aggregate", kind="aggregate", text="c", status="ready", depth=1)
    policy = make_policy("default")
    assert policy.act(observe(root(status="running"), aggregate)) == Aggregate("root.aggregate")
    assert policy.act(observe(root(status="succeeded", answer="56"))) == Finish("56")


def test_unknown_policy_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="default"):
        make_policy("clairvoyant")
    assert "default" in policy_names()


PLAN = '{"subtasks": [{"id": "a", "text": "x"}, {"id": "b", "text": "y", "depends_on": ["a"], "primitive": "cot"}]}'


def test_planner_parses_a_plan_also_inside_a_fence() -> None:
    for reply in (PLAN, f"Here you go:\n```json\n{PLAN}\n```"):
        specs = parse_plan(reply)
        assert [(s.id, s.depends_on, s.primitive) for s in specs] == [("a", (), None), ("b", ("a",), "cot")]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("no json here", "not JSON"),
        ('{"subtasks": []}', "subtasks"),
        ('{"subtasks": [{"id": "a"}]}', "text"),
        ('{"subtasks": [{"id": "a", "text": "x", "depends_on": ["a"]}]}', "itself"),
        ('{"subtasks": [{"id": "a", "text": "x", "depends_on": ["b"]}, {"id": "b", "text": "y", "depends_on": ["a"]}]}',
         "cycle"),
        ('{"subtasks": [' + ",".join(f'{{"id": "s{i}", "text": "x"}}' for i in range(13)) + "]}", "subtasks"),
    ],
)  # fmt: skip
def test_planner_rejects_bad_plans_with_a_reason(reply: str, reason: str) -> None:
    with pytest.raises(PlanError, match=reason):
        parse_plan(reply)


def test_an_endpoint_without_prices_is_not_taken_for_free() -> None:
    unpriced = Pair(PairRef(3, "direct"), "openai/unknown")
    observation = Observation(
        task_text="t", decomposable=False, nodes=(root(),), budget_left=Budget(), pairs=(unpriced, *PAIRS)
    )
    assert make_policy("default").act(observation) == Solve("root", CHEAP)
