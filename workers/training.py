"""Training jobs in a worker: run the job's trainer, report its progress, keep its checkpoint."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from studio.models import TrainingJob
from studio.services.jobs import job_fail, job_start
from studio.services.training import checkpoints_dir, training_job_finish, training_job_progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trained:
    """What a trainer made: the artifact, and what to store beside it."""

    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    lineage: dict[str, Any] = field(default_factory=dict)


class Progress:
    """Reports a job's progress to its row and its channel group, at most every `every_s`
    seconds (and on every change of stage), so a fast loop does not flood the database."""

    def __init__(self, job_id: int, every_s: float = 0.5) -> None:
        self.job_id, self.every_s = job_id, every_s
        self._last, self._stage = 0.0, ""

    def __call__(self, stage: str, fraction: float, metrics: dict[str, float] | None = None) -> None:
        now = time.monotonic()
        if stage == self._stage and now - self._last < self.every_s:
            return
        self._last, self._stage = now, stage
        clean = {key: float(value) for key, value in (metrics or {}).items() if isinstance(value, int | float)}
        training_job_progress(job_id=self.job_id, progress=fraction, stage=stage, metrics=clean)


Trainer = Callable[[TrainingJob, Progress, Path], Trained]


def _train_policy(job: TrainingJob, progress: Progress, out: Path) -> Trained:
    from workers.policy_training import train_policy_job

    return train_policy_job(job, progress, out)


def _train_reward_model(job: TrainingJob, progress: Progress, out: Path) -> Trained:
    from workers.reward_training import train_reward_job

    return train_reward_job(job, progress, out)


TRAINERS: dict[str, Trainer] = {"policy": _train_policy, "reward_model": _train_reward_model}


def run_job(job_id: int, worker: str = "") -> None:
    """Run a queued job to its end on `worker` (a Celery node name): a checkpoint, or a failure with its reason."""
    job = job_start(TrainingJob, job_id, worker=worker)
    if job is None:
        log.info("training job %s is gone or not queued; nothing to do", job_id)
        return
    out = checkpoints_dir() / f"{job.kind}-{job.pk}.pt"
    try:
        trained = TRAINERS[job.kind](job, Progress(job.pk), out)
    except SoftTimeLimitExceeded:
        job_fail(TrainingJob, job.pk, message="The job ran past its time limit and was stopped.")
    except Exception as error:
        log.exception("training job %s failed", job.pk)
        job_fail(TrainingJob, job.pk, message=f"{type(error).__name__}: {error}")
    else:
        training_job_finish(
            job_id=job.pk, path=trained.path, config=trained.config, metrics=trained.metrics, lineage=trained.lineage
        )
