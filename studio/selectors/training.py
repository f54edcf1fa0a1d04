"""Reading training jobs and checkpoints."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.errors import NotFound
from studio.models import Checkpoint, TrainingJob


def training_job_list() -> QuerySet[TrainingJob]:
    return TrainingJob.objects.all()


def training_job_get(*, job_id: int) -> TrainingJob:
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"There is no training job with id {job_id}.")
    return job


def checkpoint_list(*, kind: str | None = None) -> QuerySet[Checkpoint]:
    checkpoints = Checkpoint.objects.all()
    return checkpoints.filter(kind=kind) if kind else checkpoints
