"""A tiny trained OrchRM checkpoint, for the best-of-N and reward-model tests."""

from __future__ import annotations

from pathlib import Path

from orchestrator.train_rm import RMConfig, train
from tests.orchestrator.synthetic import write
from tests.orchestrator.synthetic_outcomes import lookup_embedder, outcome_records, synthetic_table

TINY_RM = {"train": {"epochs": 3, "batch_size": 64, "threads": 1}, "model": {"hidden": 16}}


def tiny_reward_model(path: Path, *, n: int = 80) -> Path:
    """Train OrchRM for a few epochs on the synthetic outcome table (known vectors); its path."""
    table, emb = synthetic_table(n=n, seed=0)
    outcomes = write(path.parent / f"{path.stem}-outcomes.jsonl.gz", outcome_records(table))
    train(
        [outcomes], out=path, seed=0, config=RMConfig.from_mapping(TINY_RM), prices=None,
        embedder=lookup_embedder(table, emb), show_progress=False,
    )  # fmt: skip
    return path
