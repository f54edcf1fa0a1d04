"""The Redis cache backend (studio.cache): one client per server and process, whatever the thread."""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache import caches


def test_threads_share_one_redis_client() -> None:
    """Django keeps a cache object per thread; under ASGI a request's sync work runs in a new
    thread, so a client per cache object was a new Redis connection per request."""
    clients: list[Any] = []

    def grab() -> None:
        cache = caches["default"]
        cache.set("studio-cache-test", 1, timeout=5)  # works through the shared client
        clients.append(cache._cache.get_client(write=True))  # type: ignore[attr-defined]

    threads = [threading.Thread(target=grab) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    grab()
    assert len(clients) == 5
    assert len({id(client) for client in clients}) == 1
