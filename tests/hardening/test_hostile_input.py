"""Hostile input, written by hand: each request is refused with a 4xx that says why, in the
documented shape (`detail` on /api/, OpenAI's `error` on /v1/), without a traceback, and
without writing a row of any studio table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.test import Client

from studio.models import ModelPool, PreferencePair, Run, RunStatus, Task
from tests.factories import EndpointFactory, PoolFactory, PrimitiveFactory, RunFactory, TaskFactory
from tests.hardening.conftest import TokenUser

pytestmark = pytest.mark.django_db

DEEP = 10_000
HUGE_INTS = [2**63, 2**64, -(2**63) - 1, 10**100]


# Helpers


def row_counts() -> dict[str, int]:
    return {model.__name__: model._default_manager.count() for model in apps.get_app_config("studio").get_models()}


@contextmanager
def nothing_written() -> Iterator[None]:
    """Every studio table holds as many rows after the block as before it."""
    before = row_counts()
    yield
    after = row_counts()
    assert after == before, {name: (before[name], after[name]) for name in before if before[name] != after[name]}


def send(who: TokenUser, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
    """`body` as JSON, or as is when it is bytes or str."""
    data = body if isinstance(body, bytes | str) else json.dumps(body) if body is not None else b""
    return Client().generic(method, path, data, content_type, headers=who.headers)


def refused(response: Any, status: int | tuple[int, ...]) -> str:
    """The detail sentence of an /api/ refusal with `status`."""
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, (response.status_code, response.content[:500])
    assert b"Traceback" not in response.content
    body = response.json()
    assert isinstance(body["detail"], str) and len(body["detail"]) > 10, body
    return str(body["detail"])


def refused_openai(response: Any, status: int | tuple[int, ...]) -> dict[str, Any]:
    """The `error` object of a /v1/ refusal with `status`."""
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, (response.status_code, response.content[:500])
    assert b"Traceback" not in response.content
    error = response.json()["error"]
    assert isinstance(error["message"], str) and len(error["message"]) > 10, error
    assert error["type"], error
    return dict(error)


def nested(depth: int, kind: str) -> str:
    """JSON text of `depth` nested arrays or objects."""
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "{}" + "}" * depth


RAW = "@raw@"


def with_raw(body: dict[str, Any], raw: str) -> str:
    """`body` as JSON text, the string RAW in it replaced by `raw` (JSON's NaN, deep nesting, ...)."""
    return json.dumps(body).replace(json.dumps(RAW), raw)


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": "orchestra", "messages": [{"role": "user", "content": "What is 6*7?"}], **extra}


@pytest.fixture
def task(admin_token: TokenUser) -> Task:
    return TaskFactory(owner=admin_token.user)


def run_body(task: Task, pool: ModelPool, **extra: Any) -> dict[str, Any]:
    return {"task_id": task.pk, "pool_id": pool.pk, **extra}


def jsonl(*records: dict[str, Any] | str) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def record(**extra: Any) -> dict[str, Any]:
    return {"prompt": "What is 6*7?", "chosen": "42", "rejected": "41", "source": "human", **extra}


def plan(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"decompose": len(nodes) > 1, "nodes": nodes}


def node(key: str, *depends_on: str) -> dict[str, Any]:
    return {"key": key, "model": "gpt-4o", "primitive": "cot", "kind": "subtask", "depends_on": list(depends_on)}


def import_jsonl(who: TokenUser, text: str | bytes) -> Any:
    return send(who, "POST", "/api/preferences/import", text, "application/x-ndjson")


# An oversized body


def test_an_oversized_body_is_413_everywhere(admin_token: TokenUser, task: Task, usable_pool: ModelPool) -> None:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    padding = "x" * (limit + 1)
    with nothing_written():
        detail = refused(send(admin_token, "POST", "/api/tasks", {"text": padding}), 413)
        assert "too large" in detail
        refused(send(admin_token, "POST", "/api/runs", run_body(task, usable_pool, policy_config={"p": padding})), 413)
        refused(import_jsonl(admin_token, jsonl(record(prompt=padding))), 413)
        error = refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat(padding=padding)), 413)
        assert error["code"] == "request_too_large"


# Deeply nested JSON


