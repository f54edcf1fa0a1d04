"""A training or evaluation job whose process died is recorded as failed, with the reason:
- a lost pool child, through Celery's real task_failure signal, as the worker's parent sends it;
- a whole worker gone, when a worker of the same name starts again (the worker_ready signal).
A job that already ended is left as it is."""

from __future__ import annotations

import socket

import pytest
from billiard.exceptions import WorkerLostError
from celery import signals

from studio.models import EvaluationRun, JobStatus, TrainingJob
from workers import tasks

pytestmark = pytest.mark.django_db

LOST = WorkerLostError("Worker exited prematurely: signal 9 (SIGKILL) Job: 8.")


class Consumer:
    """What worker_ready's sender offers the handler: the worker's node name."""

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname


def lost(task: object, row_id: int) -> None:
    signals.task_failure.send(
        sender=task, task_id="t-1", exception=LOST, args=[row_id], kwargs={}, traceback=None, einfo=None
    )


def test_a_running_evaluation_whose_worker_died_is_failed_with_the_reason() -> None:
    run = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING)
    lost(tasks.evaluate, run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
    assert "WorkerLostError" in run.message and "signal 9" in run.message
    assert "Start it again" in run.message
    assert run.finished_at is not None


def test_a_running_training_job_whose_worker_died_is_failed_with_the_reason() -> None:
    job = TrainingJob.objects.create(kind="reward_model", config={}, status=JobStatus.RUNNING)
    lost(tasks.train, job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "WorkerLostError" in job.message


def test_an_ended_job_is_left_as_it_is() -> None:
    done = EvaluationRun.objects.create(config={}, status=JobStatus.SUCCEEDED, message="report r.json")
    job = TrainingJob.objects.create(kind="policy", config={}, status=JobStatus.FAILED, message="ValueError: bad")
    lost(tasks.evaluate, done.pk)
    lost(tasks.train, job.pk)
    done.refresh_from_db()
    job.refresh_from_db()
    assert (done.status, done.message) == (JobStatus.SUCCEEDED, "report r.json")
    assert (job.status, job.message) == (JobStatus.FAILED, "ValueError: bad")


def test_other_tasks_and_missing_rows_are_ignored() -> None:
    run = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING)
    lost(tasks.execute_attempts, run.pk)  # same id, another task: not this row
    lost(tasks.evaluate, run.pk + 1000)  # no such row
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


def test_a_restarted_worker_fails_the_jobs_it_left_running_and_only_those() -> None:
    mine = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker="orchestra@vm")
    my_job = TrainingJob.objects.create(kind="policy", config={}, status=JobStatus.RUNNING, worker="orchestra@vm")
    other = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker="orchestra@other")
    queued = TrainingJob.objects.create(kind="policy", config={}, status=JobStatus.QUEUED, worker="")
    signals.worker_ready.send(sender=Consumer("orchestra@vm"))
    for row in (mine, my_job, other, queued):
        row.refresh_from_db()
    assert (mine.status, my_job.status) == (JobStatus.FAILED, JobStatus.FAILED)
    assert "The worker running it (orchestra@vm) stopped before it ended" in mine.message
    assert (other.status, queued.status) == (JobStatus.RUNNING, JobStatus.QUEUED)


@pytest.mark.django_db(transaction=True)  # the task closes its connections around it, as in a worker
def test_a_job_records_the_worker_that_took_it() -> None:
    job = TrainingJob.objects.create(kind="bogus-kind", config={}, status=JobStatus.QUEUED)
    tasks.train.apply(args=(job.pk,))  # run here, its request names this machine as the worker
    job.refresh_from_db()
    assert job.worker == socket.gethostname()
    assert job.status == JobStatus.FAILED  # an unknown kind: failed with its reason, not left running
