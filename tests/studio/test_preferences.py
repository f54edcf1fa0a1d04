"""Preference services and selectors: pairs, labels, the plan of a run, and the labeling
queue; a labeler reads the runs it judges. Agreement, export and import are in
test_preferences_export.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from orchestrator.reward.plans import Plan
from studio.errors import Conflict, Forbidden, Invalid, NotFound
from studio.models import Node, PreferenceLabel, PreferencePair, Role, User
from studio.selectors import preferences as selectors
from studio.selectors.plans import run_plan
from studio.selectors.preferences import display_swap, labeling_progress, labeling_queue
from studio.services.preferences import pair_create, pair_label
from tests.factories import EndpointFactory, PrimitiveFactory, RunFactory, TaskFactory
from tests.support.preferences import finished_run, make_pair

pytestmark = pytest.mark.django_db


# --- pair_create ---------------------------------------------------------------------


def test_a_researcher_pairs_two_finished_runs_of_a_task(researcher: User) -> None:
    task = TaskFactory()
    a, b = finished_run(task), RunFactory(task=task, status="failed")
    pair = pair_create(user=researcher, run_a_id=a.pk, run_b_id=b.pk, metadata={"note": "x"})
    assert (pair.task_id, pair.run_a_id, pair.run_b_id, pair.source) == (task.pk, a.pk, b.pk, "human")
    assert pair.created_by == researcher and pair.metadata == {"note": "x"}


def test_the_same_runs_in_either_order_are_a_conflict(researcher: User) -> None:
    task = TaskFactory()
    a, b = finished_run(task), finished_run(task)
    first = pair_create(user=researcher, run_a_id=a.pk, run_b_id=b.pk)
    for run_a, run_b in ((a, b), (b, a)):
        with pytest.raises(Conflict, match=f"already pair {first.pk}"):
            pair_create(user=researcher, run_a_id=run_a.pk, run_b_id=run_b.pk)
    assert PreferencePair.objects.count() == 1


def test_a_pair_must_be_two_finished_runs_of_one_task(researcher: User) -> None:
    task = TaskFactory()
    a = finished_run(task)
    other = finished_run(TaskFactory())
    running = RunFactory(task=task, status="running")
    with pytest.raises(Invalid, match="two different runs"):
        pair_create(user=researcher, run_a_id=a.pk, run_b_id=a.pk)
    with pytest.raises(Invalid, match=f"run {a.pk} is of task {task.pk} and run {other.pk} of task {other.task_id}"):
        pair_create(user=researcher, run_a_id=a.pk, run_b_id=other.pk)
    with pytest.raises(Invalid, match=f"Run {running.pk} is still running"):
        pair_create(user=researcher, run_a_id=a.pk, run_b_id=running.pk)
    with pytest.raises(NotFound, match="Run 999999 does not exist"):
        pair_create(user=researcher, run_a_id=a.pk, run_b_id=999999)
    with pytest.raises(Invalid, match="Unknown pair source 'gut_feeling'"):
        pair_create(user=researcher, run_a_id=a.pk, run_b_id=finished_run(task).pk, source="gut_feeling")
    assert not PreferencePair.objects.exists()


def test_labelers_may_not_create_pairs(labeler: User) -> None:
    task = TaskFactory()
    with pytest.raises(Forbidden, match="researcher role"):
        pair_create(user=labeler, run_a_id=finished_run(task).pk, run_b_id=finished_run(task).pk)


# --- pair_label ----------------------------------------------------------------------


def test_labeling_again_replaces_the_verdict(labeler: User) -> None:
    pair = make_pair()
    label, created = pair_label(pair_id=pair.pk, user=labeler, verdict="a", seconds_spent=12.5)
    assert created and (label.verdict, label.seconds_spent) == ("a", 12.5)
    again, created = pair_label(pair_id=pair.pk, user=labeler, verdict="tie")
    assert not created and again.pk == label.pk
    assert list(PreferenceLabel.objects.values_list("verdict", "seconds_spent")) == [("tie", None)]


def test_a_bad_label_is_refused(make_user: Any, labeler: User) -> None:
    pair = make_pair()
    with pytest.raises(Invalid, match="Unknown verdict 'c'; use one of a, b, tie, skip") as caught:
        pair_label(pair_id=pair.pk, user=labeler, verdict="c")
    assert caught.value.status == 422
    with pytest.raises(Invalid, match="seconds_spent"):
        pair_label(pair_id=pair.pk, user=labeler, verdict="a", seconds_spent=-1)
    with pytest.raises(NotFound):
        pair_label(pair_id=pair.pk + 1000, user=labeler, verdict="a")
    with pytest.raises(Forbidden, match="labeler role"):
        pair_label(pair_id=pair.pk, user=make_user(Role.VIEWER), verdict="a")
    assert not PreferenceLabel.objects.exists()


# --- run_plan ------------------------------------------------------------------------


def test_the_plan_of_a_decomposed_run() -> None:
    run = RunFactory(status="succeeded", cost_usd="0.00123")
    planner = EndpointFactory(model="openai/gpt-4o")
    worker = EndpointFactory(model="openai/gpt-4o-mini")
    root = Node.objects.create(
        run=run, key="root", kind="root", text="t", endpoint=planner, primitive=PrimitiveFactory(name="plan")
    )
    cot = PrimitiveFactory(name="cot")
    a = Node.objects.create(run=run, key="root.a", parent=root, text="a", endpoint=worker, primitive=cot)
    b = Node.objects.create(run=run, key="root.b", parent=root, text="b", endpoint=worker, primitive=cot)
    b.depends_on.add(a)
    aggregate = Node.objects.create(run=run, key="root.aggregate", kind="aggregate", parent=root, text="c")
    aggregate.depends_on.add(b)
    plan = run_plan(run)
    assert plan is not None
    assert plan.to_dict() == {
        "decompose": True,
        "nodes": [
            {"key": "root", "model": "openai/gpt-4o", "primitive": "plan", "kind": "root", "depends_on": []},
            {"key": "root.a", "model": "openai/gpt-4o-mini", "primitive": "cot", "kind": "subtask", "depends_on": []},
            {
                "key": "root.b",
                "model": "openai/gpt-4o-mini",
                "primitive": "cot",
                "kind": "subtask",
                "depends_on": ["root.a"],
            },
            {
                "key": "root.aggregate",
                "model": "local",
                "primitive": "aggregate",
                "kind": "aggregate",
                "depends_on": ["root.b"],
            },
        ],
        "cost_estimate": 0.00123,
    }
    assert plan.depth() == 3


def test_a_run_without_nodes_uses_its_stored_plan_or_has_none() -> None:
    stored = Plan.single("gpt-4o", "cot", cost_estimate=0.5)
    assert run_plan(RunFactory(policy_config={"plan": stored.to_dict()})) == stored
    assert run_plan(RunFactory()) is None
    assert run_plan(RunFactory(policy_config={"plan": {"nodes": []}})) is None
    single = run_plan(finished_run(TaskFactory(), model="m", primitive="direct"))
    assert single is not None and (single.pairs, single.decompose) == ([("m", "direct")], False)


# --- the labeling queue ----------------------------------------------------------------

SCORES = {"m1": 1.0, "m2": 0.9, "m3": 0.0, "m4": 0.5}


class FakeScorer:
    """Scores a plan by its first node's model; remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[Plan]]] = []

    def __call__(self, texts: list[str], plans: list[Plan]) -> Sequence[float]:
        self.calls.append((texts, plans))
        return [SCORES[plan.nodes[0].model] for plan in plans]


