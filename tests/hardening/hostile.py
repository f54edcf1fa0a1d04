"""Helpers of the hostile-input tests (test_hostile_*.py): a request sent with a bearer
token; the checks that it was refused with a 4xx that says why, in the documented shape
(`detail` on /api/, OpenAI's `error` on /v1/), without a traceback, and that no studio table
gained or lost a row; and the bodies the tests spoil: chat completions, runs, JSONL
preference records and their plans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.apps import apps
from django.test import Client

from studio.models import ModelPool, Task
from tests.hardening.conftest import TokenUser

DEEP = 10_000
HUGE_INTS = [2**63, 2**64, -(2**63) - 1, 10**100]


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
