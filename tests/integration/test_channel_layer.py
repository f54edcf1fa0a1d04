"""The channel layer on the real Redis, as the web process configures it.

A WebSocket consumer waits for its next message with BZPOPMIN, which Redis answers with
nothing after 5 s; redis-py 8 also gives up reading after 5 s by default. When the event
loop came back a moment late (another request, or a thread holding the GIL), the read's
timeout fired before the empty reply was taken, the consumer died and the page's socket
closed (the cause of a browser test that failed on clean clones)."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers

pytestmark = pytest.mark.integration

BLOCK_S = 5  # channels_redis's brpop_timeout


def test_a_consumer_outlives_an_event_loop_that_is_late_for_an_empty_wait() -> None:
    async def scenario() -> dict[str, str]:
        # A layer of its own: the shared one keeps pools bound to the loops of earlier
        # tests, which closing from this loop would trip over.
        layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
        channel = await layer.new_channel()
        loop = asyncio.get_running_loop()
        # Hold the loop across the moment Redis answers the first empty wait.
        loop.call_later(BLOCK_S - 0.3, time.sleep, 0.6)
        loop.call_later(BLOCK_S + 1, lambda: asyncio.ensure_future(layer.send(channel, {"type": "hello"})))
        try:
            return await asyncio.wait_for(layer.receive(channel), timeout=BLOCK_S + 10)
        finally:
            await layer.close_pools()

    assert asyncio.run(scenario()) == {"type": "hello"}
