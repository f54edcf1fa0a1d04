"""Reading training jobs and checkpoints, and the runs that training learns from."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from studio.errors import NotFound
from studio.models import Attempt, AttemptStatus, Checkpoint, Node, Run, RunStatus, TrainingJob

LIVE_NODES = 20_000  # most recent verified nodes read as extra trajectories


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


def live_trajectories(limit: int = LIVE_NODES) -> list[dict[str, Any]]:
    """Nodes of finished runs that stand for a recorded item and were verified, as
    {"item_id", "calls", "score", "cost_preference"}: the pairs called on the item, in
    order, with replay's prefix dropped so they match the outcome tables' model names."""
    nodes = (
        Node.objects.filter(
            run__status=RunStatus.SUCCEEDED, metadata__has_key="item_id", verification__has_key="recorded_score"
        )
        .select_related("run")
        .prefetch_related(
            Prefetch("attempts", queryset=Attempt.objects.select_related("endpoint", "primitive").order_by("number"))
        )
        .order_by("-updated_at")[:limit]
    )
    records = []
    for node in nodes:
        calls = [
            [a.endpoint.model.removeprefix("replay/"), a.primitive.name]
            for a in node.attempts.all()
            if a.status != AttemptStatus.CANCELLED and a.primitive.name != "plan"
        ]
        if calls:
            score = float(node.verification["recorded_score"])
            item_id = node.metadata["item_id"]
            records.append(
                {"item_id": item_id, "calls": calls, "score": score, "cost_preference": node.run.cost_preference}
            )
    return records


def verified_runs(*, limit: int) -> list[Run]:
    """The latest succeeded runs whose answer was verified right or wrong, with their tasks."""
    return list(
        Run.objects.filter(status=RunStatus.SUCCEEDED, verification__has_key="correct")
        .select_related("task")
        .order_by("-finished_at", "-id")[:limit]
    )
