"""The learned policy's training job: `orchestrator.train_policy.train` on the job's outcome
files, with live runs from Postgres as extra SFT trajectories, reporting progress."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.learning.method import LearnedConfig
from studio.models import TrainingJob
from studio.selectors.training import live_trajectories
from studio.services.training import collection_files, guide_file, shipped_outcomes
from workers.training import Progress, Trained

# Where each stage sits in the job's progress bar.
STAGES = {"embedding": (0.0, 0.4), "sft": (0.4, 0.75), "rl": (0.75, 1.0)}  # embedding: a cold cache


def train_policy_job(job: TrainingJob, progress: Progress, out: Path) -> Trained:
    from orchestrator.train_policy import train

    chosen = set(job.config.get("outcomes") or [])
    paths = [path for path in shipped_outcomes() if not chosen or path.name in chosen]
    paths += collection_files(job.config.get("collections") or [], out.parent)  # the user's own, collected
    seed = int(job.config.get("seed", 0))
    unseen = bool(job.config.get("unseen", False))  # for pools of other models, each calibrated on its probe
    config = LearnedConfig.from_mapping(job.config.get("learned"))
    prices = Path(settings.OUTCOMES_DIR) / "prices.json"
    extra = live_trajectories()
    guide = guide_file(job.config.get("guide"))  # reward-guided RL: a stored OrchRM scores unrecorded cells

    def report(stage: str, done: int, total: int, metrics: dict[str, float]) -> None:
        low, high = STAGES.get(stage, (0.0, 0.05))
        progress(stage, low + (high - low) * done / max(1, total), metrics)

    progress("embedding", 0.0)
    metrics = train(
        paths, out=out, seed=seed, config=config, prices=prices, show_progress=False, on_progress=report,
        extra_trajectories=extra, unseen=unseen, guide=guide,
    )  # fmt: skip
    lineage = {
        "outcomes": [path.name for path in paths], "collections": job.config.get("collections") or [], "seed": seed,
        "live_runs": len(extra), "unseen": unseen,
    }  # fmt: skip
    if guide is not None:
        lineage["guide"] = job.config["guide"]
    # `calibration`: the checkpoint carries its pool's calibration (train_policy's `context`).
    config_saved = {**config.to_dict(), "seed": seed, "embedding": EMBEDDING_ID, "calibration": True, "unseen": unseen}
    return Trained(path=out, config=config_saved, metrics=metrics, lineage=lineage)
