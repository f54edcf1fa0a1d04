"""Celery tasks. Each is thin: it takes ids, reloads rows, calls one service."""

from __future__ import annotations

import os
import socket
from typing import Any

from celery import Task, shared_task


@shared_task(bind=True, name="workers.ping", ignore_result=False, time_limit=10, soft_time_limit=5)
def ping(self: Task, nonce: str) -> dict[str, Any]:
    """Answer with the nonce, the queue it came through and who answered."""
    queue = (self.request.delivery_info or {}).get("routing_key")
    return {"nonce": nonce, "queue": queue, "host": socket.gethostname(), "pid": os.getpid()}
