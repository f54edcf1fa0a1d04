"""The learned policy's training job: `orchestrator.train_policy.train` on the job's outcome
files, with live runs from Postgres as extra SFT trajectories, reporting progress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Prefetch

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.learning.method import LearnedConfig
from studio.models import Attempt, AttemptStatus, Node, RunStatus, TrainingJob
from studio.services.training import shipped_outcomes
from workers.training import Progress, Trained

# Where each stage sits in the job's progress bar.
STAGES = {"embedding": (0.0, 0.4), "sft": (0.4, 0.75), "rl": (0.75, 1.0)}  # embedding: a cold cache
LIVE_NODES = 20_000  # most recent verified nodes read as extra trajectories


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


def train_policy_job(job: TrainingJob, progress: Progress, out: Path) -> Trained:
    from orchestrator.train_policy import train

    chosen = set(job.config.get("outcomes") or [])
    paths = [path for path in shipped_outcomes() if not chosen or path.name in chosen]
    seed = int(job.config.get("seed", 0))
    config = LearnedConfig.from_mapping(job.config.get("learned"))
    prices = Path(settings.OUTCOMES_DIR) / "prices.json"
    extra = live_trajectories()

    def report(stage: str, done: int, total: int, metrics: dict[str, float]) -> None:
        low, high = STAGES.get(stage, (0.0, 0.05))
        progress(stage, low + (high - low) * done / max(1, total), metrics)

    progress("embedding", 0.0)
    metrics = train(
        paths, out=out, seed=seed, config=config, prices=prices, show_progress=False, on_progress=report,
        extra_trajectories=extra,
    )  # fmt: skip
    lineage = {"outcomes": [path.name for path in paths], "seed": seed, "live_runs": len(extra)}
    # `calibration`: the checkpoint carries its pool's calibration (train_policy's `context`).
    config_saved = {**config.to_dict(), "seed": seed, "embedding": EMBEDDING_ID, "calibration": True}
    return Trained(path=out, config=config_saved, metrics=metrics, lineage=lineage)
