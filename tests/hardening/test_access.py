"""Who may call what (issue 8, part 4).

- The access matrix: every /api/ route in the live OpenAPI schema and every WebSocket
  routes, as each role (anonymous, viewer, labeler, researcher, admin), on the caller's own
  object and on someone else's. The expected status comes from docs/api.md's table:
  401 anonymous, 403 below the route's role, 404 for someone else's task or run below
  researcher (a labeler may read, not change, the runs of preference pairs), else the
  route's own success status. A refused call changes no row and says only `detail`.
- API tokens: a revoked token fails at once on /api, /v1 and the WebSocket.
- CSRF: every session write without X-CSRFToken is a 403; a token needs none.
- WebSocket origin: a foreign Origin is refused.
- Login throttling: too many failed logins are a 429 with Retry-After, held in Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.conf import settings
from django.test import Client

from studio.api import api
from studio.asgi import application
from studio.models import (
    Checkpoint,
    EvaluationRun,
    Node,
    PreferenceLabel,
    PreferencePair,
    RecordedOutcome,
    Role,
    Run,
    RunEvent,
    Task,
    TrainingJob,
    User,
)
from studio.services.throttle import login_failures_clear
from studio.services.tokens import token_create
from tests.factories import (
    AdmissibilityFactory,
    EndpointFactory,
    PoolFactory,
    PrimitiveFactory,
    RunFactory,
    TaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

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


# The world each case runs in


@dataclass
class World:
    actor: User  # the caller (a viewer nobody is logged in as, for anonymous calls)
    client: Client
    ids: dict[str, dict[str, Any]]  # owner -> the ids a route's path and body take
    spares: dict[str, int]  # unused pool, endpoint, primitive and admissibility, to delete

    def ids_for(self, owner: str, method: str) -> dict[str, Any]:
        ids = dict(self.ids[owner])
        if method == "DELETE":
            ids.update(self.spares)
        return ids


def _run_of(owner: User, pool_id: int, endpoint_id: int, primitive_id: int, task: Task | None = None) -> Run:
    """A running run with a root node that may be re-run, and one event."""
    run = RunFactory(task=task or TaskFactory(owner=owner), pool_id=pool_id, status="running")
    Node.objects.create(
        run=run, key="root", kind="root", text=run.task.text, status="succeeded",
        endpoint_id=endpoint_id, primitive_id=primitive_id, answer="2",
    )  # fmt: skip
    RunEvent.objects.create(run=run, seq=1, type="run.started", payload={})
    run.last_seq = 1
    run.save(update_fields=["last_seq"])
    return run


def build_world(role: Role | None, data_dir: Path) -> World:
    actor = UserFactory(role=role or Role.VIEWER)
    stranger = UserFactory(role=Role.VIEWER)
    direct = PrimitiveFactory(name="direct")
    admissibility = AdmissibilityFactory(primitive=direct)
    endpoint = admissibility.endpoint
    pool = endpoint.pool
    spare_endpoint = EndpointFactory(pool=pool)
    spares = {
        "pool_id": PoolFactory().pk,
        "endpoint_id": spare_endpoint.pk,
        "primitive_id": PrimitiveFactory(name="spare").pk,
        "admissibility_id": AdmissibilityFactory(endpoint=spare_endpoint, primitive=direct).pk,
    }
    free_primitive = PrimitiveFactory(name="free")

    def run_of(user: User, task: Task | None = None) -> Run:
        return _run_of(user, pool.pk, endpoint.pk, direct.pk, task)

    own_run, other_run, paired_run = run_of(actor), run_of(stranger), run_of(stranger)
    partner = RunFactory(task=paired_run.task, status="succeeded")
    pair = PreferencePair.objects.create(task=paired_run.task, run_a=paired_run, run_b=partner)
    judged_task = TaskFactory(owner=stranger)
    judged_a, judged_b = (RunFactory(task=judged_task, status="succeeded") for _ in range(2))
    judged = PreferencePair.objects.create(task=judged_task, run_a=judged_a, run_b=judged_b)
    PreferenceLabel.objects.create(pair=judged, labeler=actor, verdict="a")
    spares["pair_id"] = judged.pk  # DELETE .../labels takes back the caller's verdict
    ended_task = TaskFactory(owner=stranger)
    ended_a, ended_b = (RunFactory(task=ended_task, status="succeeded") for _ in range(2))

    (data_dir / "checkpoint.pt").write_bytes(b"weights")
    checkpoint = Checkpoint.objects.create(kind="policy", name=f"ck-{actor.pk}", path="checkpoint.pt")
    RecordedOutcome.objects.get_or_create(
        source="hardening", item_id="item-1", model="m", primitive="direct",
        defaults={"split": "test", "benchmark": "arith", "domain": "math", "prompt": "What is 1+1?",
                  "prompt_sha256": "0" * 64, "gold": "2", "score": 1.0},
    )  # fmt: skip
    shared = {
        "username": actor.username,
        "pool_id": pool.pk,
        "endpoint_id": endpoint.pk,
        "primitive_id": direct.pk,
        "free_primitive_id": free_primitive.pk,
        "admissibility_id": admissibility.pk,
        "node_key": "root",
        "job_id": TrainingJob.objects.create(kind="policy").pk,
        "checkpoint_id": checkpoint.pk,
        "evaluation_id": EvaluationRun.objects.create().pk,
        "pair_id": pair.pk,
        "ended_run_a": ended_a.pk,
        "ended_run_b": ended_b.pk,
    }

    def owned(run: Run, token_owner: User) -> dict[str, Any]:
        token = token_create(user=token_owner, name="t")[0]
        return {**shared, "task_id": run.task_id, "run_id": run.pk, "token_id": token.pk}

    ids = {OWN: owned(own_run, actor), OTHER: owned(other_run, stranger), PAIRED: owned(paired_run, stranger)}
    client = Client()
    if role is not None:
        client.force_login(actor)
    return World(actor=actor, client=client, ids=ids, spares=spares)


@pytest.fixture
def world(settings: Any, tmp_path: Path) -> Callable[[Role | None], World]:
    settings.DATA_DIR = tmp_path  # where the checkpoint's file is
    return lambda role: build_world(role, tmp_path)


def send(client: Client, method: str, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if isinstance(body, Jsonl):
        kwargs.update(data=body.text.encode(), content_type="application/x-ndjson")
    elif method in {"POST", "PATCH", "PUT"}:
        kwargs.update(data=json.dumps(body if body is not None else {}), content_type="application/json")
    return getattr(client, method.lower())(path, **kwargs)


def fingerprint() -> dict[str, list[dict[str, Any]]]:
    """Every row of the studio's tables: a refused call must leave them all as they were."""
    return {
        model.__name__: list(model._default_manager.order_by("pk").values())
        for model in apps.get_app_config("studio").get_models()
    }


