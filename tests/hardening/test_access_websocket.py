"""Who may connect to what (issue 8, part 4): every WebSocket route, as each role
(anonymous, viewer, labeler, researcher, admin), on the caller's own run or job and on
someone else's, connects and sends data, or is closed with the code docs/api.md gives
(access_rules.py). A revoked API token fails at once on /api, /v1 and the WebSocket, and a
socket from a foreign Origin is refused whatever its credentials."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client

from studio.asgi import application
from studio.models import Role
from studio.services.tokens import token_create
from tests.hardening.access_rules import OWN, OWNERS, ROLES, WS_REFUSED, WS_ROUTES, expected, role_name
from tests.hardening.access_world import World
from tests.support.websocket import handshake

pytestmark = pytest.mark.django_db


# The matrix


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
    connected, code = await handshake(ws)
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
