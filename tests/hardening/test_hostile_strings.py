"""Hostile input, written by hand: strings PostgreSQL cannot store (NUL characters, unpaired
surrogates) and very long strings in every free-text field, in bodies, queries and paths.
Each request is refused with a 4xx that says why, in the documented shape (`detail` on
/api/, OpenAI's `error` on /v1/), without a traceback, and without writing a row of any
studio table. At its limit, a free text is stored whole."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from studio.models import ModelPool, PreferencePair, RunStatus, Task
from tests.factories import EndpointFactory, PoolFactory, PrimitiveFactory, RunFactory, TaskFactory
from tests.hardening.conftest import TokenUser
from tests.hardening.hostile import chat, nothing_written, refused, refused_openai, run_body, send

pytestmark = pytest.mark.django_db


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