@pytest.mark.parametrize("kind", ["array", "object"])
def test_json_nested_ten_thousand_deep_is_refused(
    admin_token: TokenUser, task: Task, usable_pool: ModelPool, kind: str
) -> None:
    deep = nested(DEEP, kind)
    bodies = {
        "/api/tasks": with_raw({"text": "What is 6*7?", "metadata": {"deep": RAW}}, deep),
        "/api/runs": with_raw(run_body(task, usable_pool, policy_config={"deep": RAW}), deep),
        "/api/training/jobs": with_raw({"kind": "policy", "config": {"learned": RAW}}, deep),
        "/api/preferences/pairs": with_raw({"run_a_id": 1, "run_b_id": 2, "metadata": {"deep": RAW}}, deep),
    }
    with nothing_written():
        for path, body in bodies.items():
            assert "nested too deeply" in refused(send(admin_token, "POST", path, body), 400), path
        chat_body = with_raw(chat(policy_config={"deep": RAW}), deep)
        error = refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat_body), 400)
        assert "nested too deeply" in error["message"]
        line = with_raw(record(extra=RAW), deep)
        detail = refused(import_jsonl(admin_token, line), 422)
        assert "line 1" in detail


@pytest.mark.parametrize("depth", [50, 98, 99, 500, 900, 990])
def test_json_nested_as_deep_as_the_parser_allows_is_stored_whole_or_refused(
    admin_token: TokenUser, depth: int
) -> None:
    """Python's parser takes ~990 levels, but encoding ~900 for the insert overflowed the stack
    (a 500): the studio stores up to 100 levels of a body, whole, and refuses the rest."""
    body = with_raw({"text": "What is 6*7?", "metadata": {"deep": RAW}}, nested(depth, "array"))
    if depth <= 98:  # with the body and metadata objects, 100 levels
        response = send(admin_token, "POST", "/api/tasks", body)
        assert response.status_code == 201, response.content[:300]
        stored = Task.objects.get(pk=response.json()["id"]).metadata["deep"]
        assert json.dumps(stored, separators=(",", ":")) == nested(depth, "array")
    else:
        with nothing_written():
            assert "nested too deeply" in refused(send(admin_token, "POST", "/api/tasks", body), 400)


# Bytes that are not UTF-8, bodies that are not JSON, wrong content types


def test_a_body_that_is_not_utf8_is_refused(admin_token: TokenUser) -> None:
    bad = b'{"text": "caf\xe9 \xff\xfe"}'
    with nothing_written():
        assert "not valid JSON" in refused(send(admin_token, "POST", "/api/tasks", bad), 400)
        assert "UTF-8" in refused(import_jsonl(admin_token, json.dumps(record()).encode() + b"\n\xff\xfe\n"), 422)
        error = refused_openai(send(admin_token, "POST", "/v1/chat/completions", b'{"model": "\xff"}'), 400)
        assert error["code"] == "invalid_json"


@pytest.mark.parametrize(
    "body", ["", "hello", "{", '{"text": "a",}', "[1, 2]", "42", "null", '"text"', "\ufeff{}", "{}{}"]
)
def test_a_body_that_is_not_a_json_object_is_refused(admin_token: TokenUser, body: str) -> None:
    with nothing_written():
        refused(send(admin_token, "POST", "/api/tasks", body), (400, 422))
        refused(send(admin_token, "POST", "/api/preferences/pairs", body), (400, 422))
        refused_openai(send(admin_token, "POST", "/v1/chat/completions", body), 400)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_wrong_content_type_is_refused_or_read_as_json(admin_token: TokenUser, content_type: str) -> None:
    """A JSON body under another type: ninja reads the body as JSON whatever its type, so it is
    a task (201) or refused; the JSONL import names the types it takes."""
    response = send(admin_token, "POST", "/api/tasks", {"text": "What is 6*7?"}, content_type)
    if response.status_code != 201:
        refused(response, (400, 415, 422))
    with nothing_written():
        assert "application/x-ndjson" in refused(
            send(admin_token, "POST", "/api/preferences/import", jsonl(record()), "application/json"), 415
        )
        form = send(admin_token, "POST", "/v1/chat/completions", "model=orchestra", "application/x-www-form-urlencoded")
        refused_openai(form, 400)


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


# Preference pairs and labels


