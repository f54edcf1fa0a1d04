"""Feature vectors for the learned policy: task, pair, state and executed response.

A pair is never an output index: it is a vector built from what is known of it (prices,
size and family parsed from its name, primitive) and from calibration statistics measured
on calibration items (the train items for a seen pool, the probe items for an unseen one;
`learning.calibration`). So the same network scores pairs of a pool it never saw. The
features of an executed response are in `learning.responses`.

Shapes: `n` items, `p` pairs, `e` the embedding width.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.outcomes import DOMAINS

FAMILIES = ("gpt", "claude", "llama", "mistral", "mixtral", "gemma", "gemini", "qwen", "yi", "wizardlm", "other")
PRIMITIVES = ("direct", "cot", "self_consistency", "program", "reflexion", "tool_use", "verify", "other")

STATIC_DIM = 6 + len(FAMILIES) + len(PRIMITIVES)
CALIB_DIM = 8
PAIR_DIM = STATIC_DIM + CALIB_DIM
STATE_DIM = 9
CANDIDATE_DIM = 5  # per candidate: same family as last, log cost ratio to it, accuracy gain, λ·cost, λ-utility
RESPONSE_DIM = 9  # agreement with the other executed pairs and surface features of the response
TASK_EXTRA = len(DOMAINS)


@dataclass(frozen=True)
class PairInfo:
    """What is known of a pair before calibration; None where unknown."""

    model: str
    primitive: str
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    context_window: int | None = None


def model_family(model: str) -> str:
    """The family of a model name, from a small fixed vocabulary ('other' when none fits)."""
    name = model.lower().rsplit("/", 1)[-1]
    for family in ("mixtral", "mistral", "wizardlm", "gemini", "gemma", "claude", "llama", "qwen", "gpt", "yi"):
        if family in name:
            return family
    return "other"


def model_size_b(model: str) -> float | None:
    """Parameters in billions parsed from a name ("70b" -> 70, "8x7b" -> 56), else None."""
    name = model.lower()
    moe = re.search(r"(\d+)x(\d+(?:\.\d+)?)b(?![a-z])", name)
    if moe:
        return float(moe.group(1)) * float(moe.group(2))
    dense = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)b(?![a-z])", name)
    return float(dense.group(1)) if dense else None


def static_pair_features(info: PairInfo) -> np.ndarray:
    """float32 [STATIC_DIM]: log prices, size, context window (each with a known flag), one-hots."""
    size = model_size_b(info.model)
    values = [
        math.log1p(info.input_per_mtok) if info.input_per_mtok is not None else 0.0,
        math.log1p(info.output_per_mtok) if info.output_per_mtok is not None else 0.0,
        1.0 if info.input_per_mtok is not None or info.output_per_mtok is not None else 0.0,
        math.log1p(size) / 5 if size is not None else 0.0,
        1.0 if size is not None else 0.0,
        math.log(info.context_window) / 12 if info.context_window else 0.0,
    ]
    family = [1.0 if model_family(info.model) == f else 0.0 for f in FAMILIES]
    primitive = info.primitive if info.primitive in PRIMITIVES else "other"
    prim = [1.0 if primitive == p else 0.0 for p in PRIMITIVES]
    return np.asarray(values + family + prim, dtype=np.float32)


def task_features(embeddings: np.ndarray, domains: Sequence[str]) -> np.ndarray:
    """float32 [n, e + len(DOMAINS)]: the text embedding and the domain one-hot."""
    onehot = np.zeros((len(domains), len(DOMAINS)), dtype=np.float32)
    for i, domain in enumerate(domains):
        if domain in DOMAINS:
            onehot[i, DOMAINS.index(domain)] = 1.0
    return np.concatenate([embeddings.astype(np.float32), onehot], axis=1)


def domain_indices(domains: Sequence[str]) -> np.ndarray:
    """int64 [n]: each domain's row in the per-domain calibration tables (`DOMAINS` order; an
    unknown domain takes the first row)."""
    return np.array([DOMAINS.index(d) if d in DOMAINS else 0 for d in domains], dtype=np.int64)


def assemble_pair_features(
    infos: Sequence[PairInfo], acc: np.ndarray, knn: np.ndarray, global_acc: np.ndarray, cost: np.ndarray
) -> np.ndarray:
    """float32 [n, p, PAIR_DIM] from calibration estimates: acc, knn, cost (/ cost_ref) [n, p], global_acc [p]."""
    n, p = acc.shape
    static = np.stack([static_pair_features(info) for info in infos]) if p else np.zeros((0, STATIC_DIM))
    log_cost = np.log(np.maximum(cost, 1e-6))
    cost_rank = (cost[:, :, None] > cost[:, None, :]).mean(axis=2)  # share of pairs cheaper
    calib_feats = np.stack(
        [
            acc,
            knn,
            np.broadcast_to(global_acc, (n, p)),
            acc - acc.max(axis=1, keepdims=True),
            knn - knn.max(axis=1, keepdims=True),
            log_cost / 5,
            cost_rank,
            cost,
        ],
        axis=2,
    )
    return np.concatenate([np.broadcast_to(static, (n, p, STATIC_DIM)), calib_feats], axis=2).astype(np.float32)


def pair_infos(pairs: Sequence[tuple[str, str]], prices: Mapping[str, Mapping[str, float]] | None) -> list[PairInfo]:
    """PairInfo for table columns, with prices from a prices.json map where it has the model."""
    prices = prices or {}
    infos = []
    for model, primitive in pairs:
        price = prices.get(model)
        infos.append(
            PairInfo(
                model=model,
                primitive=primitive,
                input_per_mtok=price.get("input_per_mtok") if price else None,
                output_per_mtok=price.get("output_per_mtok") if price else None,
            )
        )
    return infos
