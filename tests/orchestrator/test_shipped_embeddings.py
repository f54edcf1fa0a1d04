"""The shipped embeddings (`python -m orchestrator.ship_embeddings`) are what the code
computes now, and cover every prompt of the shipped outcomes they were built for."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orchestrator.embedding import SHIPPED_DIR, encode, shipped, text_key
from orchestrator.outcomes import read_outcomes

OUTCOMES = Path(__file__).resolve().parents[2] / "data" / "outcomes"


def test_they_cover_routerbench_and_equal_a_fresh_encoding() -> None:
    assert (SHIPPED_DIR / "routerbench.npz").is_file(), "build them: python -m orchestrator.ship_embeddings"
    vectors = shipped()
    prompts = sorted({record.prompt for record in read_outcomes(OUTCOMES / "routerbench.jsonl.gz")})
    assert [p for p in prompts if text_key(p) not in vectors] == []
    rng = np.random.default_rng(0)
    sample = [prompts[i] for i in rng.choice(len(prompts), size=6, replace=False)]
    sample.append(max(prompts, key=len))  # a long few-shot prompt: read as its head and its question
    fresh = encode(sample)
    for text, vector in zip(sample, fresh, strict=True):
        np.testing.assert_allclose(vectors[text_key(text)], vector, atol=1e-5)
