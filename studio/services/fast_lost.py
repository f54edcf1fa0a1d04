"""Fast-path runs whose web process died during their call: written, with the attempt lost.

/v1's fast path holds each run's rows in Redis from before its provider call until its record
is written (`studio.fast_intents`). One still held past its lease (ORCHESTRA_ATTEMPT_STALE_S)
lost its web process: the recovery sweep (`workers.runs_recover`) writes it as it stood,
records its call as an attempt that failed with error kind `lost`, and ends the run failed.
It is not called again: nobody waits for its answer, and the provider may have billed the
first call. Its cost is unknown, so it counts 0 and the attempt's message says so. If the run's
own record arrives after all (its process was slow, not dead), it replaces this one
(`studio.services.run_record`).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from orchestrator.core.envelope import Envelope
from studio import fast_intents, tracing
from studio.models import Attempt, AttemptStatus, Node, NodeStatus, Run, RunStatus
from studio.services.attempts import attempts_finish
from studio.services.events import run_event_append
from studio.services.run_record import LOST, run_record

log = logging.getLogger(__name__)

LOST_MESSAGE = (
    "The web process making this call stopped before it recorded the answer (killed or crashed). "
    "The provider may have answered and billed the call; its cost is unknown, and it is not called again."
)
END_REASON = "the web process answering this /v1 request stopped during its model call; the request got no answer"
NODE_ENDED = [NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.CANCELLED]


@transaction.atomic
def fast_run_lost(*, run_id: int, payload: str) -> bool:
    """Write a held run whose caller is gone, its call lost; False when its own record was
    written before (then nothing changes)."""
    if not run_record(payload=payload):
        return False
    running = Attempt.objects.filter(node__run_id=run_id, status=AttemptStatus.RUNNING).values_list("pk", flat=True)
    attempts_finish(results=[(pk, Envelope.failure(LOST, LOST_MESSAGE)) for pk in running])
    now = timezone.now()
    Node.objects.filter(run_id=run_id).exclude(status__in=NODE_ENDED).update(status=NodeStatus.FAILED, updated_at=now)
    run = Run.objects.select_for_update(of=("self",)).get(pk=run_id)
    run.status, run.end_reason, run.finished_at = RunStatus.FAILED, END_REASON, now
    run.save(update_fields=["status", "end_reason", "finished_at"])
    run_event_append(run_id=run_id, type="run.finished", payload={"status": "failed", "reason": END_REASON})
    if tracing.enabled():
        transaction.on_commit(lambda: tracing.trace_run(run_id))
    return True


def fast_runs_lost(now: float | None = None) -> list[int]:
    """Write every held run past its lease as lost (`fast_run_lost`); the ids written. Called by
    the recovery sweep."""
    written = []
    for run_id, payload in fast_intents.due(now):
        if payload is None:  # its rows expired: nothing left to write
            fast_intents.release([run_id])
            continue
        try:
            if fast_run_lost(run_id=run_id, payload=payload):
                written.append(run_id)
        except Exception:
            log.exception("run %s: its lost call could not be recorded; the next sweep tries again", run_id)
    if written:
        log.warning("%d /v1 run(s) lost their web process during the call; recorded failed: %s", len(written), written)
    return written
