"""Hostile input, written by hand, to the preference routes: plans with a cycle or of ten
thousand nodes, a pair of runs of different tasks, a label on a pair that does not exist or
with an unknown verdict, JSONL imports with broken lines (every one reported by its line).
Each request is refused with a 4xx that says why, in the documented shape (`detail` on
/api/, OpenAI's `error` on /v1/), without a traceback, and without writing a row of any
studio table."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from studio.models import PreferencePair, Run, RunStatus
from tests.factories import RunFactory, TaskFactory
from tests.hardening.conftest import TokenUser
from tests.hardening.hostile import (
    DEEP,
    HUGE_INTS,
    import_jsonl,
    jsonl,
    node,
    nothing_written,
    plan,
    record,
    refused,
    send,
)

pytestmark = pytest.mark.django_db


# Plans: a cycle, too many nodes


def test_a_plan_with_a_cycle_is_refused_by_line(admin_token: TokenUser) -> None:
    cycle = plan([node("a", "c"), node("b", "a"), node("c", "b")])
    self_loop = plan([node("a", "a")])
    text = jsonl(record(), record(chosen_plan=cycle), record(rejected_plan=self_loop))
    with nothing_written():
        response = import_jsonl(admin_token, text)
        refused(response, 422)
    errors = response.json()["errors"]
    assert [e["line"] for e in errors] == [2, 3]
    assert all("cycle" in e["message"] for e in errors), errors


def test_a_plan_of_ten_thousand_nodes_is_refused(admin_token: TokenUser) -> None:
    # A chain, each node depending on the one before: as deep as it is long.
    chain = plan([node("n0")] + [node(f"n{i}", f"n{i - 1}") for i in range(1, DEEP)])
    with nothing_written():
        response = import_jsonl(admin_token, jsonl(record(chosen_plan=chain)))
        refused(response, 422)
    [error] = response.json()["errors"]
    assert error["line"] == 1 and "10000 nodes" in error["message"], error


def test_a_plan_at_the_node_limit_is_imported(admin_token: TokenUser) -> None:
    """The refusal above is the limit, not a failure of long chains: 256 chained nodes import."""
    chain = plan([node("n0")] + [node(f"n{i}", f"n{i - 1}") for i in range(1, 256)])
    response = import_jsonl(admin_token, jsonl(record(chosen_plan=chain)))
    assert response.status_code == 201, response.content[:500]
    run = Run.objects.get(task__owner=admin_token.user, final_answer="42")
    assert len(run.policy_config["plan"]["nodes"]) == 256


def test_a_pair_of_runs_of_different_tasks_is_refused(admin_token: TokenUser) -> None:
    run_a = RunFactory(status=RunStatus.SUCCEEDED)
    run_b = RunFactory(status=RunStatus.SUCCEEDED)
    with nothing_written():
        response = send(admin_token, "POST", "/api/preferences/pairs", {"run_a_id": run_a.pk, "run_b_id": run_b.pk})
        detail = refused(response, 422)
    assert response.json()["field"] == "run_b_id"
    assert f"task {run_a.task_id}" in detail and f"task {run_b.task_id}" in detail


def test_a_label_on_a_pair_that_does_not_exist_is_404(admin_token: TokenUser) -> None:
    with nothing_written():
        for pair_id in [987_654, 0, -1, *HUGE_INTS]:
            response = send(admin_token, "POST", f"/api/preferences/pairs/{pair_id}/labels", {"verdict": "a"})
            assert "does not exist" in refused(response, 404)


@pytest.mark.parametrize("verdict", ["c", "A", "", None, 1, ["a"], "a\x00"])
def test_a_label_with_an_unknown_verdict_is_refused(admin_token: TokenUser, verdict: Any) -> None:
    task = TaskFactory()
    runs = [RunFactory(task=task, status=RunStatus.SUCCEEDED) for _ in range(2)]
    pair = PreferencePair.objects.create(task=task, run_a=runs[0], run_b=runs[1])
    with nothing_written():
        response = send(admin_token, "POST", f"/api/preferences/pairs/{pair.pk}/labels", {"verdict": verdict})
        refused(response, (400, 422))


# A JSONL import with broken lines


def test_an_import_with_broken_lines_reports_every_one_and_imports_nothing(admin_token: TokenUser) -> None:
    text = jsonl(
        record(),  # 1: fine
        "{not json",  # 2
        record(chosen=None),  # 3
        "",  # 4: blank, skipped
        json.dumps({k: v for k, v in record().items() if k != "prompt"}),  # 5
        "[1, 2, 3]",  # 6
        record(chosen_plan={"nodes": []}),  # 7
        record(prompt="   "),  # 8
        record(),  # 9: fine
        '{"prompt": "a", "chosen": "b", "rejected": "c", "source": "human", "n": NaN',  # 10: cut short
    )
    with nothing_written():
        response = import_jsonl(admin_token, text)
        detail = refused(response, 422)
    lines = [error["line"] for error in response.json()["errors"]]
    assert lines == [2, 3, 5, 6, 7, 8, 10]
    assert detail.startswith("7 invalid lines: line 2: not valid JSON")
    assert all(f"line {line}:" in detail for line in lines)


def test_an_import_breaking_the_studios_rules_reports_every_line(admin_token: TokenUser) -> None:
    too_long = "x" * (settings.ORCHESTRA_MAX_TASK_CHARS + 1)
    text = jsonl(
        record(source="telepathy"),
        record(),
        record(prompt=too_long),
        record(chosen="4\x002"),
        record(rejected="\ud800"),
        record(pair_id=float("nan")),
        record(chosen_plan=plan([{**node("a"), "model": "gpt\x00"}])),
    )
    with nothing_written():
        response = import_jsonl(admin_token, text)
        refused(response, 422)
    errors = response.json()["errors"]
    assert [error["line"] for error in errors] == [1, 3, 4, 5, 6, 7], errors
    assert "telepathy" in errors[0]["message"]
    assert "NUL" in errors[2]["message"] and "surrogate" in errors[3]["message"]
    assert "NaN" in errors[4]["message"] and "NUL" in errors[5]["message"]


def test_an_import_of_nothing_is_refused(admin_token: TokenUser) -> None:
    with nothing_written():
        for body in ["\n", "\n\n   \n", "\ufeff"]:
            refused(import_jsonl(admin_token, body), 422)
