"""Hostile input, written by hand: bodies that are not what a route reads: larger than the
upload limit, JSON nested ten thousand deep, bytes that are not UTF-8, text that is not a
JSON object, a wrong content type, a key the body does not have. Each request is refused
with a 4xx that says why, in the documented shape (`detail` on /api/, OpenAI's `error` on
/v1/), without a traceback, and without writing a row of any studio table."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from studio.models import ModelPool, Task
from tests.hardening.conftest import TokenUser
from tests.hardening.hostile import (
    DEEP,
    RAW,
    chat,
    import_jsonl,
    jsonl,
    nested,
    nothing_written,
    record,
    refused,
    refused_openai,
    run_body,
    send,
    with_raw,
)

pytestmark = pytest.mark.django_db


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
