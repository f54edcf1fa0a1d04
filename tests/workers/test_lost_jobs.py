"""A training or evaluation job whose process died is recorded as failed, with the reason:
- a lost pool child, through Celery's real task_failure signal, as the worker's parent sends it;
- a whole worker gone, when a worker of the same name starts again (the worker_ready signal);
- a whole worker gone for good, when it has answered no ping for long enough (the sweep).
A job that already ended is left as it is."""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from billiard.exceptions import WorkerLostError
from celery import signals

from studio.models import EvaluationRun, JobStatus, TrainingJob
from studio.services import jobs
from tests.support.worker import running_worker
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


class Clock:
    """The sweep's clock, moved by hand, so that a silence can last without waiting."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_jobs_of_a_worker_silent_for_long_enough_are_failed_and_only_those() -> None:
    clock = Clock()
    gone, alive = f"gone-{uuid.uuid4().hex[:8]}@vm", f"alive-{uuid.uuid4().hex[:8]}@vm"
    lost_run = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker=gone)
    lost_job = TrainingJob.objects.create(kind="policy", config={}, status=JobStatus.RUNNING, worker=gone)
    kept = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker=alive)
    asked: list[list[str]] = []

    def answering(names: list[str]) -> set[str]:
        asked.append(names)
        return {alive, "sweeper@vm"}

    def sweep() -> int:
        return jobs.jobs_fail_silent(answering=answering, me="sweeper@vm", after_s=120, clock=clock)

    assert sweep() == 0  # the first silence is only noted
    assert asked == [sorted([gone, alive, "sweeper@vm"])]
    clock.now += 119
    assert sweep() == 0
    lost_run.refresh_from_db()
    assert lost_run.status == JobStatus.RUNNING
    clock.now += 2
    assert sweep() == 2
    for row in (lost_run, lost_job, kept):
        row.refresh_from_db()
    assert (lost_run.status, lost_job.status, kept.status) == (JobStatus.FAILED, JobStatus.FAILED, JobStatus.RUNNING)
    assert f"The worker running it ({gone}) has not answered for 121 s" in lost_run.message
    assert "Start it again" in lost_job.message


def test_a_worker_that_answers_again_starts_its_silence_over() -> None:
    clock = Clock()
    name = f"flaky-{uuid.uuid4().hex[:8]}@vm"
    run = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker=name)
    replies = iter([set(), {name}, set(), set()])

    def sweep() -> int:
        answered = next(replies) | {"me@vm"}
        return jobs.jobs_fail_silent(answering=lambda names: answered, me="me@vm", after_s=60, clock=clock)

    assert sweep() == 0  # silent from now
    clock.now += 50
    assert sweep() == 0  # answered: the silence is over
    clock.now += 50
    assert sweep() == 0  # silent again, from now
    clock.now += 30
    assert sweep() == 0  # 30 s of silence, not 130
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


def test_no_job_is_failed_when_even_the_asking_worker_does_not_answer() -> None:
    clock = Clock()
    run = EvaluationRun.objects.create(config={}, status=JobStatus.RUNNING, worker=f"w-{uuid.uuid4().hex[:8]}@vm")
    for _ in range(3):  # pings are not getting through: nobody can be told gone
        assert jobs.jobs_fail_silent(answering=lambda names: set(), me="me@vm", after_s=1, clock=clock) == 0
        clock.now += 100
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_live_worker_answers_the_ping_and_a_gone_one_does_not() -> None:
    with running_worker(concurrency=1) as worker:
        name = worker.hostname  # type: ignore[attr-defined]
        # the remote-control consumer can start a little after the worker takes tasks: ask again
        deadline, answered = time.monotonic() + 30.0, set[str]()
        while not answered and time.monotonic() < deadline:
            answered = tasks.answering([name, "gone@nowhere"], timeout=3.0)
        assert answered == {name}
