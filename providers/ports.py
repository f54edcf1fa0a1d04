"""A free TCP port on loopback, for a server a test starts (never a fixed one: see tests/conftest.py)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