def assert_refused_cleanly(response: Any, before: dict[str, Any], context: Any) -> None:
    assert set(response.json()) == {"detail"}, (context, response.content)
    assert fingerprint() == before, (context, "a refused call changed rows")


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


def ws_matrix() -> list[Any]:
    return [
        pytest.param(route, role, owner, id=f"{route} {role_name(role)} {owner}")
        for route, rule in WS_ROUTES.items()
        for owner in OWNERS[rule.objects]
        for role in ROLES
    ]


def test_the_ws_matrix_covers_every_websocket_route() -> None:
    from studio.routing import websocket_urlpatterns

    routes = {"/" + str(pattern.pattern).replace("<int:", "{").replace(">", "}") for pattern in websocket_urlpatterns}
    assert routes == set(WS_ROUTES)


ORIGIN = (b"origin", b"http://testserver")


def session_cookie(client: Client) -> list[tuple[bytes, bytes]]:
    cookie = client.cookies.get("sessionid")
    return [(b"cookie", f"sessionid={cookie.value}".encode())] if cookie else []


async def ws_connect(path: str, headers: list[tuple[bytes, bytes]]) -> tuple[bool, int | None]:
    ws = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await ws.connect(timeout=5)
    if connected:
        first = await ws.receive_json_from(timeout=5)  # the replay or the job's state: data flows
        assert first["kind"] in {"event", "progress"}, first
        await ws.disconnect()
    return connected, code


@pytest.mark.parametrize(("route", "role", "owner"), ws_matrix())
def test_websocket_matrix(world: Callable[[Role | None], World], route: str, role: Role | None, owner: str) -> None:
    # Synchronous on purpose: the consumers' database calls run on this thread, inside the
    # test's transaction, and see its rows.
    rule = WS_ROUTES[route]
    w = world(role)
    path = route.format(**w.ids_for(owner, "GET"))
    connected, code = async_to_sync(ws_connect)(path, [ORIGIN, *session_cookie(w.client)])
    (want,) = {WS_REFUSED.get(s, s) for s in expected(rule, role, owner)}
    context = (route, role_name(role), owner, connected, code)
    if want == 200:
        assert connected, context
    else:
        assert not connected and code == want, context


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


# API tokens: revocation holds everywhere at once