@pytest.mark.parametrize(
    ("method", "path", "body", "key"),
    [
        ("POST", "/api/evaluations", {"seeds": 2}, "seeds"),  # a typo of `seed`: not run with seed 0
        ("POST", "/api/training/jobs", {"kind": "policy", "confg": {}}, "confg"),
        ("POST", "/api/tasks", {"text": "What is 2 + 2?", "gold": "4"}, "gold"),
        ("POST", "/api/runs", {"task_id": 1, "budget_usd": 1}, "budget_usd"),
        ("POST", "/api/tokens", {"name": "ci", "expires": 3}, "expires"),
        ("POST", "/api/pools", {"name": "p", "descripton": ""}, "descripton"),
        ("POST", "/api/preferences/pairs", {"run_a_id": 1, "run_b_id": 2, "note": "x"}, "note"),
    ],
)
def test_a_key_the_body_does_not_have_is_a_422_naming_it(
    admin_token: TokenUser, method: str, path: str, body: dict[str, Any], key: str
) -> None:
    with nothing_written():
        response = send(admin_token, method, path, body)
        detail = refused(response, 422)
    assert key in detail and "Extra inputs are not permitted" in detail
    assert any(error["field"].endswith(key) for error in response.json()["errors"])


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


# NUL characters and unpaired surrogates


TEXT_FIELDS = [
    ("/api/tasks", {"text": "What is 6*7?"}, ["text", "gold_answer", "benchmark", "checker"]),
    ("/api/pools", {"name": "p"}, ["name", "description"]),
    ("/api/primitives", {"name": "prim"}, ["name", "description"]),
    ("/api/tokens", {"name": "t"}, ["name"]),
    ("/api/auth/login", {"username": "u", "password": "p"}, ["username", "password"]),
]


@pytest.mark.parametrize("bad", ["a\x00b", "\x00", "a\ud800b", "\udfff"])
def test_nul_and_lone_surrogates_in_strings_are_refused(
    admin_token: TokenUser, task: Task, usable_pool: ModelPool, bad: str
) -> None:
    """PostgreSQL stores neither; each used to be a 500 at the insert."""
    cases: list[tuple[str, dict[str, Any]]] = [
        (path, {**base, field: bad}) for path, base, fields in TEXT_FIELDS for field in fields
    ]
    cases += [
        ("/api/tasks", {"text": "What is 6*7?", "metadata": {bad: 1}}),
        ("/api/tasks", {"text": "What is 6*7?", "metadata": {"k": [bad]}}),
        ("/api/runs", run_body(task, usable_pool, policy=bad)),
        ("/api/runs", run_body(task, usable_pool, policy_config={"k": bad})),
        (f"/api/pools/{usable_pool.pk}/endpoints", {"name": "n", "model": bad}),
        (f"/api/pools/{usable_pool.pk}/endpoints", {"name": "n", "model": "m", "api_key": bad}),
        ("/api/training/jobs", {"kind": "policy", "config": {"outcomes": [bad]}}),
    ]
    with nothing_written():
        for path, body in cases:
            refused(send(admin_token, "POST", path, body), 400)
        error = refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat(pool=bad)), 400)
        assert "NUL" in error["message"] or "surrogate" in error["message"]
        messages = [{"role": "user", "content": f"What is {bad}?"}]
        refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat(messages=messages)), 400)


def test_nul_in_a_query_or_path_parameter_is_refused(admin_token: TokenUser) -> None:
    run = RunFactory(owner=admin_token.user, task=TaskFactory(owner=admin_token.user))
    with nothing_written():
        for path in [
            "/api/tasks?search=a%00b",
            "/api/runs?policy=%00",
            "/api/pools?search=%00",
            "/api/runs?search=%00",
        ]:
            assert "NUL" in refused(send(admin_token, "GET", path), 422), path
        body = {"endpoint_id": 1, "primitive": "direct"}
        refused(send(admin_token, "POST", f"/api/runs/{run.pk}/nodes/a%00b/rerun", body), (404, 422))


# Very long strings in every free-text field


