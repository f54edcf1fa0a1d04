"""A tiny, seeded outcome table with a learnable structure, for the learned policy's tests.

Three pairs: a cheap one right on "easy" items (first embedding coordinate > 0), a mid one
right on most items, an expensive one right on almost all. Responses are the choice
letters ("A" is right), so agreement between executed pairs carries signal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from orchestrator.outcomes import OutcomeRecord
from orchestrator.routing.table import OutcomeTable

PAIRS = [("gpt-4", "direct"), ("llama-2-70b-chat", "direct"), ("mistral-7b-chat", "direct")]
COSTS = (5e-3, 5e-4, 1e-4)


def synthetic_table(n: int = 160, seed: int = 0, dim: int = 384) -> tuple[OutcomeTable, np.ndarray]:
    """(table, embeddings [n, dim]) whose best pair depends on the embedding."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    emb[:, 0] *= 6  # the easy/hard direction dominates the text embedding
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    easy = emb[:, 0] > 0
    score = np.zeros((n, 3))
    score[:, 0] = rng.random(n) < 0.95
    score[:, 1] = np.where(easy, rng.random(n) < 0.9, rng.random(n) < 0.5)
    score[:, 2] = np.where(easy, rng.random(n) < 0.9, rng.random(n) < 0.1)
    cost = np.tile(np.array(COSTS), (n, 1)) * rng.uniform(0.8, 1.2, size=(n, 3))
    responses: list[list[str | None]] = [["A" if s else "B" for s in row] for row in score]
    table = OutcomeTable(
        item_ids=[f"t.{i}" for i in range(n)],
        prompts=[f"question {i}" for i in range(n)],
        benchmarks=["synthetic"] * n,
        domains=["reasoning" if i % 2 else "math" for i in range(n)],
        splits=[None] * n,
        sources=["synthetic"] * n,
        pairs=list(PAIRS),
        score=score,
        cost=cost,
        tokens_in=np.full((n, 3), 100.0),
        tokens_out=np.full((n, 3), 10.0),
        responses=responses,
    )
    return table, emb


def lookup_embedder(table: OutcomeTable, emb: np.ndarray) -> Callable[[Sequence[str]], np.ndarray]:
    """An embedder that returns the given vectors for the table's prompts."""
    by_prompt = {prompt: emb[i] for i, prompt in enumerate(table.prompts)}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.stack([by_prompt[t] for t in texts])

    return embed


def outcome_records(table: OutcomeTable) -> list[OutcomeRecord]:
    """The table as canonical records (every item recorded for every pair), for a file."""
    return [
        OutcomeRecord(
            source=table.sources[i],
            item_id=table.item_ids[i],
            split=None,
            benchmark="synthetic",
            domain=table.domains[i],
            prompt=table.prompts[i],
            gold=None,
            model=model,
            primitive=primitive,
            response=table.responses[i][j],
            score=float(table.score[i, j]),
            prompt_tokens=100,
            completion_tokens=10,
            cost_usd=float(table.cost[i, j]),
            latency_s=None,
        )  # fmt: skip
        for i in range(table.n_items)
        for j, (model, primitive) in enumerate(table.pairs)
    ]


# The synthetic pool's pairs under names no checkpoint trained on the synthetic table has seen.
UNSEEN_PAIRS = [("claude-3-opus", "direct"), ("gemma-2-27b", "direct"), ("qwen-1.5b", "direct")]


def unseen_table(n: int = 60, seed: int = 3) -> tuple[OutcomeTable, np.ndarray]:
    """(table, embeddings) of the synthetic structure under other models, items and prompts,
    costs to 10 decimals (as the studio stores them): a pool a checkpoint trained on
    `synthetic_table` never saw."""
    table, emb = synthetic_table(n=n, seed=seed)
    renamed = replace(
        table,
        item_ids=[f"u.{i}" for i in range(n)],
        prompts=[f"unseen question {i}" for i in range(n)],
        sources=["unseen"] * n,
        pairs=list(UNSEEN_PAIRS),
        cost=np.round(table.cost, 10),
    )
    return renamed, emb