@pytest.fixture
def three_pairs(make_user: Any) -> list[PreferencePair]:
    """Margins 1.0, 0.1, 0.5; the second already has someone else's label."""
    pairs = [
        make_pair(model_a="m1", model_b="m3"),
        make_pair(model_a="m1", model_b="m2"),
        make_pair(model_a="m4", model_b="m3"),
    ]
    PreferenceLabel.objects.create(pair=pairs[1], labeler=make_user(Role.LABELER), verdict="a")
    return pairs


def test_the_queue_puts_what_the_reward_model_is_least_sure_of_first(
    labeler: User, three_pairs: list[PreferencePair]
) -> None:
    scorer = FakeScorer()
    queue = labeling_queue(user=labeler, limit=10, scorer=scorer)
    assert [item.pair for item in queue] == [three_pairs[1], three_pairs[2], three_pairs[0]]
    assert [item.margin for item in queue] == pytest.approx([0.1, 0.5, 1.0])
    assert queue[0].plan_a is not None and queue[0].plan_a.pairs == [("m1", "cot")]
    ((texts, plans),) = scorer.calls
    assert len(texts) == len(plans) == 6 and texts[0] == three_pairs[0].task.text
    assert [item.pair for item in labeling_queue(user=labeler, limit=2, scorer=scorer)] == three_pairs[1:]


