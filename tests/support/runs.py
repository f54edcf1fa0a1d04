"""Waiting for a run that a real worker is executing."""

from __future__ import annotations

import time

from studio.models import Run

ENDED = {"succeeded", "failed", "cancelled"}


def wait_for_run(run_id: int, timeout: float = 30) -> Run:
    """The run once it has ended; AssertionError with its status if it has not by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in ENDED:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} is still {Run.objects.get(pk=run_id).status} after {timeout} s")
