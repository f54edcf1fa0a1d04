"""Hostile input, written by hand: numbers out of range: negative and out-of-range budgets,
integers past 64 bits in bodies, paths and queries, a paging offset past PostgreSQL's
integers, NaN and Infinity. Each request is refused with a 4xx that says why, in the
documented shape (`detail` on /api/, OpenAI's `error` on /v1/), without a traceback, and
without writing a row of any studio table."""

from __future__ import annotations

from typing import Any

import pytest

from studio.models import ModelPool, Task
from tests.hardening.conftest import TokenUser
from tests.hardening.hostile import (
    HUGE_INTS,
    RAW,
    chat,
    import_jsonl,
    nothing_written,
    record,
    refused,
    refused_openai,
    run_body,
    send,
    with_raw,
)

pytestmark = pytest.mark.django_db


# Negative and out-of-range budgets


BAD_BUDGETS = [
    ("max_cost_usd", -0.01),
    ("max_cost_usd", "-1"),
    ("max_nodes", -1),
    ("max_nodes", 0),
    ("max_depth", -1),
    ("deadline_s", -1),
    ("deadline_s", 0),
    ("best_of", -1),
    ("best_of", 0),
    ("best_of", 17),
    ("cost_preference", -1),
]


@pytest.mark.parametrize(("field", "value"), BAD_BUDGETS)
def test_a_bad_budget_on_a_run_is_422(
    admin_token: TokenUser, task: Task, usable_pool: ModelPool, field: str, value: Any
) -> None:
    with nothing_written():
        response = send(admin_token, "POST", "/api/runs", run_body(task, usable_pool, **{field: value}))
        refused(response, 422)
    assert [e["field"] for e in response.json()["errors"]] == [field]


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, v in BAD_BUDGETS if f not in {"max_nodes", "max_depth"}])
def test_a_bad_budget_on_a_chat_completion_is_400(
    admin_token: TokenUser, usable_pool: ModelPool, field: str, value: Any
) -> None:
    with nothing_written():
        response = send(admin_token, "POST", "/v1/chat/completions", chat(**{field: value}))
        assert refused_openai(response, 400)["param"] == field


def test_a_chat_completion_the_run_service_refuses_leaves_no_task(
    admin_token: TokenUser, usable_pool: ModelPool
) -> None:
    """The task is written first, then the run is refused: both roll back together."""
    with nothing_written():
        response = send(admin_token, "POST", "/v1/chat/completions", chat(policy_config={"checkpoint": "/etc/passwd"}))
        assert refused_openai(response, 422)["param"] == "policy_config"


# Huge integers


@pytest.mark.parametrize("huge", HUGE_INTS)
def test_huge_integers_are_refused(admin_token: TokenUser, task: Task, usable_pool: ModelPool, huge: int) -> None:
    with nothing_written():
        for field in ["task_id", "pool_id", "best_of", "max_nodes", "max_depth", "deadline_s", "checkpoint_id"]:
            response = send(admin_token, "POST", "/api/runs", run_body(task, usable_pool, **{field: huge}))
            refused(response, (404, 422))
        refused(send(admin_token, "POST", "/api/runs", run_body(task, usable_pool, max_cost_usd=huge * 10**10)), 422)
        pair = {"run_a_id": huge, "run_b_id": huge - 1}
        refused(send(admin_token, "POST", "/api/preferences/pairs", pair), (404, 422))
        for path in [f"/api/runs/{huge}", f"/api/tasks/{huge}", f"/api/runs/{huge}/events", f"/api/pools/{huge}"]:
            refused(send(admin_token, "GET", path), (404, 422))
        refused(send(admin_token, "POST", f"/api/runs/{huge}/cancel"), (404, 422))
        for query in [f"limit={huge}", f"owner_id={huge}", f"task_id={huge}"]:
            response = send(admin_token, "GET", f"/api/runs?{query}")
            if response.status_code != 200:  # an unknown owner or task is an empty page
                refused(response, 422)
        refused(send(admin_token, "GET", f"/api/runs/1/events?after={huge}"), (404, 422))
        for field in ["best_of", "deadline_s", "pool"]:
            refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat(**{field: huge})), 400)


@pytest.mark.django_db(transaction=True)
def test_a_paging_offset_past_the_databases_integers_is_422(admin_token: TokenUser) -> None:
    """PostgreSQL refuses the OFFSET (a DataError, formerly a 500). Outside a test transaction,
    as in production, so that the refused statement does not abort the test's own transaction."""
    for path in ["/api/tasks", "/api/runs", "/api/pools", "/api/training/jobs", "/api/evaluations", "/api/tokens"]:
        assert "out of range" in refused(send(admin_token, "GET", f"{path}?offset={2**63}"), 422), path


# NaN and Infinity


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(
    admin_token: TokenUser, task: Task, usable_pool: ModelPool, constant: str
) -> None:
    endpoints = f"/api/pools/{usable_pool.pk}/endpoints"
    bodies = [
        ("/api/runs", run_body(task, usable_pool, cost_preference=RAW)),
        ("/api/runs", run_body(task, usable_pool, max_cost_usd=RAW)),
        ("/api/runs", run_body(task, usable_pool, policy_config={"x": RAW})),
        ("/api/tasks", {"text": "What is 6*7?", "metadata": {"x": [RAW]}}),
        ("/api/training/jobs", {"kind": "policy", "config": {"seed": RAW}}),
        ("/api/evaluations", {"learned": {"lr": RAW}}),
        (endpoints, {"name": "n", "model": "m", "input_cost_per_mtok": RAW}),
        (endpoints, {"name": "n", "model": "m", "descriptors": {"size": RAW}}),
    ]
    with nothing_written():
        for path, body in bodies:
            assert "NaN or Infinity" in refused(send(admin_token, "POST", path, with_raw(body, constant)), 400), path
        chat_body = with_raw(chat(cost_preference=RAW), constant)
        refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat_body), 400)
        line = with_raw(record(pair_id=RAW), constant)
        refused(import_jsonl(admin_token, line), 422)
