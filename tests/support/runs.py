"""Waiting for a run that a real worker is executing."""

from __future__ import annotations

import time

from studio.models import Run

ENDED = {"succeeded", "failed", "cancelled"}


def wait_for_run(run_id: int, timeout: float = 30) -> Run:
    """The run once it has ended; AssertionError with its status if it has not by `timeout`.
    A run /v1's fast path answered is written just after its answer (by a worker): until
    then it does not exist, which counts as not ended yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.filter(pk=run_id).first()
        if run is not None and run.status in ENDED:
            return run
        time.sleep(0.02)
    found = Run.objects.filter(pk=run_id).first()
    raise AssertionError(f"run {run_id} is still {found.status if found else 'unrecorded'} after {timeout} s")


def recorded_runs(count: int = 1, timeout: float = 30, **filters: object) -> list[Run]:
    """The `count` ended runs matching `filters` once all are written and ended (see wait_for_run)."""
    deadline = time.monotonic() + timeout
    while True:
        runs = list(Run.objects.filter(**filters).order_by("pk"))
        if len(runs) >= count and all(run.status in ENDED for run in runs):
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(runs)} of {count} runs matching {filters} recorded and ended in {timeout} s")
        time.sleep(0.02)
