"""Celery tasks. Each is thin: it takes ids, reloads rows, calls one service."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from celery import Task, signals
from django.db import InterfaceError, OperationalError

from studio.db import connection_release
from workers.celery import app

log = logging.getLogger(__name__)

# For tasks that are idempotent: acknowledged only when done (a dead worker's task is
# delivered again), and retried with backoff when the database connection drops. Ten retries,
# each wait at most 60 s (jittered), outlast a PostgreSQL restart (bench/restarts.py: five
# gave up within a 15 s outage, leaving the run to the recovery sweep).
REDELIVERABLE: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 10,
}


@app.task(bind=True, name="workers.ping", ignore_result=False, time_limit=10, soft_time_limit=5)
def ping(self: Task, nonce: str) -> dict[str, Any]:
    """Answer with the nonce, the queue it came through and who answered."""
    queue = (self.request.delivery_info or {}).get("routing_key")
    return {"nonce": nonce, "queue": queue, "host": socket.gethostname(), "pid": os.getpid()}


@app.task(name="workers.execute_attempts", **REDELIVERABLE)
def execute_attempts(attempt_ids: list[int]) -> None:
    """Run a batch of attempts of (model, primitive) pairs and record their envelopes.

    Idempotent, so safe with acks_late: a finished attempt is neither run nor billed again.
    """
    from workers.execution import execute_batch

    execute_batch(attempt_ids)


@app.task(name="workers.execute_attempt", **REDELIVERABLE)
def execute_attempt(attempt_id: int) -> None:
    """Run one attempt (a batch of one; see execute_attempts)."""
    from workers.execution import execute_batch

    execute_batch([attempt_id])


@app.task(name="workers.verify_run", **REDELIVERABLE)
def verify_run(run_id: int) -> None:
    """Check a finished run's answer with its benchmark's checker (studio.services.verification)."""
    from providers.checkers import check
    from studio.services.verification import run_verification_work, run_verified

    work = run_verification_work(run_id=run_id)
    if work is None:
        return
    result = check(work.checker, work.answer, work.gold, item=work.item)
    run_verified(run_id=run_id, score=result.score, correct=result.passed, detail=result.detail)


@app.task(name="workers.record_run", **REDELIVERABLE)
def record_run(payload: str) -> None:
    """Write a run /v1's fast path decided and called (studio.services.run_record). Idempotent."""
    from studio.services.run_record import run_record

    run_record(payload=payload)


@app.task(name="workers.run_step", **REDELIVERABLE)
def run_step(run_id: int) -> None:
    """One step of a run's state machine (see studio.services.live_shell). Idempotent."""
    from studio.services.live_shell import run_step as step
    from studio.services.scheduling import step_started

    step_started(run_id)
    step(run_id=run_id)


@app.task(bind=True, name="workers.runs_recover", acks_late=False, time_limit=120, soft_time_limit=100)
def runs_recover(self: Task) -> None:
    """Write the /v1 runs whose web process died during their call (studio.services.fast_lost),
    step every run that went quiet (see studio.services.scheduling.runs_recover), and fail
    the jobs of workers that stopped answering (studio.services.jobs.jobs_fail_silent).
    Queued every ORCHESTRA_RECOVERY_INTERVAL_S by one worker (workers.celery.RecoverySweep); a
    lost one is simply queued again next time."""
    from django.conf import settings

    from studio.services.collections import collections_resume_quiet
    from studio.services.fast_lost import fast_runs_lost
    from studio.services.jobs import jobs_fail_silent
    from studio.services.scheduling import runs_recover as recover

    fast_runs_lost()
    recover()
    if count := collections_resume_quiet():
        log.warning("%d collection(s) went quiet (their runner died?) and are queued again to resume", count)
    me = self.request.hostname or ""
    if count := jobs_fail_silent(answering=answering, me=me, after_s=settings.ORCHESTRA_WORKER_SILENT_S):
        log.warning("%d job(s) of workers that stopped answering are marked failed", count)


def answering(names: list[str], timeout: float = 2.0) -> set[str]:
    """The workers among `names` (node names) that answer a remote-control ping within `timeout`."""
    replies = app.control.ping(destination=names, timeout=timeout) or []
    return {name for reply in replies for name in reply}


JOB_TASKS = ("workers.train", "workers.evaluate")


@signals.task_failure.connect
def fail_lost_job(
    sender: Task | None = None, args: Any = None, exception: BaseException | None = None, **_: Any
) -> None:
    """A training or evaluation job whose pool process died (killed, out of memory, past its
    hard time limit) cannot record its end; the worker's parent gets this signal instead and
    records it, so the job does not show as running forever. A job that recorded its end
    already is left as it is."""
    name = getattr(sender, "name", None)
    if name not in JOB_TASKS or not args:
        return
    from studio.models import EvaluationRun, TrainingJob
    from studio.services.jobs import job_fail

    message = f"The worker process running it stopped ({type(exception).__name__}: {exception}). Start it again."
    try:
        job_fail(TrainingJob if name == "workers.train" else EvaluationRun, int(args[0]), message=message)
    except Exception:  # the database may be away too: the row then stays as it was
        log.warning("could not record the end of %s%s", name, tuple(args), exc_info=True)
    finally:
        connection_release()  # the worker's parent, outside any task: no task hook does it


@signals.worker_ready.connect
def fail_orphaned_jobs(sender: Any = None, **_: Any) -> None:
    """A worker that has just started runs no job, so the jobs still marked running under its
    name lost their process when it last stopped as a whole (where `fail_lost_job` had no
    parent left to run in): record them failed."""
    from studio.services.jobs import jobs_fail_orphaned

    worker = getattr(sender, "hostname", "") or ""
    try:
        if count := jobs_fail_orphaned(worker=worker):
            log.warning("%s: %d job(s) it was running when it last stopped are marked failed", worker, count)
    except Exception:  # the database may not be up yet: the rows then stay as they were
        log.warning("could not look for the jobs %s left running", worker, exc_info=True)
    finally:
        connection_release()  # the worker's parent, outside any task: no task hook does it


@app.task(bind=True, name="workers.train", time_limit=3 * 3600, soft_time_limit=3 * 3600 - 60)
def train(self: Task, job_id: int) -> None:
    """Run one training job (queue `training`); progress and the checkpoint go to its row."""
    from workers.training import run_job

    run_job(job_id, worker=self.request.hostname or "")


@app.task(
    bind=True, name="workers.collect", acks_late=True, reject_on_worker_lost=True, time_limit=6 * 3600,
    soft_time_limit=6 * 3600 - 60,
)  # fmt: skip
def collect(self: Task, collection_id: int) -> None:
    """Run one collection (queue `training`): its cells through the provider, kept as outcomes.
    Resumable, so safe to deliver again: recorded cells are never called again."""
    from workers.collection import run_collection

    run_collection(collection_id, worker=self.request.hostname or "")


@app.task(bind=True, name="workers.evaluate", time_limit=3 * 3600, soft_time_limit=3 * 3600 - 60)
def evaluate(self: Task, evaluation_id: int) -> None:
    """Run one offline evaluation (sent to queue `training` by evaluation_create); progress and
    the report go to its row."""
    from studio.services.evaluation_jobs import run_evaluation

    run_evaluation(evaluation_id, worker=self.request.hostname or "")
