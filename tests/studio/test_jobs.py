"""One lifecycle for training jobs, evaluations and collections (studio.services.jobs), on
real PostgreSQL rows of each kind."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from studio.models import Collection, EvaluationRun, Job, JobStatus, Role, TrainingJob, User
from studio.services.jobs import job_end, job_fail, job_progress, job_start, jobs_fail_on, jobs_workers
from tests.factories import PoolFactory

pytestmark = pytest.mark.django_db


Kind = type[TrainingJob] | type[EvaluationRun] | type[Collection]


def make_job(model: Kind, user: User) -> Job:
    if model is TrainingJob:
        return TrainingJob.objects.create(kind="policy", created_by=user)
    if model is EvaluationRun:
        return EvaluationRun.objects.create(config={}, created_by=user)
    return Collection.objects.create(
        owner=user, pool=PoolFactory(), name="probe", source=f"collection-{Collection.objects.count()}", budget_usd=1
    )


KINDS: list[Kind] = [TrainingJob, EvaluationRun, Collection]


@pytest.mark.parametrize("model", KINDS)
def test_every_kind_is_taken_once_reports_and_ends_once(model: Kind, make_user: Callable[..., User]) -> None:
    job = make_job(model, make_user(Role.RESEARCHER))
    assert (job.status, job.progress, job.started_at) == (JobStatus.QUEUED, 0.0, None)
    taken = job_start(model, job.pk, worker="w1@vm")
    assert taken is not None and (taken.status, taken.worker, taken.message) == (JobStatus.RUNNING, "w1@vm", "started")
    assert job_start(model, job.pk, worker="w2@vm") is None  # a second delivery does not take it again

    job_progress(model, job.pk, progress=0.6, message="half way")
    job_progress(model, job.pk, progress=0.4, message="a late report")  # progress never goes back
    job.refresh_from_db()
    assert (job.progress, job.message) == (0.6, "a late report")

    ended = job_end(model, job.pk, status=JobStatus.SUCCEEDED, message="done")
    assert ended is not None and (ended.status, ended.progress) == (JobStatus.SUCCEEDED, 1.0)
    assert ended.finished_at is not None and ended.started_at is not None
    job_fail(model, job.pk, message="too late")  # an ended job stays as it ended
    assert job_start(model, job.pk, resumes=True) is None
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.SUCCEEDED, "done")


@pytest.mark.parametrize("model", KINDS)
def test_a_failure_keeps_its_reason_and_a_late_success_is_kept(model: Kind, make_user: Callable[..., User]) -> None:
    job = make_job(model, make_user(Role.RESEARCHER))
    job_fail(model, job.pk, message="x" * 5000)
    job.refresh_from_db()
    assert (job.status, len(job.message)) == (JobStatus.FAILED, 2000)
    assert job_progress(model, job.pk, progress=0.5, message="a report from a job given up") is None
    job.refresh_from_db()
    assert (job.progress, len(job.message)) == (0.0, 2000)
    assert job_end(model, job.pk, status=JobStatus.SUCCEEDED, message="finished") is None
    kept = job_end(model, job.pk, status=JobStatus.SUCCEEDED, message="finished", even_if_ended=True)
    assert kept is not None and (kept.status, kept.message) == (JobStatus.SUCCEEDED, "finished")
    assert job_progress(model, job.pk + 1000, progress=0.5, message="gone") is None


def test_a_collection_is_taken_again_while_running_the_others_are_not(make_user: Callable[..., User]) -> None:
    user = make_user(Role.RESEARCHER)
    for model in KINDS:
        job = make_job(model, user)
        started = job_start(model, job.pk, worker="w1@vm")
        assert started is not None
        first = started.started_at
        again = job_start(model, job.pk, worker="w2@vm", resumes=True)
        assert again is not None and again.worker == "w2@vm" and again.started_at == first


def test_a_dead_worker_fails_its_training_and_evaluation_but_not_its_collection(
    make_user: Callable[..., User],
) -> None:
    user = make_user(Role.RESEARCHER)
    jobs = {model: make_job(model, user) for model in KINDS}
    for model, job in jobs.items():
        job_start(model, job.pk, worker="dead@vm")
    other = make_job(TrainingJob, user)
    job_start(TrainingJob, other.pk, worker="alive@vm")
    assert jobs_workers() == ["alive@vm", "dead@vm"]
    assert jobs_fail_on("dead@vm", "gone") == 2
    statuses = {model: model._default_manager.get(pk=job.pk).status for model, job in jobs.items()}
    assert statuses == {TrainingJob: JobStatus.FAILED, EvaluationRun: JobStatus.FAILED, Collection: JobStatus.RUNNING}
    assert TrainingJob.objects.get(pk=other.pk).status == JobStatus.RUNNING
