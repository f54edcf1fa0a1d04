"""Thread pools kept per process: a forked child (a prefork worker) makes its own, as the
parent's threads do not follow it across the fork."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pools: dict[tuple[int, str], ThreadPoolExecutor] = {}


def process_pool(name: str, size: int) -> ThreadPoolExecutor:
    """This process's pool `name` of up to `size` threads (the size its first use asked for)."""
    key = (os.getpid(), name)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(max_workers=max(1, size), thread_name_prefix=name)
        return pool
