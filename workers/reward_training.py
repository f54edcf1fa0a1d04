"""The reward model's training job: `orchestrator.train_rm.train` on the job's outcome files,
plus the studio's preference pairs with a known winner and correct-over-incorrect pairs of
stored runs, reporting progress.

Job config: `seed`, `outcomes` (shipped file names; default routerbench and llmrouter),
`rm` (RMConfig's `pairs` / `train` / `model` sections), `preferences` and `live_runs`
(whether to add the studio's pairs and the stored runs' pairs; both default true).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.reward.jsonl import PreferenceRecord
from orchestrator.train_rm import RMConfig
from studio.models import PairSource, Run
from studio.selectors.plans import run_plans
from studio.selectors.preferences import preferences_export
from studio.selectors.training import verified_runs
from studio.services.training import collection_files, shipped_outcomes
from workers.training import Progress, Trained

DEFAULT_OUTCOMES = ("routerbench.jsonl.gz", "llmrouter.jsonl.gz")
# Where each stage sits in the job's progress bar (embedding: a cold cache).
STAGES = {"embedding": (0.0, 0.5), "train": (0.5, 1.0)}
LIVE_RUNS = 20_000  # most recent verified runs read for correct-over-incorrect pairs
PAIRS_PER_TASK = 4  # at most this many run pairs per task, so no task dominates

Embedder = Callable[[list[str]], np.ndarray]


def run_pairs(limit: int = LIVE_RUNS) -> list[PreferenceRecord]:
    """Correct-over-incorrect pairs of stored runs: two succeeded runs of one task whose
    answers were verified right and wrong, each with its plan (run_plan)."""
    runs = verified_runs(limit=limit)
    by_task: dict[int, dict[bool, list[Run]]] = defaultdict(lambda: {True: [], False: []})
    for run in runs:
        correct = run.verification.get("correct")
        if isinstance(correct, bool):
            by_task[run.task_id][correct].append(run)
    matched = [
        (right, wrong)
        for sides in by_task.values()
        for right, wrong in list(zip(sides[True], sides[False], strict=False))[:PAIRS_PER_TASK]
    ]
    plans = run_plans(run for pair in matched for run in pair)
    return [
        PreferenceRecord(
            prompt=right.task.text,
            chosen=right.final_answer,
            rejected=wrong.final_answer,
            source=PairSource.CORRECT_OVER_INCORRECT.value,
            chosen_plan=plans[right.pk],
            rejected_plan=plans[wrong.pk],
            extra={"domain": right.task.domain, "runs": [right.pk, wrong.pk]},
        )
        for right, wrong in matched
        if plans[right.pk] is not None and plans[wrong.pk] is not None
    ]


def train_reward_job(job: Any, progress: Progress, out: Path, *, embedder: Embedder | None = None) -> Trained:
    """Train OrchRM for a job; `embedder` is for tests (default: the MiniLM, through its cache)."""
    from orchestrator.train_rm import train

    chosen = set(job.config.get("outcomes") or DEFAULT_OUTCOMES)
    paths = [path for path in shipped_outcomes() if path.name in chosen]
    paths += collection_files(job.config.get("collections") or [], out.parent)  # the user's own, collected
    if not paths:
        raise ValueError(f"none of the outcome files {', '.join(sorted(chosen))} is in data/outcomes")
    seed = int(job.config.get("seed", 0))
    config = RMConfig.from_mapping(job.config.get("rm"))
    prices = Path(settings.OUTCOMES_DIR) / "prices.json"
    studio_pairs = preferences_export().records if job.config.get("preferences", True) else []
    live = run_pairs() if job.config.get("live_runs", True) else []

    def report(stage: str, done: int, total: int, metrics: dict[str, float]) -> None:
        low, high = STAGES.get(stage, (0.0, 0.05))
        progress(stage, low + (high - low) * done / max(1, total), metrics)

    progress("embedding", 0.0)
    metrics = train(
        paths, out=out, seed=seed, config=config, prices=prices if prices.is_file() else None,
        preferences=[*studio_pairs, *live], embedder=embedder, show_progress=False, on_progress=report,
    )  # fmt: skip
    lineage = {
        "outcomes": [path.name for path in paths],
        "collections": job.config.get("collections") or [],
        "seed": seed,
        "pairs": int(metrics.get("data/pairs", 0)),
        "sources": {  # pairs trained on, by source
            key.removeprefix("train/pairs/"): int(value)
            for key, value in metrics.items()
            if key.startswith("train/pairs/")
        },
        "studio_pairs": _by_source(studio_pairs),  # preference pairs with a known winner
        "run_pairs": len(live),  # correct-over-incorrect pairs of stored runs
    }
    config_saved = {**config.to_dict(), "seed": seed, "embedding": EMBEDDING_ID}
    return Trained(path=out, config=config_saved, metrics=metrics, lineage=lineage)


def _by_source(records: list[PreferenceRecord]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        counts[record.source] += 1
    return dict(sorted(counts.items()))
