"""A refused WebSocket, through uvicorn as a browser meets it: the connection opens and closes
with 4401 (not signed in) or 4403 (not allowed, or no such run), which docs/api.md promises and
the studio's RunSocket reads to stop retrying; not an HTTP 403 on the handshake."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin

from studio.models import User

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


async def close_code(url: str, origin: str, headers: dict[str, str]) -> int | None:
    async with connect(url, origin=Origin(origin), additional_headers=headers, open_timeout=10) as socket:
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(socket.recv(), timeout=10)
        return socket.close_code


@pytest.mark.parametrize(("signed_in", "code"), [(False, 4401), (True, 4403)])
def test_a_refusal_arrives_as_its_close_code(
    asgi_server: str, user_token: tuple[User, str], signed_in: bool, code: int
) -> None:
    url = asgi_server.replace("http://", "ws://", 1) + "/ws/runs/987654/"
    headers = {"Authorization": f"Bearer {user_token[1]}"} if signed_in else {}
    assert asyncio.run(close_code(url, asgi_server, headers)) == code