# The consumers close the thread's database connection when they are done; the test goes
# on using the database afterwards, so its rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_fails_at_once_on_api_v1_and_the_websocket(world: Callable[[Role | None], World]) -> None:
    w = world(Role.VIEWER)
    raw = w.client.post("/api/tokens", json.dumps({"name": "ci"}), content_type="application/json").json()
    bearer = {"Authorization": f"Bearer {raw['token']}"}
    ws_path = f"/ws/runs/{w.ids[OWN]['run_id']}/"
    ws_headers = [ORIGIN, (b"authorization", bearer["Authorization"].encode())]
    anonymous = Client()

    assert anonymous.get("/api/auth/me", headers=bearer).status_code == 200
    assert anonymous.get("/v1/models", headers=bearer).status_code == 200
    assert async_to_sync(ws_connect)(ws_path, ws_headers) == (True, None)

    assert w.client.delete(f"/api/tokens/{raw['id']}").status_code == 204

    assert anonymous.get("/api/auth/me", headers=bearer).status_code == 401
    assert (
        anonymous.post("/api/tasks", json.dumps({"text": "1?"}), "application/json", headers=bearer).status_code == 401
    )
    v1 = anonymous.get("/v1/models", headers=bearer)
    assert v1.status_code == 401 and v1.json()["error"]["code"] == "invalid_api_key"
    assert async_to_sync(ws_connect)(ws_path, ws_headers) == (False, 4401)


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


# WebSocket origin


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "origin",
    [b"http://evil.example", b"http://testserver.evil.example", b"https://evil.example:443", b"null", None],
    ids=["foreign", "suffix", "foreign-https", "null", "none"],
)
def test_a_websocket_from_a_foreign_origin_is_refused(world: Callable[[Role | None], World], origin: bytes) -> None:
    w = world(Role.ADMIN)
    path = f"/ws/runs/{w.ids[OWN]['run_id']}/"
    raw = token_create(user=w.actor, name="ws")[1]
    for credentials in (session_cookie(w.client), [(b"authorization", f"Bearer {raw}".encode())]):
        # The same credentials from the studio's own origin connect ...
        assert async_to_sync(ws_connect)(path, [ORIGIN, *credentials])[0]
        # ... and from another origin (or none) they do not.
        headers = [*credentials] if origin is None else [(b"origin", origin), *credentials]
        connected, _ = async_to_sync(ws_connect)(path, headers)
        assert not connected, origin


# Login throttling


@pytest.fixture
def login_limits(settings: Any) -> Any:
    settings.ORCHESTRA_LOGIN_MAX_FAILURES = 3
    settings.ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP = 6
    settings.ORCHESTRA_LOGIN_WINDOW_S = 60
    return settings


def login(client: Client, username: str, password: str) -> Any:
    return client.post("/api/auth/login", {"username": username, "password": password}, "application/json")


def test_repeated_failed_logins_are_throttled_per_username(login_limits: Any, make_user: Callable[..., User]) -> None:
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.0.1")
    for _ in range(3):
        assert login(client, user.username, "wrong").status_code == 401

    refused = login(client, user.username, "pw")  # even the right password: no more guesses
    assert refused.status_code == 429
    assert set(refused.json()) == {"detail"} and "Too many failed logins" in refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= 60
    # Held in Redis, not in this process: another client, address or process sees it too.
    assert login(Client(REMOTE_ADDR="10.8.0.2"), user.username.upper(), "pw").status_code == 429
    keys = redis.Redis.from_url(str(settings.REDIS_URL)).keys(
        f"*{settings.CACHES['default']['KEY_PREFIX']}*login-failures:user:*"
    )
    assert keys
    # Other users are not affected.
    other = make_user(Role.VIEWER)
    assert login(client, other.username, "pw").status_code == 200


def test_a_successful_login_resets_the_count(login_limits: Any, make_user: Callable[..., User]) -> None:
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.1.1")
    for _ in range(2):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 200
    for _ in range(2):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 200


def test_failed_logins_from_one_address_are_throttled(login_limits: Any, make_user: Callable[..., User]) -> None:
    client = Client(REMOTE_ADDR="10.8.2.1")
    for n in range(6):  # a different username each time: the per-username count never trips
        assert login(client, f"nobody-{n}", "guess").status_code == 401
    user = make_user(Role.VIEWER)
    assert login(client, user.username, "pw").status_code == 429
    assert login(Client(REMOTE_ADDR="10.8.2.2"), user.username, "pw").status_code == 200


def test_the_lockout_ends_with_its_window(login_limits: Any, make_user: Callable[..., User]) -> None:
    login_limits.ORCHESTRA_LOGIN_WINDOW_S = 1
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.3.1")
    for _ in range(3):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 429
    time.sleep(1.2)
    assert login(client, user.username, "pw").status_code == 200
    login_failures_clear(username=user.username)


def test_the_django_admin_login_shares_the_count(login_limits: Any, make_user: Callable[..., User]) -> None:
    staff = make_user(Role.ADMIN, is_staff=True, is_superuser=True)
    client = Client(REMOTE_ADDR="10.8.4.1")

    def admin_login(password: str) -> bool:
        client.post("/admin/login/", {"username": staff.username, "password": password, "next": "/admin/"})
        return client.get("/admin/").status_code == 200

    for _ in range(3):
        assert not admin_login("wrong")
    assert login(client, staff.username, "pw").status_code == 429  # the API sees the admin's failures
    assert not admin_login("pw")  # and the admin refuses the right password while locked out
    login_failures_clear(username=staff.username)
    assert admin_login("pw")
