"""Objects loaded from files, kept per version of the file.

The engine makes a policy anew at every step of a run; loading its checkpoint each time
(`torch.load`, milliseconds) would cost more than the decision. `load_once` loads a file once
per version: the key is the resolved path, its modification time and size, so a checkpoint
written again (promoted, retrained in place) is loaded again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 8  # a few policies and reward models in use at once
_CACHE: OrderedDict[tuple[str, str, int, int], Any] = OrderedDict()
_LOCK = threading.Lock()


def load_once(kind: str, path: str | Path, load: Callable[[Path], T]) -> T:
    """`load(path)`, or what it returned before for this version of the file. `kind` keeps
    two loaders of one file apart. OSError when the file cannot be read."""
    resolved = Path(path).resolve()
    stat = resolved.stat()
    key = (kind, str(resolved), stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            value: T = _CACHE[key]
            return value
    loaded = load(resolved)  # outside the lock: two threads may load a new file at once, harmlessly
    with _LOCK:
        _CACHE[key] = loaded
        while len(_CACHE) > MAX_ENTRIES:
            _CACHE.popitem(last=False)
    return loaded


def forget() -> None:
    """Drop everything loaded (tests)."""
    with _LOCK:
        _CACHE.clear()
