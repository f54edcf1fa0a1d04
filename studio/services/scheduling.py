"""Waking a run's engine: one pending step per run, however many attempts finish at once.

Each finished attempt asks for a step. While one is already queued, asking again changes
nothing: that step will see every attempt finished before it starts (it clears the mark
before it reads the run), so no wake-up is lost and a burst of N finishes costs one step,
not N. If the cache is unreachable, every request enqueues a step (correct, just slower).
"""

from __future__ import annotations

import logging

from django.core.cache import cache

log = logging.getLogger(__name__)

MARK_TTL_S = 120  # a lost step message stops blocking new ones after this long


def _mark(run_id: int) -> str:
    return f"run-step-queued:{run_id}"


def step_request(run_id: int) -> None:
    """Queue a step of the run unless one is already queued. Call after commit."""
    from workers.tasks import run_step

    try:
        first = cache.add(_mark(run_id), 1, timeout=MARK_TTL_S)
    except Exception:  # the cache is Redis; the broker may still be fine
        log.warning("cache unreachable; queueing a step of run %s anyway", run_id, exc_info=True)
        first = True
    if first:
        run_step.delay(run_id)


def step_started(run_id: int) -> None:
    """Clear the mark before the step reads the run, so later finishes queue another step."""
    try:
        cache.delete(_mark(run_id))
    except Exception:
        log.warning("cache unreachable while starting a step of run %s", run_id, exc_info=True)
