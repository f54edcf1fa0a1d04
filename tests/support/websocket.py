"""Connecting a channels test communicator as a browser would see it."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator


async def handshake(ws: WebsocketCommunicator, timeout: float = 5) -> tuple[bool, int | None]:
    """(True, None) when the consumer let the client in and sent it something, else (False, the
    close code). A refusal is an accepted connection closed at once with its code
    (`studio.consumers.refuse`), so that a browser sees 4401 or 4403, not an HTTP 403 on the
    handshake; one refused before it (the origin check) is (False, its code) too. The first
    message of a connection let in stays queued for the test to read."""
    connected, code = await ws.connect(timeout=timeout)
    if not connected:
        return False, code
    first = await ws.receive_output(timeout=timeout)
    if first["type"] == "websocket.close":
        return False, first.get("code")
    queued = [first]
    while not ws.output_queue.empty():
        queued.append(ws.output_queue.get_nowait())
    for output in queued:
        ws.output_queue.put_nowait(output)
    return True, None
