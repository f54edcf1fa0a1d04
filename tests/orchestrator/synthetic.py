"""Small outcome tables and files whose right answers are known, for the routing tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from orchestrator.embedding import EMBEDDING_DIM
from orchestrator.outcomes import OutcomeRecord, write_outcomes
from orchestrator.routing.table import OutcomeTable


def record(item_id: str, model: str, score: float, cost: float | None, **fields: object) -> OutcomeRecord:
    base: dict[str, object] = {
        "source": "synth", "item_id": item_id, "split": None, "benchmark": "b1", "domain": "math",
        "prompt": f"question {item_id}", "gold": None, "model": model, "primitive": "direct",
        "response": f"answer of {model}", "score": score, "prompt_tokens": None, "completion_tokens": None,
        "cost_usd": cost, "latency_s": None,
    }  # fmt: skip
    base.update(fields)
    return OutcomeRecord(**base)  # type: ignore[arg-type]


def write(path: Path, records: Sequence[OutcomeRecord]) -> Path:
    write_outcomes(path, records)
    return path


def table(
    score: Sequence[Sequence[float]],
    cost: Sequence[Sequence[float]],
    *,
    prompts: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    responses: Sequence[Sequence[str | None]] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> OutcomeTable:
    """An OutcomeTable from literal [item][pair] scores and costs (NaN = not recorded)."""
    s, c = np.array(score, dtype=float), np.array(cost, dtype=float)
    n, m = s.shape
    return OutcomeTable(
        item_ids=[f"i{k}" for k in range(n)],
        prompts=list(prompts or [f"prompt {k}" for k in range(n)]),
        benchmarks=list(benchmarks or ["b"] * n),
        domains=["math"] * n,
        splits=[None] * n,
        sources=["synth"] * n,
        pairs=list(pairs or [(f"m{j}", "direct") for j in range(m)]),
        score=s,
        cost=c,
        tokens_in=np.ones((n, m)),
        tokens_out=np.ones((n, m)),
        responses=[list(r) for r in responses] if responses else [[None] * m for _ in range(n)],
    )


def topic_embed(texts: Sequence[str]) -> np.ndarray:
    """A stand-in for MiniLM: the words "math" and "code" set two axes, a hash adds small noise."""
    out = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        out[i] = np.random.default_rng(seed).normal(scale=0.05, size=EMBEDDING_DIM)
        out[i, 0] += "math" in text
        out[i, 1] += "code" in text
        out[i, 2] += "good" in text
    return out / np.linalg.norm(out, axis=1, keepdims=True)
