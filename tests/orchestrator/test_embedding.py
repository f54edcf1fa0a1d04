"""The offline MiniLM embedding and its per-text cache."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator import embedding


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_embed_is_unit_norm_384_and_semantic():
    texts = ["What is 2 + 2?", "Compute the sum of two and two.", "Write a Python function to reverse a list."]
    vectors = embedding.embed(texts)
    assert vectors.shape == (3, embedding.EMBEDDING_DIM) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(3), abs=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]


def test_cached_texts_are_not_encoded_again(cache, monkeypatch):
    first = embedding.embed(["alpha text", "beta text"])
    assert len(list(cache.glob("*/*/*.npy"))) == 2  # one file per text

    def refuse(texts, progress=False):
        raise AssertionError(f"encoded again: {texts}")

    monkeypatch.setattr(embedding, "encode", refuse)
    again = embedding.embed(["beta text", "alpha text"])  # a new order: read per text
    assert np.array_equal(again, first[::-1])
    assert embedding.embed([]).shape == (0, embedding.EMBEDDING_DIM)


def test_only_new_texts_are_encoded(monkeypatch):
    embedding.embed(["known"])
    seen: list[str] = []
    real = embedding.encode

    def spy(texts, progress=False):
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedding, "encode", spy)
    out = embedding.embed(["known", "fresh", "fresh"])
    assert seen == ["fresh"]
    assert np.array_equal(out[1], out[2])


def test_progress_follows_the_texts_encoded(monkeypatch):
    embedding.embed(["known"])
    monkeypatch.setattr(embedding, "CHUNK", 2)
    chunks: list[tuple[int, int]] = []
    embedding.embed(["known", "a", "b", "c"], on_chunk=lambda done, total: chunks.append((done, total)))
    assert chunks == [(2, 3), (3, 3)]  # "known" was cached: three to encode, two at a time


def words(text: str) -> int:
    return len(text.split())


def test_a_text_that_fits_is_read_whole_and_a_long_few_shot_prompt_by_its_question():
    short = "Context.\n\nMore context.\n\nThe question?"
    assert embedding.window_text(short, words, window=10) == short
    shots = "\n\n".join(["Q: one plus one? A: two"] * 5)
    assert embedding.window_text(f"{shots}\n\n  Q: three plus four?\n", words, window=10) == "Q: three plus four?"
    # long, but with fewer than three blocks: left whole, for the tokenizer to keep its end
    long = "word " * 30 + "\n\nQ: which?"
    assert embedding.window_text(long, words, window=10) == long


def test_few_shot_prompts_sharing_their_examples_embed_apart():
    """Read from the start, every prompt with the same long few-shot prefix embedded the same."""
    shots = "\n\n".join(
        f"Question {k}: which planet is closest to the sun? A) Mercury B) Venus\nAnswer: A" for k in range(20)
    )
    texts = [
        f"{shots}\n\nWhich gas do plants take in from the air? A) oxygen B) carbon dioxide\nAnswer:",
        f"{shots}\n\nWho wrote the play Hamlet? A) Shakespeare B) Dickens\nAnswer:",
        "Which gas do plants take in from the air? A) oxygen B) carbon dioxide\nAnswer:",
    ]
    vectors = embedding.embed(texts)
    assert float(vectors[0] @ vectors[1]) < 0.8
    assert float(vectors[0] @ vectors[2]) == pytest.approx(1.0, abs=1e-5)
    # a long text with no blocks is read by its end: the same start, different endings, apart
    ends = embedding.embed(["filler " * 400 + "What is the capital of France?", "filler " * 400 + "Sing me a song."])
    assert float(ends[0] @ ends[1]) < 0.999
