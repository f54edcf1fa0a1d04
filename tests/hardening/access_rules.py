"""The access matrix's expectations (issue 8, part 4): docs/api.md's table of the role each
/api/ route and each WebSocket route asks for, and how the objects of each are owned; and the
statuses a call may get from it: 401 anonymous, 403 below the route's role, 404 for someone
else's task or run below researcher (a labeler may read, not change, the runs of preference
pairs), else the route's own success status. The cases of the matrix come from the live
OpenAPI schema, so a route the table lacks still gets a case, which fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from studio.api import api
from studio.models import Role

# Who calls: None is anonymous.
ROLES: list[Role | None] = [None, Role.VIEWER, Role.LABELER, Role.RESEARCHER, Role.ADMIN]
RANK = {Role.VIEWER: 0, Role.LABELER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}

# Whose object the call names.
OWN = "own"  # the caller's own task, run or token (or an object nobody owns)
OTHER = "other"  # another viewer's
PAIRED = "paired"  # another viewer's run that is in a preference pair

# How a route's objects are owned.
SHARED = "shared"  # nobody owns them: pools, jobs, pairs, ...
OWNED = "owned"  # a task (or a run made of one): someone else's is 404 below researcher
RUN_READ = "run read"  # as OWNED, and a labeler may read the runs of preference pairs
RUN_WRITE = "run write"  # as OWNED: a labeler may not change a paired run
OWN_ONLY = "own only"  # tokens: someone else's is 404 whatever the role

OWNERS = {SHARED: [OWN], OWNED: [OWN, OTHER], RUN_READ: [OWN, OTHER, PAIRED], RUN_WRITE: [OWN, OTHER, PAIRED]}
OWNERS[OWN_ONLY] = [OWN, OTHER]

PUBLIC = None


@dataclass(frozen=True)
class Jsonl:
    """A request body sent as application/x-ndjson."""

    text: str


@dataclass(frozen=True)
class Rule:
    role: Role | None  # the least role; PUBLIC: anyone
    ok: int | tuple[int, ...] = 200  # what an allowed call gets
    objects: str = SHARED
    body: Callable[[dict[str, Any]], Any] | None = None  # of the world's ids


V, L, R, A = Role.VIEWER, Role.LABELER, Role.RESEARCHER, Role.ADMIN

IMPORT_LINE = json.dumps({"prompt": "2+2?", "chosen": "4", "rejected": "5", "source": "human"}) + "\n"
TASK_LINE = json.dumps({"prompt": "What is 2+3?", "gold": "5", "checker": "gsm8k", "domain": "math"}) + "\n"

# The expectation table: docs/api.md's "Routes", one row per operation of the schema.
ROUTES: dict[str, Rule] = {
    "GET /api/health": Rule(PUBLIC, ok=(200, 503)),  # 503 while no Celery worker answers
    "GET /api/auth/csrf": Rule(PUBLIC),
    "POST /api/auth/login": Rule(PUBLIC, body=lambda ids: {"username": ids["username"], "password": "pw"}),
    "POST /api/auth/logout": Rule(V, ok=204),
    "GET /api/auth/me": Rule(V),
    "GET /api/tokens": Rule(V),
    "POST /api/tokens": Rule(V, ok=201, body=lambda ids: {"name": "script"}),
    "DELETE /api/tokens/{token_id}": Rule(V, ok=204, objects=OWN_ONLY),
    "GET /api/pools": Rule(V),
    "POST /api/pools": Rule(A, ok=201, body=lambda ids: {"name": "new-pool"}),
    "GET /api/pools/{pool_id}": Rule(V),
    "PATCH /api/pools/{pool_id}": Rule(A, body=lambda ids: {"description": "changed"}),
    "DELETE /api/pools/{pool_id}": Rule(A, ok=204),
    "GET /api/pools/{pool_id}/endpoints": Rule(V),
    "POST /api/pools/{pool_id}/endpoints": Rule(
        A, ok=201, body=lambda ids: {"name": "new-endpoint", "model": "openai/new"}
    ),
    "GET /api/endpoints/{endpoint_id}": Rule(V),
    "PATCH /api/endpoints/{endpoint_id}": Rule(A, body=lambda ids: {"context_window": 4096}),
    "DELETE /api/endpoints/{endpoint_id}": Rule(A, ok=204),
    "GET /api/primitives": Rule(V),
    "POST /api/primitives": Rule(A, ok=201, body=lambda ids: {"name": "new-primitive"}),
    "GET /api/primitives/{primitive_id}": Rule(V),
    "PATCH /api/primitives/{primitive_id}": Rule(A, body=lambda ids: {"description": "changed"}),
    "DELETE /api/primitives/{primitive_id}": Rule(A, ok=204),
    "GET /api/admissibility": Rule(V),
    "POST /api/admissibility": Rule(
        A, ok=201, body=lambda ids: {"endpoint_id": ids["endpoint_id"], "primitive_id": ids["free_primitive_id"]}
    ),
    "GET /api/admissibility/{admissibility_id}": Rule(V),
    "PATCH /api/admissibility/{admissibility_id}": Rule(A, body=lambda ids: {"limits": {"max_tokens": 64}}),
    "DELETE /api/admissibility/{admissibility_id}": Rule(A, ok=204),
    "POST /api/tasks": Rule(V, ok=201, body=lambda ids: {"text": "1+1?"}),
    "GET /api/tasks": Rule(V),
    "POST /api/tasks/composite": Rule(
        V, ok=201, body=lambda ids: {"items": [{"source": "hardening", "item_id": "item-1"}]}
    ),
    "GET /api/tasks/{task_id}": Rule(V, objects=OWNED),
    "POST /api/runs": Rule(
        V, ok=201, objects=OWNED, body=lambda ids: {"task_id": ids["task_id"], "pool_id": ids["pool_id"]}
    ),
    "GET /api/runs": Rule(V),
    "POST /api/runs/{run_id}/cancel": Rule(V, objects=RUN_WRITE),
    "POST /api/runs/{run_id}/nodes/{node_key}/rerun": Rule(
        V, ok=202, objects=RUN_WRITE, body=lambda ids: {"endpoint_id": ids["endpoint_id"], "primitive": "direct"}
    ),
    "GET /api/runs/{run_id}/tree": Rule(V, objects=RUN_READ),
    "GET /api/runs/{run_id}": Rule(V, objects=RUN_READ),
    "GET /api/runs/{run_id}/events": Rule(V, objects=RUN_READ),
    "POST /api/training/jobs": Rule(R, ok=201, body=lambda ids: {"kind": "policy", "config": {}}),
    "GET /api/training/jobs": Rule(R),
    "GET /api/training/jobs/{job_id}": Rule(R),
    "GET /api/checkpoints": Rule(R),
    "POST /api/checkpoints/{checkpoint_id}/promote": Rule(R),
    "GET /api/evaluations/options": Rule(R),
    "POST /api/evaluations": Rule(R, ok=201, body=lambda ids: {}),
    "GET /api/evaluations": Rule(R),
    "GET /api/evaluations/{evaluation_id}": Rule(R),
    "GET /api/preferences/queue": Rule(L),
    "POST /api/preferences/pairs/{pair_id}/labels": Rule(L, ok=201, body=lambda ids: {"verdict": "a"}),
    # the pair of a DELETE is one the caller labeled (World.spares)
    "DELETE /api/preferences/pairs/{pair_id}/labels": Rule(L, ok=204),
    "GET /api/preferences/pairs": Rule(R),
    "POST /api/preferences/pairs": Rule(
        R, ok=201, body=lambda ids: {"run_a_id": ids["ended_run_a"], "run_b_id": ids["ended_run_b"]}
    ),
    "GET /api/preferences/agreement": Rule(R),
    "GET /api/preferences/export": Rule(R),
    "POST /api/preferences/import": Rule(R, ok=201, body=lambda ids: Jsonl(IMPORT_LINE)),
    "POST /api/tasks/from-benchmark": Rule(V, ok=201, body=lambda ids: {"benchmark": "gsm8k", "n": 1}),
    "POST /api/tasks/import": Rule(V, ok=201, body=lambda ids: Jsonl(TASK_LINE)),
    "POST /api/collections": Rule(
        R,
        ok=201,
        body=lambda ids: {
            "pool_id": ids["pool_id"],
            "task_ids": [ids["scorable_task_id"]],
            "pairs": [{"endpoint_id": ids["endpoint_id"], "primitive": "direct"}],
            "budget_usd": 1,
        },  # fmt: skip
    ),
    "GET /api/collections": Rule(R),
    "GET /api/collections/{collection_id}": Rule(R),
    "POST /api/collections/{collection_id}/cancel": Rule(R, body=lambda ids: {}),
    "POST /api/collections/{collection_id}/resume": Rule(R, body=lambda ids: {}),
    "GET /api/options": Rule(V),
    "GET /api/recorded-items": Rule(V),
    "GET /api/users": Rule(R),
}

# The WebSocket routes: who may connect (docs/api.md, "WebSocket").
WS_ROUTES: dict[str, Rule] = {
    "/ws/runs/{run_id}/": Rule(V, objects=RUN_READ),
    "/ws/training/{job_id}/": Rule(R),
    "/ws/evaluations/{evaluation_id}/": Rule(R),
}
WS_REFUSED = {401: 4401, 403: 4403, 404: 4403}  # a refused socket closes with these codes


def has_role(role: Role, minimum: Role) -> bool:
    return RANK[role] >= RANK[minimum]


def expected(rule: Rule, role: Role | None, owner: str) -> tuple[int, ...]:
    """The statuses a call may get, from docs/api.md's rules."""
    ok = rule.ok if isinstance(rule.ok, tuple) else (rule.ok,)
    if rule.role is PUBLIC:
        return ok
    if role is None:
        return (401,)
    if not has_role(role, rule.role):
        return (403,)
    if owner == OWN or rule.objects == SHARED:
        return ok
    if rule.objects == OWN_ONLY:
        return (404,)
    if has_role(role, Role.RESEARCHER):
        return ok
    if owner == PAIRED and rule.objects == RUN_READ and has_role(role, Role.LABELER):
        return ok
    return (404,)


def schema_operations() -> list[str]:
    schema = api.get_openapi_schema()
    return [f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item]


def role_name(role: Role | None) -> str:
    return role.value if role is not None else "anonymous"


def matrix() -> list[Any]:
    """(route, role, owner) for every operation of the live schema; a route the table lacks
    still gets a case, which fails."""
    cases = []
    for route in schema_operations():
        rule = ROUTES.get(route)
        for owner in OWNERS[rule.objects] if rule else [OWN]:
            for role in ROLES:
                cases.append(pytest.param(route, role, owner, id=f"{route} {role_name(role)} {owner}"))
    return cases
