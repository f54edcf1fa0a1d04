"""One lifecycle for every background job (studio.models.Job: training, evaluation,
collection): a worker takes a queued job (`job_start`), reports where it is (`job_progress`)
and ends it (`job_end`, `job_fail`); each change is written to the row, for a page that polls
or reloads, and sent once committed to the job's channel group, for one that watches live.

A job whose worker stopped is failed here (`jobs_fail_orphaned`, `jobs_fail_silent`);
a collection is not: its runner journals every cell, so it resumes instead
(studio.services.collections.collections_resume_quiet)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from studio.models import JOB_ACTIVE, EvaluationRun, Job, JobStatus, TrainingJob
from studio.notifier import notifier

J = TypeVar("J", bound=Job)

MESSAGE_LIMIT = 2000  # characters of a message kept on the row
FAILED_WITH_WORKER = (TrainingJob, EvaluationRun)  # what dies with its worker (a collection resumes)


def job_group(model: type[Job], job_id: int) -> str:
    """The channel group of a job's watchers (`/ws/training/<id>/`, `/ws/evaluations/<id>/`)."""
    return f"{model.watch_group}.{job_id}"


def job_notify(job: Job) -> None:
    """Send the job as it stands to its watchers once the transaction commits."""
    if not job.watch_group:
        return
    group, message = job_group(type(job), job.pk), job.progress_message()
    kind = f"{job.watch_group}.progress"
    transaction.on_commit(lambda: notifier.notify(group, {"type": kind, **message}))


def _locked(model: type[J], job_id: int) -> J | None:
    return model._default_manager.select_for_update().filter(pk=job_id).first()


@transaction.atomic
def job_start(model: type[J], job_id: int, *, worker: str = "", resumes: bool = False) -> J | None:
    """Mark a queued job running on `worker` (a Celery node name); None when it is gone or has
    been taken. With `resumes`, a running one is taken again too (its runner died)."""
    job = _locked(model, job_id)
    if job is None or job.status not in (JOB_ACTIVE if resumes else (JobStatus.QUEUED,)):
        return None
    job.status, job.worker, job.message = JobStatus.RUNNING, worker, "started"
    job.started_at = job.started_at or timezone.now()
    job.save(update_fields=["status", "worker", "message", "started_at"])
    job_notify(job)
    return job


@transaction.atomic
def job_progress(model: type[J], job_id: int, *, progress: float, message: str, **fields: Any) -> J | None:
    """Record where a queued or running job is: a fraction in [0, 1] that never goes back, what
    it is doing, and any of its own fields. A report from a job that has ended (cancelled, or
    given up for lost) changes nothing: None, as for a job that is gone."""
    job = _locked(model, job_id)
    if job is None or job.status not in JOB_ACTIVE:
        return None
    job.progress, job.message = min(1.0, max(job.progress, progress)), message
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=["progress", "message", *fields])
    job_notify(job)
    return job


@transaction.atomic
def job_end(
    model: type[J], job_id: int, *, status: str, message: str, even_if_ended: bool = False, **fields: Any
) -> J | None:
    """End a queued or running job with `status` and why, and any of its own fields; a job that
    succeeds is at progress 1. An ended job is left as it is (None), unless `even_if_ended`:
    work that finished after its job was given up for lost is kept."""
    job = _locked(model, job_id)
    if job is None or (job.status not in JOB_ACTIVE and not even_if_ended):
        return None
    job.status, job.message, job.finished_at = status, message[:MESSAGE_LIMIT], timezone.now()
    if status == JobStatus.SUCCEEDED:
        job.progress = 1.0
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields={"status", "message", "finished_at", "progress", *fields})
    job_notify(job)
    return job


def job_fail(model: type[Job], job_id: int, *, message: str) -> None:
    """Record that a queued or running job failed, and why (an ended one is left as it is)."""
    job_end(model, job_id, status=JobStatus.FAILED, message=message)


def jobs_fail_orphaned(*, worker: str) -> int:
    """Fail the jobs still running on `worker`, a worker that has just started and so runs none
    of them: they lost their process when it last stopped (killed, or the machine went down).
    Returns how many."""
    if not worker:
        return 0
    return jobs_fail_on(worker, f"The worker running it ({worker}) stopped before it ended. Start it again.")


def jobs_fail_on(worker: str, message: str) -> int:
    """Fail the training jobs and evaluations running on `worker` with `message`; how many."""
    failed = 0
    for model in FAILED_WITH_WORKER:
        running = model._default_manager.filter(status=JobStatus.RUNNING, worker=worker)
        for job_id in running.values_list("pk", flat=True):
            job_fail(model, job_id, message=message)
            failed += 1
    return failed


SILENT_KEY = "orchestra:worker-silent:{}"  # cache: when a worker with running jobs first did not answer


def jobs_workers() -> list[str]:
    """The workers that training jobs or evaluations are running on, by node name."""
    names: set[str] = set()
    for model in FAILED_WITH_WORKER:
        names |= set(model.objects.filter(status=JobStatus.RUNNING).values_list("worker", flat=True))
    return sorted(name for name in names if name)


def jobs_fail_silent(
    *,
    answering: Callable[[list[str]], Iterable[str]],
    me: str,
    after_s: float,
    clock: Callable[[], float] = time.time,
) -> int:
    """Fail the jobs running on a worker that has answered no ping for `after_s` seconds (it
    was killed for good, or its machine is gone, and no worker of its name started again to
    clean up: see jobs_fail_orphaned). `answering(names)` pings the workers and returns those
    that answered; `me`, the asking worker, is asked too, and if even it does not answer the
    pings are not getting through, so nothing is failed (nor without a name for it). `clock`
    gives the time in seconds. Returns how many jobs were failed."""
    names = jobs_workers()
    if not names or after_s <= 0:
        return 0
    answered = set(answering(sorted({*names, me} - {""})))
    if me not in answered:  # no answer even from here (or no name): pings are not getting through
        return 0
    now, failed = clock(), 0
    for name in names:
        key = SILENT_KEY.format(name)
        if name in answered:
            cache.delete(key)
            continue
        cache.add(key, now, timeout=int(after_s * 10) + 60)
        silent_s = now - float(cache.get(key, now))
        if silent_s < after_s:
            continue
        silence = f"has not answered for {silent_s:.0f} s; taken as gone"
        failed += jobs_fail_on(name, f"The worker running it ({name}) {silence}. Start it again.")
        cache.delete(key)
    return failed
