"""The run WebSocket, through the real ASGI stack (origin check, sessions) and channels-redis."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from studio.asgi import application
from studio.models import Role, Run, User
from studio.services.events import run_event_append
from studio.services.fast_path import fast_hold
from studio.services.tokens import token_create
from studio.streaming import RunTokens, watched
from tests.factories import RunFactory, TaskFactory, UserFactory
from tests.support.websocket import handshake

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ORIGIN = (b"origin", b"http://testserver")


def session_cookie(user: User) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def communicator(run: Run, headers: list[tuple[bytes, bytes]], query: str = "") -> WebsocketCommunicator:
    return WebsocketCommunicator(application, f"/ws/runs/{run.pk}/{query}", headers=[ORIGIN, *headers])


@pytest.fixture
def owned_run() -> tuple[User, Run]:
    owner = UserFactory(role=Role.VIEWER)
    return owner, RunFactory(task=TaskFactory(owner=owner))


async def append(run: Run, n: int) -> None:
    for i in range(n):
        await database_sync_to_async(run_event_append)(
            run_id=run.pk, type="node.noted", payload={"key": "root", "i": i}
        )


async def receive_seqs(ws: WebsocketCommunicator, n: int) -> list[int]:
    messages: list[dict[str, Any]] = [await ws.receive_json_from(timeout=5) for _ in range(n)]
    return [m["seq"] for m in messages]


async def test_owner_gets_replay_then_live_events(owned_run) -> None:
    owner, run = owned_run
    await append(run, 3)
    ws = communicator(run, [await database_sync_to_async(session_cookie)(owner)], "?after=1")
    connected, _ = await ws.connect()
    assert connected
    assert await receive_seqs(ws, 2) == [2, 3]
    await append(run, 2)
    assert await receive_seqs(ws, 2) == [4, 5]
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_another_viewer_is_refused(owned_run) -> None:
    _, run = owned_run
    stranger = await database_sync_to_async(UserFactory)(role=Role.LABELER)
    ws = communicator(run, [await database_sync_to_async(session_cookie)(stranger)])
    assert await handshake(ws) == (False, 4403)


async def test_anonymous_is_refused(owned_run) -> None:
    _, run = owned_run
    assert await handshake(communicator(run, [])) == (False, 4401)


async def test_a_researcher_may_watch_any_run(owned_run) -> None:
    _, run = owned_run
    researcher = await database_sync_to_async(UserFactory)(role=Role.RESEARCHER)
    ws = communicator(run, [await database_sync_to_async(session_cookie)(researcher)])
    connected, _ = await ws.connect()
    assert connected
    await ws.disconnect()


async def test_bearer_token_authenticates(owned_run) -> None:
    owner, run = owned_run
    _, raw = await database_sync_to_async(token_create)(user=owner, name="ws")
    await append(run, 1)
    ws = communicator(run, [(b"authorization", f"Bearer {raw}".encode())])
    connected, _ = await ws.connect()
    assert connected
    assert await receive_seqs(ws, 1) == [1]
    await ws.disconnect()


async def test_foreign_origin_is_refused(owned_run) -> None:
    owner, run = owned_run
    cookie = await database_sync_to_async(session_cookie)(owner)
    ws = WebsocketCommunicator(
        application, f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://evil.example"), cookie]
    )
    connected, _ = await ws.connect()
    assert not connected


async def test_a_run_being_recorded_is_waited_for_then_replayed() -> None:
    """A run /v1's fast path answered, not yet written by a worker (held in Redis): the socket
    waits for it, then replays it, instead of refusing it as unknown."""
    import asyncio

    from studio.services.run_record import run_record
    from tests.studio.test_fast_lost import answered, prepared

    owner = await database_sync_to_async(UserFactory)(role=Role.VIEWER)
    fast = await database_sync_to_async(prepared)(owner)
    assert await database_sync_to_async(fast_hold)(fast)
    record = await database_sync_to_async(answered)(fast)
    ws = WebsocketCommunicator(
        application, f"/ws/runs/{fast.run.pk}/", headers=[ORIGIN, await database_sync_to_async(session_cookie)(owner)]
    )
    connecting = asyncio.ensure_future(ws.connect(timeout=10))
    await asyncio.sleep(0.3)
    assert not connecting.done()
    await database_sync_to_async(run_record)(payload=record)
    connected, _ = await connecting
    assert connected
    types: list[str] = []
    while not types or types[-1] != "run.finished":
        types.append((await ws.receive_json_from(timeout=5))["type"])
    assert types[0] == "run.created"
    await ws.disconnect()


async def test_an_unknown_run_is_refused_at_once(owned_run) -> None:
    owner, run = owned_run
    ws = WebsocketCommunicator(
        application, f"/ws/runs/{run.pk + 1000}/", headers=[ORIGIN, await database_sync_to_async(session_cookie)(owner)]
    )
    assert await handshake(ws, timeout=2) == (False, 4403)


async def test_a_socket_marks_its_run_watched_and_gets_the_tokens_as_they_come(owned_run) -> None:
    """The live tree's socket marks the run watched (its calls then stream, studio/streaming.py)
    and relays each `run.delta` as `kind: delta`, with no seq: deltas are not events."""
    owner, run = owned_run
    assert not await database_sync_to_async(watched)(run.pk)
    ws = communicator(run, [await database_sync_to_async(session_cookie)(owner)])
    connected, _ = await ws.connect()
    assert connected
    for _ in range(50):  # the mark is set just after the socket opens
        if await database_sync_to_async(watched)(run.pk):
            break
        await asyncio.sleep(0.02)
    assert await database_sync_to_async(watched)(run.pk)
    tokens = RunTokens(run.pk, "root", 1, "direct")
    tokens.call()
    tokens.delta("Hello")
    tokens.delta(", world")
    tokens.close()
    received = [await ws.receive_json_from(timeout=5)]
    while "".join(m["text"] for m in received) != "Hello, world":
        received.append(await ws.receive_json_from(timeout=5))
    assert {m["kind"] for m in received} == {"delta"}
    assert received[0] == {"kind": "delta", "node": "root", "attempt": 1, "primitive": "direct", "offset": 0,
                           "text": received[0]["text"]}  # fmt: skip
    assert all("seq" not in m for m in received)
    await ws.disconnect()
