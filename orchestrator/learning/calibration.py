"""Calibration statistics of a pool's pairs, measured on calibration items (the train items
for a seen pool, the probe items for an unseen one), and the per-item accuracy estimates the
learned policy reads from them: the kNN accuracy and the per-item correctness predictor.
`pair_features` joins them to each pair's static features (`learning.features`).

Shapes: `n` items, `m` calibration items, `p` pairs, `e` the embedding width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from orchestrator.learning.features import PairInfo, assemble_pair_features, domain_indices, task_features
from orchestrator.outcomes import DOMAINS

KNN_K = 16  # neighbours for the per-item calibration accuracy
SHRINK = 8.0  # pseudo-counts pulling a calibration mean toward its prior
MF_DIM = 32  # width of the per-item correctness predictor's shared query/pair space
MF_EPOCHS = 300  # full-batch Adam steps of each predictor fit
MF_WEIGHT_DECAY = 1e-3  # L2 on the predictor's parameters
WIDE_K = 64  # neighbours of the similarity-weighted kNN accuracy blended with the predictor
WIDE_TEMPERATURE = 0.1  # neighbour weight exp((sim - best sim) / temperature)
MF_FOLDS = 5  # folds for the out-of-fold predictions on the calibration items themselves
MF_MIN_ITEMS = 200  # fewer calibration items (a probe): no predictor, the kNN accuracy alone
BLEND_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # candidate weights of the predictor in the item accuracy


@dataclass(frozen=True)
class ItemPredictor:
    """p(correct | item, pair) = sigmoid(u_pair . (W x_item + c) + b_pair), fit on calibration items.

    x_item is the task feature vector (embedding and domain one-hot). The
    matrix-factorization form of RouteLLM's router, fit pointwise (BCE on the recorded
    scores). It is one of the two per-item accuracy estimates the policy reads.
    """

    weight: np.ndarray  # [e, d] W
    bias: np.ndarray  # [d] c
    pair: np.ndarray  # [p, d] u
    pair_bias: np.ndarray  # [p] b

    def predict(self, tasks: np.ndarray) -> np.ndarray:
        """float64 [n, p] predicted probability of a right answer; tasks [n, e + len(DOMAINS)]."""
        z = tasks.astype(np.float64) @ self.weight + self.bias
        logits = z @ self.pair.T + self.pair_bias
        out: np.ndarray = 1.0 / (1.0 + np.exp(-logits))
        return out


def fit_predictor(tasks: np.ndarray, score: np.ndarray, *, seed: int = 0) -> ItemPredictor:
    """Full-batch Adam on the masked BCE over recorded cells (score NaN = not recorded); tasks [m, e + D]."""
    gen = torch.Generator().manual_seed(seed)
    e, p = tasks.shape[1], score.shape[1]
    known = ~np.isnan(score)
    x = torch.from_numpy(tasks.astype(np.float32))
    y = torch.from_numpy(np.where(known, score, 0.0).astype(np.float32))
    m = torch.from_numpy(known.astype(np.float32))
    bound = 1.0 / math.sqrt(e)
    w = ((torch.rand(e, MF_DIM, generator=gen) * 2 - 1) * bound).requires_grad_()
    c = ((torch.rand(MF_DIM, generator=gen) * 2 - 1) * bound).requires_grad_()
    u = (torch.randn(p, MF_DIM, generator=gen) * 0.1).requires_grad_()
    b = torch.zeros(p).requires_grad_()
    optim = torch.optim.Adam([w, c, u, b], lr=1e-2, weight_decay=MF_WEIGHT_DECAY)
    total = m.sum().clamp(min=1)
    for _ in range(MF_EPOCHS):
        logits = (x @ w + c) @ u.T + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, weight=m, reduction="sum") / total
        optim.zero_grad()
        loss.backward()
        optim.step()
    return ItemPredictor(
        weight=w.detach().double().numpy(),
        bias=c.detach().double().numpy(),
        pair=u.detach().double().numpy(),
        pair_bias=b.detach().double().numpy(),
    )


@dataclass(frozen=True)
class Calibration:
    """Per-pair statistics measured on calibration items, used as pair features.

    `domain_acc` and `domain_cost` are shrunk toward the pair's global mean, which is
    shrunk toward the pool mean, so a pair with few calibration items looks average.
    With enough calibration items, `predictor` (fit on all of them) and `oof` (its
    out-of-fold predictions on the calibration items themselves) give a second per-item
    accuracy estimate, blended with the kNN one at weight `blend`.
    """

    embeddings: np.ndarray  # [m, e] calibration items
    score: np.ndarray  # [m, p] NaN = not recorded
    global_acc: np.ndarray  # [p]
    domain_acc: np.ndarray  # [len(DOMAINS), p]
    domain_cost: np.ndarray  # [len(DOMAINS), p] USD, mean on calibration items
    cost_ref: float  # USD: the mean cost of the most expensive pair; normalizes every cost
    domains: tuple[str, ...] = ()  # [m] the calibration items' domains
    predictor: ItemPredictor | None = None
    oof: np.ndarray | None = None  # [m, p] out-of-fold predictor output on the calibration items
    blend: float = 0.0  # weight of the predictor in the item accuracy (0 = kNN only)
    # Derived once, read by every decision: each item's row in DOMAINS (-1: none), which
    # scores are recorded, and the scores with 0 where not.
    domain_rows: np.ndarray = field(init=False, repr=False, compare=False)  # int64 [m]
    known: np.ndarray = field(init=False, repr=False, compare=False)  # bool [m, p]
    filled: np.ndarray = field(init=False, repr=False, compare=False)  # float64 [m, p]

    def __post_init__(self) -> None:
        rows = np.array([DOMAINS.index(d) if d in DOMAINS else -1 for d in self.domains], dtype=np.int64)
        object.__setattr__(self, "domain_rows", rows)
        object.__setattr__(self, "known", ~np.isnan(self.score))
        object.__setattr__(self, "filled", np.where(self.known, self.score, 0.0))


def calibrate(
    embeddings: np.ndarray, domains: Sequence[str], score: np.ndarray, cost: np.ndarray, *, predictor: bool = True
) -> Calibration:
    """Statistics of each pair on calibration items (rows of score/cost, NaN = missing).

    `predictor=False` keeps the per-item accuracy to the plain kNN one even with many
    calibration items (to train for a pool that will be calibrated on a small probe).
    """
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
    calib = Calibration(
        domains=tuple(domains),
        embeddings=embeddings.astype(np.float32),
        score=np.where(known, score, np.nan),
        global_acc=global_acc,
        domain_acc=domain_acc,
        domain_cost=domain_cost,
        cost_ref=cost_ref,
    )
    if not predictor or score.shape[0] < MF_MIN_ITEMS or not p:
        return calib
    return with_predictor(calib, domain_acc[np.maximum(dom_index, 0)])


def with_predictor(calib: Calibration, prior: np.ndarray) -> Calibration:
    """Fit the per-item predictor on the calibration items, its out-of-fold outputs, and the blend weight.

    The blend weight is the one of BLEND_GRID whose mix of the out-of-fold predictor and the
    leave-one-out kNN accuracy has the lowest Brier score on the calibration items'
    recorded cells: calibration data only, never a test item.
    """
    m = calib.embeddings.shape[0]
    score = calib.score
    tasks = task_features(calib.embeddings, calib.domains)
    folds = np.arange(m) % MF_FOLDS
    np.random.default_rng(0).shuffle(folds)
    oof = np.empty(score.shape, dtype=np.float64)
    for f in range(MF_FOLDS):
        held = folds == f
        model = fit_predictor(tasks[~held], score[~held], seed=f + 1)
        oof[held] = model.predict(tasks[held])
    knn = knn_accuracy(calib, calib.embeddings, prior, exclude_self=True, k=WIDE_K, temperature=WIDE_TEMPERATURE)
    known = ~np.isnan(score)
    target = np.where(known, score, 0.0)
    brier = [float((((w * oof + (1 - w) * knn) - target) ** 2)[known].mean()) for w in BLEND_GRID]
    blend = BLEND_GRID[int(np.argmin(brier))]
    return replace(calib, predictor=fit_predictor(tasks, score, seed=0), oof=oof, blend=blend)


def knn_accuracy(
    calib: Calibration,
    embeddings: np.ndarray,
    prior: np.ndarray,
    *,
    exclude_self: bool,
    k: int = KNN_K,
    temperature: float | None = None,
) -> np.ndarray:
    """float64 [n, p]: each pair's shrunk accuracy on the `k` calibration items nearest each item.

    `prior` [n, p] is the mean it shrinks toward; `exclude_self` drops an item's own row
    (when the items are the calibration items themselves: leave-one-out). With a
    `temperature`, each neighbour counts by exp(similarity / temperature) (relative to the
    nearest one); without, every neighbour counts once.
    """
    m = calib.embeddings.shape[0]
    k = min(k, m - (1 if exclude_self else 0))
    if k <= 0:
        return prior.copy()
    out = np.empty_like(prior)
    known, s = calib.known, calib.filled
    for start in range(0, embeddings.shape[0], 1024):
        sims = embeddings[start : start + 1024] @ calib.embeddings.T  # [b, m]
        if exclude_self:
            rows = np.arange(start, min(start + 1024, embeddings.shape[0]))
            sims[rows - start, rows] = -np.inf
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]  # [b, k]
        if temperature is None:
            weight = np.ones(nearest.shape)
        else:
            near = np.take_along_axis(sims, nearest, axis=1)
            weight = np.exp((near - near.max(axis=1, keepdims=True)) / temperature)  # [b, k]
        hits = np.einsum("bk,bkp->bp", weight, s[nearest])
        n = np.einsum("bk,bkp->bp", weight, known[nearest].astype(np.float64))
        out[start : start + 1024] = (hits + 2.0 * prior[start : start + 1024]) / (n + 2.0)
    return out


def item_accuracy(
    calib: Calibration, embeddings: np.ndarray, domains: Sequence[str], prior: np.ndarray, *, exclude_self: bool
) -> np.ndarray:
    """float64 [n, p]: the per-item accuracy estimate.

    With a predictor: the predictor blended with the similarity-weighted kNN accuracy;
    without (a probe-sized calibration set): the plain kNN accuracy. With `exclude_self`
    the items are the calibration items themselves, so the predictor's out-of-fold outputs
    stand in for its in-sample ones (as leave-one-out does for kNN).
    """
    if calib.predictor is None:
        return knn_accuracy(calib, embeddings, prior, exclude_self=exclude_self)
    knn = knn_accuracy(calib, embeddings, prior, exclude_self=exclude_self, k=WIDE_K, temperature=WIDE_TEMPERATURE)
    if exclude_self:
        assert calib.oof is not None and calib.oof.shape == knn.shape, "exclude_self needs the calibration items"
        predicted = calib.oof
    else:
        predicted = calib.predictor.predict(task_features(embeddings, domains))
    mixed: np.ndarray = calib.blend * predicted + (1 - calib.blend) * knn
    return mixed


def known_domains(calib: Calibration, embeddings: np.ndarray, domains: Sequence[str]) -> list[str]:
    """`domains` with each one outside `DOMAINS` (a /v1 request's text carries none) replaced by
    the domain most of its `KNN_K` nearest calibration items have, so that such a text takes the
    statistics of the domain it reads like, not those of `DOMAINS[0]`. Unchanged where every
    domain is known or the calibration keeps no domains."""
    unknown = [i for i, domain in enumerate(domains) if domain not in DOMAINS]
    named = calib.domain_rows
    if not unknown or not (named >= 0).any():
        return list(domains)
    rows = np.flatnonzero(named >= 0)
    votes = np.zeros((len(unknown), len(DOMAINS)))
    sims = embeddings[unknown] @ (calib.embeddings if len(rows) == len(named) else calib.embeddings[rows]).T  # [u, m]
    k = min(KNN_K, len(rows))
    nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    for i, row in enumerate(nearest):
        np.add.at(votes[i], named[rows[row]], 1.0)
    out = list(domains)
    for i, index in enumerate(unknown):
        out[index] = DOMAINS[int(votes[i].argmax())]  # a tie: the first in DOMAINS' order
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
    dom = domain_indices(domains)
    acc = calib.domain_acc[dom]  # [n, p]
    cost = calib.domain_cost[dom] / calib.cost_ref  # [n, p]
    knn = item_accuracy(calib, embeddings, domains, acc, exclude_self=exclude_self)
    return assemble_pair_features(infos, acc, knn, calib.global_acc, cost)
