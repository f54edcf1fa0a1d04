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


def words(text: str) -> list[str]:
    return text.split()


def test_a_text_that_fits_has_no_end_and_a_long_few_shot_prompt_ends_in_its_question():
    short = "Context.\n\nMore context.\n\nThe question?"
    assert embedding.end_text(short, words, " ".join, window=10) is None
    shots = "\n\n".join(["Q: one plus one? A: two"] * 5)
    assert embedding.end_text(f"{shots}\n\n  Q: three plus four?\n", words, " ".join, window=10) == (
        "Q: three plus four?"
    )
    # long, with fewer than three blocks: its last `window` words
    long = "word " * 30 + "\n\nQ: which one is it?"
    assert embedding.end_text(long, words, " ".join, window=7) == "word word Q: which one is it?"


def test_few_shot_prompts_sharing_their_examples_embed_apart():
    """Read only from the start, every prompt with the same long few-shot prefix embedded the same."""
    shots = "\n\n".join(
        f"Question {k}: which planet is closest to the sun? A) Mercury B) Venus\nAnswer: A" for k in range(20)
    )
    plants = "Which gas do plants take in from the air? A) oxygen B) carbon dioxide\nAnswer:"
    texts = [f"{shots}\n\n{plants}", f"{shots}\n\nWho wrote the play Hamlet? A) Shakespeare B) Dickens\nAnswer:"]
    vectors = embedding.embed([*texts, plants])
    assert float(vectors[0] @ vectors[1]) < 0.95
    # the mean of the start (the shared examples, as the model alone reads them) and the question
    mean = vectors[2] + embedding.load_model().encode([shots], normalize_embeddings=True)[0]
    assert vectors[0] == pytest.approx(mean / np.linalg.norm(mean), abs=1e-4)
    # a long text with no blocks: its end is read too, so different endings embed apart
    ends = embedding.embed(["filler " * 400 + "What is the capital of France?", "filler " * 400 + "Sing me a song."])
    assert float(ends[0] @ ends[1]) < 0.999


def test_a_vector_depends_on_its_text_alone():
    short = "What is the capital of France?"
    long = " ".join(["a long neighbour that pads the batch"] * 30)
    alone = embedding.encode([short])[0]
    assert np.array_equal(embedding.encode([long, short, "Hi"])[1], alone)  # bit for bit, whatever it is encoded with
