"""Preference selectors and services over labeled pairs: the agreement of labelers (Cohen's
and Fleiss' kappa), the winner rules and records of the export, and the JSONL import, which
writes a whole file or nothing and takes an export back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.reward.jsonl import record_to_json
from orchestrator.reward.plans import Plan
from studio.models import PreferenceLabel, PreferencePair, Role, Run, Task, User
from studio.selectors.plans import run_plan
from studio.selectors.preferences import pair_winner, pairs_agreement, preferences_export
from studio.services.preferences import InvalidLines, pair_label, preferences_import
from tests.support.preferences import make_pair

pytestmark = pytest.mark.django_db


# --- agreement -------------------------------------------------------------------------


def test_agreement_on_a_small_worked_case(make_user: Any) -> None:
    ann, bob, cy = (make_user(Role.LABELER, username=name) for name in ("ann", "bob", "cy"))
    pairs = [make_pair() for _ in range(5)]
    verdicts: dict[User, list[str | None]] = {
        ann: ["a", "a", "b", "b", "a"],
        bob: ["a", "b", "b", "b", None],
        cy: ["a", None, None, None, "skip"],
    }
    for user, row in verdicts.items():
        for pair, verdict in zip(pairs, row, strict=True):
            if verdict:
                PreferenceLabel.objects.create(pair=pair, labeler=user, verdict=verdict)
    report = pairs_agreement(min_overlap=2)
    # Pair 5 has one non-skip label: left out. Pairs 1-4: 3 + 2 + 2 + 2 labels by 3 labelers.
    assert (report["pairs"], report["labels"], report["labelers"]) == (4, 9, 3)
    # ann vs bob on pairs 1-4: p_o = 3/4, p_e = (2*1 + 2*3)/16 = 1/2, κ = 1/2. cy overlaps once: left out.
    ((cohen),) = report["cohen"]
    assert (cohen["labeler_a"], cohen["labeler_b"], cohen["overlap"]) == ("ann", "bob", 4)
    assert cohen["kappa"] == pytest.approx(0.5)
    # Two raters is the most common count (pairs 2-4): [a b] [b b] [b b];
    # p_e = (1/6)^2 + (5/6)^2 = 26/36, P-bar = 2/3 = 24/36, κ = -2/10.
    assert report["fleiss"]["raters"] == 2 and report["fleiss"]["pairs"] == 3
    assert report["fleiss"]["kappa"] == pytest.approx(-0.2)
    assert pairs_agreement(min_overlap=5)["cohen"] == []


def test_agreement_with_no_labels() -> None:
    assert pairs_agreement() == {"pairs": 0, "labels": 0, "labelers": 0, "min_overlap": 5, "cohen": [], "fleiss": None}


# --- export ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "verdicts", "winner"),
    [
        ({"preferred": "b"}, ["a", "a"], "b"),
        ({}, ["a", "a", "b"], "a"),
        ({}, ["b", "skip", "skip"], "b"),
        ({}, ["a", "b"], "no_majority"),
        ({}, ["tie", "tie", "a"], "tie"),
        ({}, ["skip"], "unlabeled"),
        ({}, [], "unlabeled"),
    ],
)
def test_the_winner_rules(metadata: dict[str, Any], verdicts: list[str], winner: str) -> None:
    assert pair_winner(PreferencePair(metadata=metadata), verdicts) == winner


def test_export_uses_the_majority_and_counts_what_it_skips(make_user: Any) -> None:
    ann, bob, cy = (make_user(Role.LABELER, username=name) for name in ("ann", "bob", "cy"))
    majority_b = make_pair()
    for user, verdict in ((ann, "b"), (bob, "b"), (cy, "a")):
        PreferenceLabel.objects.create(pair=majority_b, labeler=user, verdict=verdict)
    split = make_pair()
    for user, verdict in ((ann, "a"), (bob, "b")):
        PreferenceLabel.objects.create(pair=split, labeler=user, verdict=verdict)
    tie = make_pair()
    PreferenceLabel.objects.create(pair=tie, labeler=ann, verdict="tie")
    make_pair()  # unlabeled
    decided = make_pair(source="correct_over_incorrect", metadata={"preferred": "a"})

    export = preferences_export()
    assert export.skipped == {"no_majority": 1, "tie": 1, "unlabeled": 1}
    first, second = export.records
    assert (first.chosen, first.rejected, first.source) == ("41", "42", "human")  # B won: chosen is run B
    assert first.prompt == majority_b.task.text
    assert first.chosen_plan is not None and first.chosen_plan.pairs == [("llama-3-8b", "cot")]
    assert first.extra == {
        "pair_id": majority_b.pk,
        "task_id": majority_b.task_id,
        "benchmark": "arith",
        "domain": "math",
        "labels": [
            {"labeler": "ann", "verdict": "b"},
            {"labeler": "bob", "verdict": "b"},
            {"labeler": "cy", "verdict": "a"},
        ],
    }
    assert (second.chosen, second.source, second.extra["pair_id"]) == ("42", "correct_over_incorrect", decided.pk)
    assert [r.extra["pair_id"] for r in preferences_export(source="human").records] == [majority_b.pk]


# --- import ----------------------------------------------------------------------------


def line(**fields: Any) -> str:
    record = {"prompt": "What is 2+2?", "chosen": "4", "rejected": "5", "source": "human", **fields}
    return json.dumps(record)


def test_import_creates_tasks_runs_and_decided_pairs(researcher: User) -> None:
    plan = Plan.single("gpt-4o", "cot", cost_estimate=0.01)
    text = "\n".join(
        [
            line(chosen_plan=plan.to_dict(), benchmark="gsm8k", domain="math", pair_id=9),
            "",
            line(prompt="Name a prime.", source="cheaper_correct", domain="astrology"),
        ]
    )
    counts = preferences_import(user=researcher, text=text + "\n")
    assert counts == {"pairs": 2, "tasks": 2, "runs": 4, "by_source": {"cheaper_correct": 1, "human": 1}}
    first, second = PreferencePair.objects.order_by("id")
    assert first.metadata == {"preferred": "a", "imported": True, "original_pair_id": 9}
    assert (first.task.owner, first.task.benchmark, first.task.domain) == (researcher, "gsm8k", "math")
    assert (second.source, second.task.domain) == ("cheaper_correct", "")  # an unknown domain is dropped
    assert (first.run_a.final_answer, first.run_b.final_answer) == ("4", "5")
    assert (first.run_a.policy, first.run_a.status) == ("imported", "succeeded")
    assert run_plan(first.run_a) == plan and run_plan(first.run_b) is None
    assert [r.chosen for r in preferences_export().records] == ["4", "4"]


def test_a_file_with_bad_lines_writes_nothing(researcher: User) -> None:
    text = "\n".join(
        [
            line(),
            line(source="vibes"),  # 2: a source the studio does not know
            "{not json",  # 3
            line(),
            line(prompt=" "),  # 5
            json.dumps({"prompt": "p", "chosen": "x", "rejected": "y", "source": "human", "rejected_plan": 3}),  # 6
        ]
    )
    with pytest.raises(InvalidLines) as caught:
        preferences_import(user=researcher, text=text)
    # Format errors are found first, for every line; the studio's own rules after them.
    assert [e["line"] for e in caught.value.extra["errors"]] == [3, 5, 6]
    assert caught.value.status == 422 and "line 3: not valid JSON" in caught.value.message
    with pytest.raises(InvalidLines) as caught:
        preferences_import(user=researcher, text="\n".join([line(), line(source="vibes"), line(prompt="x" * 10**6)]))
    errors = caught.value.extra["errors"]
    assert [e["line"] for e in errors] == [2, 3]
    assert "'vibes' is not one of human" in errors[0]["message"]
    assert (Task.objects.count(), Run.objects.count(), PreferencePair.objects.count()) == (0, 0, 0)


def test_an_export_imports_back(researcher: User, labeler: User) -> None:
    pair = make_pair()
    pair_label(pair_id=pair.pk, user=labeler, verdict="b")
    exported = "\n".join(record_to_json(r) for r in preferences_export().records)
    assert preferences_import(user=researcher, text=exported)["pairs"] == 1
    original, imported = preferences_export().records
    assert (imported.prompt, imported.chosen, imported.rejected) == (original.prompt, "41", "42")
    assert imported.chosen_plan == original.chosen_plan and imported.rejected_plan == original.rejected_plan
    assert imported.extra["labels"] == []
