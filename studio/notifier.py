"""Sending run events to the channel layer without blocking the sender.

`async_to_sync(layer.group_send)` builds an event loop and a Redis connection for every
call: about 2.3 ms of CPU per event, paid inside the worker's task (bench/throughput.py).
Instead, each process keeps one background thread with one event loop and one queue:
`notify()` only enqueues, and the loop sends in order over a connection it keeps.

Postgres holds every event; a notification lost (the process dies, Redis is away) is not
data lost: a client that sees a gap fills it from the database (studio.consumers).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] | None = None

    def _start(self) -> asyncio.AbstractEventLoop:
        """The loop of this process; started on first use, again after a fork."""
        with self._lock:
            if self._pid != os.getpid() or self._loop is None:
                loop = asyncio.new_event_loop()
                self._queue = asyncio.Queue()
                threading.Thread(target=self._run, args=(loop,), name="event-notifier", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._send_forever())

    async def _send_forever(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            group, message = await queue.get()
            layer = get_channel_layer()
            if layer is None:
                continue
            try:
                await layer.group_send(group, message)
            except Exception:  # Redis away: the event is in Postgres; clients fill gaps from there
                log.warning("could not notify %s", group, exc_info=True)

    def notify(self, group: str, message: dict[str, Any]) -> None:
        """Queue `message` for `group`; returns at once. Messages go out in the order queued."""
        loop = self._start()
        assert self._queue is not None
        loop.call_soon_threadsafe(self._queue.put_nowait, (group, message))


notifier = Notifier()
