"""A user's own tasks as JSON Lines: good lines become specs, and every bad line is named."""

from __future__ import annotations

import json

import pytest

from orchestrator.task_jsonl import TaskFormatError, read_tasks


def line(**fields: object) -> str:
    return json.dumps({"prompt": "What is 6*7?", "gold": "42", "checker": "gsm8k", "domain": "math", **fields})


def errors_of(lines: list[str]) -> list[tuple[int, str]]:
    with pytest.raises(TaskFormatError) as caught:
        read_tasks(lines)
    return caught.value.errors


def test_good_lines_become_specs_numbered_by_their_line() -> None:
    code = line(
        prompt="def add(a, b):\n",
        gold="def check(candidate):\n    assert candidate(1, 2) == 3\n",
        checker="humaneval",
        domain="code",
        metadata={"entry_point": "add", "item_id": "mine/1"},
    )
    tool = line(gold=[{"f": {"x": [1]}}], checker="bfcl", domain="tool_use", benchmark="mine")

    specs = read_tasks([line(gold=42), "", code, "   ", tool])

    assert [number for number, _ in specs] == [1, 3, 5]
    first, second, third = (spec for _, spec in specs)
    assert (first.text, first.gold, first.checker, first.domain, first.item_id) == (
        "What is 6*7?",
        "42",
        "gsm8k",
        "math",
        "",
    )
    assert second.item_id == "mine/1" and second.metadata["entry_point"] == "add"
    assert json.loads(third.gold) == [{"f": {"x": [1]}}] and third.benchmark == "mine"


def test_every_bad_line_is_named() -> None:
    lines = [
        line(),
        "{not json",
        json.dumps({"prompt": "p", "checker": "gsm8k", "domain": "math"}),
        line(checker="astrology"),
        line(domain="cooking"),
        line(prompt="   "),
        line(golden="42"),
        "[1, 2]",
        line(checker="mbpp", domain="code", gold="def check(candidate): pass"),
        line(gold="forty-two"),
        line(checker="bfcl", gold="call f"),
        line(metadata={"item_id": "a"}),
        line(metadata={"item_id": "a"}),
        line(metadata="x", gold=True),
    ]

    errors = dict(errors_of(lines))

    assert sorted(errors) == [*range(2, 12), 13, 14]  # line 12 is good: its item id is the first
    assert errors[2].startswith("not valid JSON")
    assert errors[3] == '"gold" is missing'
    assert errors[4].startswith("\"checker\" 'astrology' is not one of ")
    assert errors[5].startswith("\"domain\" 'cooking' is not one of math, code,")
    assert errors[6] == '"prompt" must be a non-empty string'
    assert errors[7].startswith('unknown key "golden"')
    assert errors[8] == "a task is a JSON object, not list"
    assert errors[9] == 'a mbpp task needs "metadata.entry_point", the function the tests call'
    assert errors[10] == "\"gold\" 'forty-two' has no number for the gsm8k checker"
    assert errors[11].startswith('"gold" must be BFCL\'s gold calls')
    assert errors[13] == "metadata.item_id 'a' is on line 12 too"
    assert '"gold" must be a string' in errors[14] and '"metadata" must be an object' in errors[14]


def test_the_message_counts_and_lists_the_lines() -> None:
    with pytest.raises(
        TaskFormatError, match=r"^2 invalid lines: line 1: not valid JSON .*; line 3: \"domain\" is missing"
    ):
        read_tasks(["{", line(), json.dumps({"prompt": "p", "gold": "1", "checker": "gsm8k"})])
