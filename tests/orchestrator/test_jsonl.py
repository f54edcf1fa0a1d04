"""The TRL/HF preference JSONL: round trip, and a malformed file rejected with every bad line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from orchestrator.reward.jsonl import (
    PreferenceFormatError,
    PreferenceRecord,
    read_preferences,
    record_to_json,
    write_preferences,
)
from orchestrator.reward.plans import Plan, plan_from_dict

DECOMPOSED = plan_from_dict(
    {
        "nodes": [
            {"key": "root.a", "model": "gpt-4o-mini", "primitive": "cot", "kind": "subtask"},
            {"key": "root.b", "model": "llama-3-8b", "primitive": "direct", "kind": "subtask"},
            {
                "key": "root.aggregate",
                "model": "local",
                "primitive": "aggregate",
                "kind": "aggregate",
                "depends_on": ["root.a", "root.b"],
            },
        ],
        "cost_estimate": 0.0042,
    }
)


def records() -> list[PreferenceRecord]:
    return [
        PreferenceRecord(
            prompt="What is 6*7?",
            chosen="42",
            rejected="48",
            source="human",
            chosen_plan=Plan.single("gpt-4o", "cot", cost_estimate=0.001),
            rejected_plan=DECOMPOSED,
            extra={"pair_id": 3, "labels": [{"labeler": "ann", "verdict": "a"}], "domain": "math"},
        ),
        # No plans, non-ASCII text and a line separator inside a string.
        PreferenceRecord(prompt="Résumé\u2028please", chosen="", rejected="non", source="correct_over_incorrect"),
    ]


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    path = tmp_path / "prefs.jsonl"
    assert write_preferences(path, records()) == 2
    back = read_preferences(path)
    assert back == records()
    assert back[0].rejected_plan is not None and back[0].rejected_plan.depth() == 2
    assert back[0].extra["labels"] == [{"labeler": "ann", "verdict": "a"}]


def test_round_trip_through_gzip_and_handles(tmp_path: Path) -> None:
    path = tmp_path / "prefs.jsonl.gz"
    write_preferences(path, records())
    assert read_preferences(path) == records()
    buffer = io.StringIO()
    write_preferences(buffer, records())
    assert read_preferences(buffer.getvalue().split("\n")) == records()


def test_the_line_is_the_trl_shape_with_extra_keys_flat() -> None:
    data = json.loads(record_to_json(records()[0]))
    assert list(data)[:6] == ["prompt", "chosen", "rejected", "source", "chosen_plan", "rejected_plan"]
    assert data["chosen_plan"]["nodes"][0] == {
        "key": "root",
        "model": "gpt-4o",
        "primitive": "cot",
        "kind": "root",
        "depends_on": [],
    }
    assert data["pair_id"] == 3
    assert "chosen_plan" not in json.loads(record_to_json(records()[1]))


def test_blank_lines_are_skipped() -> None:
    line = record_to_json(records()[1])
    assert len(read_preferences(["", line, "   ", line, ""])) == 2


def test_a_malformed_file_is_rejected_with_every_bad_line() -> None:
    good = record_to_json(records()[0])
    bad_plan = json.dumps(
        {"prompt": "p", "chosen": "x", "rejected": "y", "source": "human", "chosen_plan": {"nodes": []}}
    )
    lines = [
        good,
        '{"prompt": "p", "chosen": ',  # line 2: not JSON
        good,
        json.dumps({"prompt": "p", "rejected": "y", "source": "human"}),  # line 4: no "chosen"
        "",
        bad_plan,  # line 6: an invalid plan
        good,
    ]
    with pytest.raises(PreferenceFormatError) as caught:
        read_preferences(lines)
    errors = caught.value.errors
    assert [line for line, _ in errors] == [2, 4, 6]
    assert "not valid JSON" in errors[0][1]
    assert errors[1][1] == '"chosen" is missing'
    assert errors[2][1] == '"chosen_plan" is not a valid plan: plan.nodes must be a non-empty list'
    message = str(caught.value)
    assert message.startswith("3 invalid lines: line 2: not valid JSON")
    assert "line 4:" in message and "line 6:" in message


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "a record must be a JSON object, not list"),
        ('{"prompt": "p", "chosen": ["x"], "rejected": "y", "source": "human"}', '"chosen" must be a string'),
        ('{"prompt": " ", "chosen": "x", "rejected": "y", "source": ""}', '"prompt" is empty; "source" is empty'),
        (
            '{"prompt": "p", "chosen": "x", "rejected": "y", "source": "s", "rejected_plan": {"nodes": '
            '[{"key": "a", "model": "m", "primitive": "p", "depends_on": ["a"]}]}}',
            '"rejected_plan" is not a valid plan: plan dependencies form a cycle',
        ),
    ],
)
def test_each_kind_of_bad_line_is_named(line: str, message: str) -> None:
    with pytest.raises(PreferenceFormatError) as caught:
        read_preferences([line])
    assert caught.value.errors == [(1, message)]
