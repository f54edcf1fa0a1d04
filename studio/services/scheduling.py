"""Waking a run's engine: one pending step per run, however many attempts finish at once.

Each finished attempt asks for a step. While one is already queued, asking again changes
nothing: that step will see every attempt finished before it starts (it clears the mark
before it reads the run), so no wake-up is lost and a burst of N finishes costs one step,
not N. If the cache is unreachable, every request enqueues a step (correct, just slower).

If the broker is unreachable too (Redis restarting for longer than the publish retries
wait), the request is dropped with a warning and `runs_recover`, queued every
ORCHESTRA_RECOVERY_INTERVAL_S by one worker, steps the run once the broker is back. The
sweep steps a quiet run whatever its mark says: a mark can outlive its step (`step_request`).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from studio import queues
from studio.models import Run, RunEvent, RunStatus

log = logging.getLogger(__name__)

MARK_TTL_S = 120  # a lost step message stops blocking new ones after this long
RECOVERY_MARK = "runs-recover-queued"


def _mark(run_id: int) -> str:
    return f"run-step-queued:{run_id}"


def step_request(run_id: int, *, force: bool = False) -> None:
    """Queue a step of the run unless one is already queued. Call after commit. Never raises:
    a step that cannot be queued now is taken by the next `runs_recover`.

    `force` (the recovery sweep) queues one whatever the mark says: a mark can outlive the step
    it stood for. With a broker other than Redis, a step can run while Redis is away; it cannot
    clear the mark then, and Redis keeps the mark across its restart (it writes its dump when
    stopped), so until the mark expires every request would be held back by it."""
    try:
        if force:
            cache.set(_mark(run_id), 1, timeout=MARK_TTL_S)
        first = force or cache.add(_mark(run_id), 1, timeout=MARK_TTL_S)
    except Exception:  # the cache is Redis; the broker may still be fine
        log.warning("cache unreachable; queueing a step of run %s anyway", run_id, exc_info=True)
        first = True
    if first and not queues.send(queues.RUN_STEP, run_id):
        log.warning("run %s: no step queued; the recovery sweep will step it", run_id)
        step_started(run_id)  # a mark with no message behind it would hold back the next request


def step_started(run_id: int) -> None:
    """Clear the mark before the step reads the run, so later finishes queue another step."""
    try:
        cache.delete(_mark(run_id))
    except Exception:
        log.warning("cache unreachable while starting a step of run %s", run_id, exc_info=True)


def runs_quiet(*, quiet_s: float) -> list[int]:
    """Runs still pending or running whose last event (or creation) is older than `quiet_s`."""
    since = timezone.now() - timedelta(seconds=quiet_s)
    last_event = RunEvent.objects.filter(run=OuterRef("pk"), seq=OuterRef("last_seq")).values("created_at")[:1]
    return list(
        Run.objects.filter(status__in=[RunStatus.PENDING, RunStatus.RUNNING])
        .annotate(active_at=Coalesce(Subquery(last_event), "created_at"))
        .filter(active_at__lt=since)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def runs_recover(*, quiet_s: float | None = None) -> list[int]:
    """Ask for a step of every quiet run (see runs_quiet; default ORCHESTRA_RECOVERY_INTERVAL_S)
    and return their ids. A step is idempotent: for a run that is only waiting on a long call
    it changes nothing; for one whose step or attempts were lost with a message it goes on
    (the step sends again attempts lost or stale: engine._resend_lost)."""
    quiet = settings.ORCHESTRA_RECOVERY_INTERVAL_S if quiet_s is None else quiet_s
    run_ids = runs_quiet(quiet_s=quiet)
    for run_id in run_ids:
        step_request(run_id, force=True)  # a quiet run's mark, if any, is stale (see step_request)
    if run_ids:
        log.info("recovery: asked for a step of %d quiet run(s): %s", len(run_ids), run_ids[:20])
    return run_ids


def recovery_request() -> bool:
    """Queue one `workers.runs_recover` per ORCHESTRA_RECOVERY_INTERVAL_S, whichever worker asks
    first; True if this call queued it. Never raises (the cache or broker may be away)."""
    interval = settings.ORCHESTRA_RECOVERY_INTERVAL_S
    try:
        if not cache.add(RECOVERY_MARK, 1, timeout=max(1, interval - 1)):
            return False
    except Exception:
        log.warning("cache unreachable; no recovery sweep for %s s", interval, exc_info=True)
        return False
    return queues.send(queues.RUNS_RECOVER)
