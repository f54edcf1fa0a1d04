"""Feature vectors for the learned policy: task, pair, state and executed response.

A pair is never an output index: it is a vector built from what is known of it (prices,
size and family parsed from its name, primitive) and from calibration statistics measured
on calibration items (the train items for a seen pool, the probe items for an unseen one).
So the same network scores pairs of a pool it never saw.

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
KNN_K = 16  # neighbours for the per-item calibration accuracy
SHRINK = 8.0  # pseudo-counts pulling a calibration mean toward its prior

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


@dataclass(frozen=True)
class Calibration:
    """Per-pair statistics measured on calibration items, used as pair features.

    `domain_acc` and `domain_cost` are shrunk toward the pair's global mean, which is
    shrunk toward the pool mean, so a pair with few calibration items looks average.
    """

    embeddings: np.ndarray  # [m, e] calibration items
    score: np.ndarray  # [m, p] NaN = not recorded
    global_acc: np.ndarray  # [p]
    domain_acc: np.ndarray  # [len(DOMAINS), p]
    domain_cost: np.ndarray  # [len(DOMAINS), p] USD, mean on calibration items
    cost_ref: float  # USD: the mean cost of the most expensive pair; normalizes every cost


def calibrate(embeddings: np.ndarray, domains: Sequence[str], score: np.ndarray, cost: np.ndarray) -> Calibration:
    """Statistics of each pair on calibration items (rows of score/cost, NaN = missing)."""
    known = ~np.isnan(score) & ~np.isnan(cost)
    s = np.where(known, score, 0.0)
    c = np.where(known, cost, 0.0)
    counts = known.sum(axis=0)
    pool_acc = float(s.sum() / max(known.sum(), 1))
    global_acc = (s.sum(axis=0) + SHRINK * pool_acc) / (counts + SHRINK)
    global_cost = c.sum(axis=0) / np.maximum(counts, 1)
    n_dom, p = len(DOMAINS), score.shape[1]
    domain_acc = np.tile(global_acc, (n_dom, 1))
    domain_cost = np.tile(global_cost, (n_dom, 1))
    dom_index = np.array([DOMAINS.index(d) if d in DOMAINS else -1 for d in domains])
    for d in range(n_dom):
        rows = dom_index == d
        if not rows.any():
            continue
        k = known[rows].sum(axis=0)
        domain_acc[d] = (s[rows].sum(axis=0) + SHRINK * global_acc) / (k + SHRINK)
        domain_cost[d] = np.where(k > 0, c[rows].sum(axis=0) / np.maximum(k, 1), global_cost)
    cost_ref = float(global_cost.max()) if p and global_cost.max() > 0 else 1.0
    return Calibration(
        embeddings=embeddings.astype(np.float32),
        score=np.where(known, score, np.nan),
        global_acc=global_acc,
        domain_acc=domain_acc,
        domain_cost=domain_cost,
        cost_ref=cost_ref,
    )


def knn_accuracy(calib: Calibration, embeddings: np.ndarray, prior: np.ndarray, *, exclude_self: bool) -> np.ndarray:
    """float64 [n, p]: each pair's shrunk accuracy on the KNN_K calibration items nearest each item.

    `prior` [n, p] is the mean it shrinks toward; `exclude_self` drops an item's own row
    (when the items are the calibration items themselves: leave-one-out).
    """
    m = calib.embeddings.shape[0]
    out = np.empty_like(prior)
    k = min(KNN_K, m - (1 if exclude_self else 0))
    if k <= 0:
        return prior.copy()
    known = ~np.isnan(calib.score)
    s = np.where(known, calib.score, 0.0)
    for start in range(0, embeddings.shape[0], 1024):
        sims = embeddings[start : start + 1024] @ calib.embeddings.T  # [b, m]
        if exclude_self:
            rows = np.arange(start, min(start + 1024, embeddings.shape[0]))
            sims[rows - start, rows] = -np.inf
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]  # [b, k]
        hits = s[nearest].sum(axis=1)  # [b, p]
        n = known[nearest].sum(axis=1)
        out[start : start + 1024] = (hits + 2.0 * prior[start : start + 1024]) / (n + 2.0)
    return out


def pair_features(
    infos: Sequence[PairInfo],
    calib: Calibration,
    embeddings: np.ndarray,
    domains: Sequence[str],
    *,
    exclude_self: bool = False,
) -> np.ndarray:
    """float32 [n, p, PAIR_DIM]: static features and calibration statistics for each item's domain."""
    dom = np.array([DOMAINS.index(d) if d in DOMAINS else 0 for d in domains], dtype=np.int64)
    acc = calib.domain_acc[dom]  # [n, p]
    cost = calib.domain_cost[dom] / calib.cost_ref  # [n, p]
    knn = knn_accuracy(calib, embeddings, acc, exclude_self=exclude_self)
    return assemble_pair_features(infos, acc, knn, calib.global_acc, cost)


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


_CHOICE = re.compile(r"^\(?([A-J])(?:[).:,\s]|$)")
_ANSWER_IS = re.compile(r"answer is:?\s*\(?([A-J])\b", re.IGNORECASE)


def answer_key(response: str | None) -> str | None:
    """A normalized answer, so two responses that say the same thing compare equal."""
    if response is None:
        return None
    text = response.strip()
    match = _CHOICE.match(text) or _ANSWER_IS.search(text)
    if match:
        return match.group(1)
    normalized = " ".join(text.lower().split())
    return normalized[:200] or None


def response_surface(response: str | None) -> np.ndarray:
    """float32 [4]: log length, a bare choice letter, contains code, nothing recorded."""
    if response is None:
        return np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32)
    text = response.strip()
    return np.array(
        [
            math.log1p(len(text)) / 8,
            1.0 if _CHOICE.match(text) else 0.0,
            1.0 if "```" in text or "def " in text else 0.0,
            0.0,
        ],
        dtype=np.float32,
    )