def test_without_a_scorer_the_queue_is_fewest_labels_then_oldest(
    labeler: User, three_pairs: list[PreferencePair], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "reward_scorer", lambda: None)
    queue = labeling_queue(user=labeler, limit=10)
    assert [item.pair for item in queue] == [three_pairs[0], three_pairs[2], three_pairs[1]]
    assert all(item.margin is None for item in queue)


def test_a_failing_scorer_falls_back(labeler: User, three_pairs: list[PreferencePair]) -> None:
    def broken(texts: list[str], plans: list[Plan]) -> Sequence[float]:
        raise RuntimeError("checkpoint gone")

    queue = labeling_queue(user=labeler, limit=10, scorer=broken)
    assert [item.pair for item in queue] == [three_pairs[0], three_pairs[2], three_pairs[1]]


def test_the_default_scorer_is_optional(labeler: User, three_pairs: list[PreferencePair]) -> None:
    # Whatever studio.services.reward provides (or not), the queue answers.
    assert len(labeling_queue(user=labeler, limit=10)) == 3


def test_unscorable_pairs_come_after_scored_ones(labeler: User, three_pairs: list[PreferencePair]) -> None:
    task = TaskFactory()
    planless = PreferencePair.objects.create(
        task=task, run_a=RunFactory(task=task, status="succeeded"), run_b=finished_run(task, model="m1")
    )
    queue = labeling_queue(user=labeler, limit=10, scorer=FakeScorer())
    assert queue[-1].pair == planless and queue[-1].margin is None and queue[-1].plan_a is None


def test_the_queue_leaves_out_what_i_labeled_and_decided_pairs(
    labeler: User, three_pairs: list[PreferencePair]
) -> None:
    pair_label(pair_id=three_pairs[0].pk, user=labeler, verdict="skip")
    make_pair(source="correct_over_incorrect", metadata={"preferred": "a"})
    queue = labeling_queue(user=labeler, limit=10, scorer=FakeScorer())
    assert {item.pair.pk for item in queue} == {three_pairs[1].pk, three_pairs[2].pk}
    assert labeling_progress(user=labeler) == {"labeled": 1, "total": 3, "remaining": 2}


def test_the_display_order_is_random_but_stable_per_pair_and_user(
    labeler: User, three_pairs: list[PreferencePair]
) -> None:
    first = [item.swap for item in labeling_queue(user=labeler, limit=10, scorer=FakeScorer())]
    again = [item.swap for item in labeling_queue(user=labeler, limit=10, scorer=FakeScorer())]
    assert first == again
    swaps = {display_swap(pair_id=pair_id, user_id=7) for pair_id in range(1, 65)}
    assert swaps == {True, False}
    by_user = {display_swap(pair_id=1, user_id=user_id) for user_id in range(1, 65)}
    assert by_user == {True, False}


# --- the runs of a pair ----------------------------------------------------------------


def test_a_labeler_reads_the_runs_it_judges_but_may_not_act_on_them(api_as) -> None:
    pair = make_pair()
    api = api_as(Role.LABELER)
    assert api.get(f"/runs/{pair.run_a_id}").status_code == 200
    assert api.get(f"/runs/{pair.run_b_id}/tree").status_code == 200
    assert api.get(f"/runs/{pair.run_a_id}/events").status_code == 200
    assert api.post(f"/runs/{pair.run_a_id}/cancel", {}).status_code == 404
    assert api.get(f"/runs/{RunFactory().pk}").status_code == 404  # not in a pair
    assert api_as(Role.VIEWER).get(f"/runs/{pair.run_a_id}").status_code == 404  # viewers judge nothing
