"""Who may call what over REST (issue 8, part 4): every /api/ route in the live OpenAPI
schema, as each role (anonymous, viewer, labeler, researcher, admin), on the caller's own
object and on someone else's, gets the status docs/api.md's table gives (access_rules.py);
a refused call changes no row and says only `detail`. Lists hold only what the role may
read; /v1 takes a token, never a session; every session write without X-CSRFToken is a 403,
and a token needs none."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.test import Client

from studio.models import Role, Run, Task
from studio.services.tokens import token_create
from tests.hardening.access_rules import (
    OTHER,
    OWN,
    ROLES,
    ROUTES,
    expected,
    has_role,
    matrix,
    role_name,
    schema_operations,
)
from tests.hardening.access_world import World, assert_refused_cleanly, fingerprint, send

pytestmark = pytest.mark.django_db


# The matrix


@pytest.mark.parametrize(("route", "role", "owner"), matrix())
def test_access_matrix(world: Callable[[Role | None], World], route: str, role: Role | None, owner: str) -> None:
    assert route in ROUTES, f"{route} has no row in the access matrix: add it with the role docs/api.md gives"
    rule = ROUTES[route]
    w = world(role)
    method, template = route.split(" ", 1)
    ids = w.ids_for(owner, method)
    body = rule.body(ids) if rule.body else None
    before = fingerprint()

    response = send(w.client, method, template.format(**ids), body)

    want = expected(rule, role, owner)
    context = (route, role_name(role), owner)
    assert response.status_code in want, (context, want, response.status_code, response.content[:300])
    if response.status_code in {401, 403, 404}:
        assert_refused_cleanly(response, before, context)


def test_every_schema_route_is_in_the_matrix_and_no_other() -> None:
    assert set(schema_operations()) == set(ROUTES)


def test_lists_hold_only_what_the_role_may_read(world: Callable[[Role | None], World]) -> None:
    for role in ROLES[1:]:
        assert role is not None
        w = world(role)
        mine, others = w.ids[OWN], w.ids[OTHER]
        tasks = {item["id"] for item in w.client.get("/api/tasks?limit=200").json()["items"]}
        runs = {item["id"] for item in w.client.get("/api/runs?limit=200").json()["items"]}
        filtered = w.client.get(f"/api/runs?owner_id={Run.objects.get(pk=others['run_id']).owner_id}").json()
        tokens = {item["id"] for item in w.client.get("/api/tokens").json()["items"]}
        assert mine["task_id"] in tasks and mine["run_id"] in runs
        assert tokens == set(w.actor.api_tokens.values_list("pk", flat=True)), role  # own tokens only, admins too
        if has_role(role, Role.RESEARCHER):
            assert others["task_id"] in tasks and others["run_id"] in runs
            assert filtered["count"] >= 1
        else:
            assert tasks == set(Task.objects.filter(owner=w.actor).values_list("pk", flat=True)), role
            assert runs == set(Run.objects.filter(owner=w.actor).values_list("pk", flat=True)), role
            assert filtered == {"items": [], "count": 0}, role


def test_v1_takes_no_session_only_a_token(world: Callable[[Role | None], World]) -> None:
    w = world(Role.ADMIN)  # logged in by session
    body = json.dumps({"model": "orchestra", "messages": [{"role": "user", "content": "hi"}]})
    assert w.client.get("/v1/models").status_code == 401
    assert w.client.post("/v1/chat/completions", body, content_type="application/json").status_code == 401
    assert Task.objects.filter(owner=w.actor).count() == 1  # only the world's own task


# CSRF: a session write needs the token; a bearer token needs none


def write_routes() -> list[str]:
    return [route for route in schema_operations() if not route.startswith("GET ")]


@pytest.mark.parametrize("route", write_routes())
def test_a_session_write_without_csrf_is_refused(world: Callable[[Role | None], World], route: str) -> None:
    w = world(Role.ADMIN)
    client = Client(enforce_csrf_checks=True)
    client.force_login(w.actor)
    method, template = route.split(" ", 1)
    ids = w.ids_for(OWN, method)
    rule = ROUTES[route]
    body = rule.body(ids) if rule.body else None
    before = fingerprint()

    response = send(client, method, template.format(**ids), body)

    assert response.status_code == 403, (route, response.content[:300])
    assert "CSRF" in response.json()["detail"]
    assert_refused_cleanly(response, before, route)
    # The same call with the token from the csrftoken cookie goes through.
    token = client.get("/api/auth/csrf").json()["csrf_token"]
    allowed = send(client, method, template.format(**ids), body, headers={"X-CSRFToken": token})
    assert allowed.status_code in expected(rule, Role.ADMIN, OWN), (route, allowed.content[:300])


@pytest.mark.parametrize("route", [r for r in write_routes() if r != "POST /api/auth/login"])
def test_a_token_write_needs_no_csrf(world: Callable[[Role | None], World], route: str) -> None:
    w = world(Role.ADMIN)
    raw = token_create(user=w.actor, name="script")[1]
    client = Client(enforce_csrf_checks=True)  # no session at all
    method, template = route.split(" ", 1)
    ids = w.ids_for(OWN, method)
    rule = ROUTES[route]

    response = send(client, method, template.format(**ids), rule.body(ids) if rule.body else None, {
        "Authorization": f"Bearer {raw}"
    })  # fmt: skip

    assert response.status_code in expected(rule, Role.ADMIN, OWN), (route, response.content[:300])