LONG = "x" * 1_000_000  # under the 2 MB body limit


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/tasks", {"text": LONG}),
        ("POST", "/api/tasks", {"text": "t", "gold_answer": LONG}),
        ("POST", "/api/tasks", {"text": "t", "checker": LONG}),
        ("POST", "/api/tasks", {"text": "t", "benchmark": LONG}),
        ("POST", "/api/tasks/composite", {"items": [{"source": LONG, "item_id": "1"}]}),
        ("POST", "/api/tasks/composite", {"items": [{"source": "s", "item_id": LONG}]}),
        ("POST", "/api/pools", {"name": LONG}),
        ("POST", "/api/pools", {"name": "p", "description": LONG}),
        ("PATCH", "/api/pools/{pool}", {"name": LONG}),
        ("PATCH", "/api/pools/{pool}", {"description": LONG}),
        ("POST", "/api/pools/{pool}/endpoints", {"name": LONG, "model": "m"}),
        ("POST", "/api/pools/{pool}/endpoints", {"name": "n", "model": LONG}),
        ("POST", "/api/pools/{pool}/endpoints", {"name": "n", "model": "m", "api_base": LONG}),
        ("PATCH", "/api/endpoints/{endpoint}", {"name": LONG}),
        ("PATCH", "/api/endpoints/{endpoint}", {"model": LONG}),
        ("PATCH", "/api/endpoints/{endpoint}", {"api_base": LONG}),
        ("POST", "/api/primitives", {"name": LONG}),
        ("POST", "/api/primitives", {"name": "p", "description": LONG}),
        ("PATCH", "/api/primitives/{primitive}", {"name": LONG}),
        ("PATCH", "/api/primitives/{primitive}", {"description": LONG}),
        ("POST", "/api/tokens", {"name": LONG}),
        ("POST", "/api/auth/login", {"username": LONG, "password": "p"}),
        ("POST", "/api/auth/login", {"username": "u", "password": LONG}),
        ("POST", "/api/runs", {"task_id": 0, "pool_id": 0, "policy": LONG}),
        ("POST", "/api/runs/{run}/nodes/root/rerun", {"endpoint_id": 0, "primitive": LONG}),
        ("POST", "/api/preferences/pairs", {"run_a_id": 0, "run_b_id": 1, "source": LONG}),
        ("POST", "/api/preferences/pairs/{pair}/labels", {"verdict": LONG}),
        ("POST", "/api/training/jobs", {"kind": LONG}),
        ("POST", "/api/evaluations", {"preset": LONG}),
        ("POST", "/api/evaluations", {"outcomes": [LONG]}),
        ("POST", "/api/evaluations", {"methods": [LONG]}),
    ],
)
def test_a_very_long_string_is_refused(admin_token: TokenUser, method: str, path: str, body: dict[str, Any]) -> None:
    endpoint = EndpointFactory()
    task = TaskFactory(owner=admin_token.user)
    run = RunFactory(task=task, status=RunStatus.SUCCEEDED)
    pair = PreferencePair.objects.create(task=task, run_a=run, run_b=RunFactory(task=task, status="succeeded"))
    ids = {
        "pool": endpoint.pool_id,
        "endpoint": endpoint.pk,
        "primitive": PrimitiveFactory().pk,
        "run": run.pk,
        "pair": pair.pk,
    }
    with nothing_written():
        refused(send(admin_token, method, path.format(**ids), body), (400, 401, 404, 422))


@pytest.mark.parametrize(
    "body",
    [
        chat(messages=[{"role": "user", "content": "x" * (100_000 + 1)}]),
        chat(model=LONG),
        chat(pool=LONG),
        chat(messages=[{"role": LONG, "content": "hi"}]),
        chat(preset=LONG),
    ],
)
def test_a_very_long_string_in_a_chat_completion_is_refused(
    admin_token: TokenUser, usable_pool: ModelPool, body: dict[str, Any]
) -> None:
    with nothing_written():
        refused_openai(send(admin_token, "POST", "/v1/chat/completions", body), (400, 404, 422))


def test_a_long_free_text_within_its_limit_is_kept_whole(admin_token: TokenUser) -> None:
    """The refusals above are limits, not truncation: at the limit, every character is stored."""
    text = "y" * settings.ORCHESTRA_MAX_TASK_CHARS
    response = send(admin_token, "POST", "/api/tasks", {"text": text, "gold_answer": "g" * 100_000})
    assert response.status_code == 201, response.content[:300]
    stored = Task.objects.get(pk=response.json()["id"])
    assert (stored.text, len(stored.gold_answer)) == (text, 100_000)
    pool = send(admin_token, "POST", "/api/pools", {"name": "p" * 100, "description": "d" * 10_000})
    assert pool.status_code == 201 and ModelPool.objects.get(name="p" * 100).description == "d" * 10_000


def test_unknown_pools_are_not_created_by_a_long_name(admin_token: TokenUser) -> None:
    PoolFactory()
    with nothing_written():
        error = refused_openai(send(admin_token, "POST", "/v1/chat/completions", chat(pool="p" * 5000)), 400)
    assert error["code"] == "pool_not_found"
    assert len(error["message"]) < 200  # the name is not echoed whole
