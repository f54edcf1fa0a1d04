"""Training jobs and checkpoints. Researchers and admins start jobs and promote checkpoints."""

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate
from pydantic import StrictBool, StrictInt

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.api.jobs import JobOut
from studio.models import Checkpoint, CheckpointKind, Role, TrainingJob
from studio.selectors.training import checkpoint_list, training_job_get, training_job_list
from studio.services.training import checkpoint_promote, training_job_create

router = Router(tags=["training"], auth=role(Role.RESEARCHER))


class TrainingConfigIn(Body):
    """A job's options. A policy job takes `learned`, `demo` and `guide`; a reward-model job `rm`,
    `preferences` and `live_runs`; an option of the other kind is a 422 naming it."""

    seed: StrictInt = Field(0, ge=0)
    outcomes: list[str] = Field(
        default_factory=list,
        description="shipped outcome files to train on (GET /api/evaluations/options lists them); default all",
    )
    replaces: StrictInt | None = Field(None, description="a checkpoint of the same kind this one replaces")
    collections: list[StrictInt] = Field(
        default_factory=list, description="collections whose recorded outcomes it also trains on (docs/collect.md)"
    )
    learned: dict[str, Any] | None = Field(None, description="policy: the learned policy's sections (docs/learning.md)")
    demo: StrictBool | None = Field(None, description="policy: the demo policy's job, as `make up` queues it")
    unseen: StrictBool | None = Field(
        None, description="policy: trained for pools of models it will not see, each calibrated on its probe"
    )
    guide: StrictInt | None = Field(
        None, description="policy: a reward_model checkpoint's id; RL also plays unrecorded cells, scored by it"
    )
    rm: dict[str, Any] | None = Field(None, description="reward model: OrchRM's sections (docs/reward.md)")
    preferences: StrictBool | None = Field(None, description="reward model: train on human labels too (default true)")
    live_runs: StrictBool | None = Field(None, description="reward model: train on finished runs too (default true)")


class TrainingJobIn(Body):
    kind: CheckpointKind = CheckpointKind.POLICY
    config: TrainingConfigIn = Field(default_factory=lambda: TrainingConfigIn.model_validate({}))


class TrainingJobOut(JobOut):
    kind: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    checkpoint_id: int | None


class TrainingJobDetailOut(TrainingJobOut):
    history: list[dict[str, Any]]


class CheckpointOut(Schema):
    id: int
    kind: str
    name: str
    path: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    lineage: dict[str, Any]
    is_default: bool
    created_at: datetime


@router.post("/training/jobs", response={201: TrainingJobOut})
def create_training_job(request: HttpRequest, payload: TrainingJobIn) -> Status:
    """Queue a training job on queue `training`; follow it here or on /ws/training/<id>/."""
    config = payload.config.model_dump(exclude_unset=True)
    return Status(201, training_job_create(user=current_user(request), kind=payload.kind, config=config))


@router.get("/training/jobs", response=list[TrainingJobOut])
@paginate(LimitOffsetPagination)
def list_training_jobs(request: HttpRequest) -> QuerySet[TrainingJob]:
    """Training jobs, newest first."""
    return training_job_list()


@router.get("/training/jobs/{job_id}", response=TrainingJobDetailOut)
def get_training_job(request: HttpRequest, job_id: int) -> TrainingJob:
    """One job with its metric history (for curves)."""
    return training_job_get(job_id=job_id)


@router.get("/checkpoints", response=list[CheckpointOut])
@paginate(LimitOffsetPagination)
def list_checkpoints(request: HttpRequest, kind: CheckpointKind | None = None) -> QuerySet[Checkpoint]:
    """Checkpoints with their metrics, newest first; the default of each kind is marked."""
    return checkpoint_list(kind=kind)


@router.post("/checkpoints/{checkpoint_id}/promote", response=CheckpointOut)
def promote_checkpoint(request: HttpRequest, checkpoint_id: int) -> Checkpoint:
    """Make this checkpoint the default of its kind."""
    return checkpoint_promote(checkpoint_id=checkpoint_id)
