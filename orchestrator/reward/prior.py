"""OrchRM's accuracy prior: p(pair right | task) from the prompt alone, fit on the training items.

Two estimates, averaged in logit space:
- the task family's accuracy of the pair: a softmax classifier reads the family (the
  item's benchmark) from the task features, and the family's shrunk accuracy of each pair
  is weighed by it, so a prompt from no known family still gets a mix;
- a logistic regression per pair on the task features and the family probabilities.
`bench/ceilings.py` prints how well it ranks held-out correct-over-incorrect pairs, beside
the benchmark accuracy measured on the training items and on the test items.
With `RewardConfig.accuracy_prior` the reward model's per-item accuracy feature is the
logit mean of this prior and the calibration's own estimate (`reward.features`).

Shapes: n tasks, T task features (embedding + domain one-hot), F families, p pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from orchestrator.learning.features import task_features
from orchestrator.routing.table import OutcomeTable

FOLDS = 5  # folds of the out-of-fold estimates on the fit items themselves
MIN_ITEMS = 200  # fewer items: no prior (the calibration's kNN accuracy stands in)
STEPS = 300  # full-batch Adam steps of each fit
L2 = 3.0  # ridge strength: each pair's weights cost |w|² · L2 / (2 · its recorded items) (sklearn C ≈ 1/L2)
SHRINK = 2.0  # pseudo-counts pulling a family's accuracy of a pair toward the pair's overall accuracy
CLIP = 1e-4  # probabilities are clipped to [CLIP, 1 - CLIP] before a logit


@dataclass(frozen=True)
class AccuracyPrior:
    families: tuple[str, ...]  # [F]
    family_weight: np.ndarray  # [T, F] the family classifier
    family_bias: np.ndarray  # [F]
    family_acc: np.ndarray  # [F, p] shrunk accuracy of each pair on each family's items
    pair_weight: np.ndarray  # [p, T + F] the per-pair logistic regressions
    pair_bias: np.ndarray  # [p]
    oof: np.ndarray | None = None  # [m, p] out-of-fold estimates on the fit items themselves

    def family_probs(self, tasks: np.ndarray) -> np.ndarray:
        """float64 [n, F]: the classifier's family distribution."""
        logits = tasks.astype(np.float64) @ self.family_weight + self.family_bias
        logits -= logits.max(axis=1, keepdims=True)
        probs: np.ndarray = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs

    def predict(self, tasks: np.ndarray) -> np.ndarray:
        """float64 [n, p]: the prior probability that each pair answers each task right."""
        probs = self.family_probs(tasks)
        by_family = probs @ self.family_acc
        x = np.concatenate([tasks.astype(np.float64), probs], axis=1)
        regression = x @ self.pair_weight.T + self.pair_bias
        z = (logit(by_family) + regression) / 2
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return out

    def payload(self) -> dict[str, Any]:
        """Plain tensors and lists (a checkpoint that loads with weights_only=True); no oof."""
        return {
            "families": list(self.families),
            **{
                name: torch.from_numpy(np.ascontiguousarray(getattr(self, name)))
                for name in ("family_weight", "family_bias", "family_acc", "pair_weight", "pair_bias")
            },
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> AccuracyPrior:
        arrays = {k: v.numpy() for k, v in payload.items() if k != "families"}
        return cls(families=tuple(payload["families"]), **arrays)


def table_prior(table: OutcomeTable, embeddings: np.ndarray, *, seed: int = 0) -> AccuracyPrior | None:
    """The prior of a table's pairs, fit on its items (their benchmarks are the families)."""
    score = np.where(table.available(), table.score, np.nan)
    return fit_prior(task_features(embeddings, table.domains), table.benchmarks, score, seed=seed)


def fit_prior(tasks: np.ndarray, families: Sequence[str], score: np.ndarray, *, seed: int = 0) -> AccuracyPrior | None:
    """The prior fit on m items (tasks [m, T], their families, score [m, p] NaN = not recorded),
    with its out-of-fold estimates on them; None with fewer than MIN_ITEMS items."""
    m = tasks.shape[0]
    if m < MIN_ITEMS or not score.shape[1]:
        return None
    folds = np.arange(m) % FOLDS
    np.random.default_rng(seed).shuffle(folds)
    oof = np.empty(score.shape, dtype=np.float64)
    labels = np.asarray(families)
    for f in range(FOLDS):
        held = folds == f
        oof[held] = _fit(tasks[~held], labels[~held].tolist(), score[~held], seed + f + 1).predict(tasks[held])
    return replace(_fit(tasks, labels.tolist(), score, seed), oof=oof)


def _fit(tasks: np.ndarray, families: list[str], score: np.ndarray, seed: int) -> AccuracyPrior:
    names = tuple(sorted(set(families)))
    label = np.array([names.index(f) for f in families], dtype=np.int64)
    known = ~np.isnan(score)
    s = np.where(known, score, 0.0)
    overall = (s.sum(axis=0) + SHRINK * 0.5) / (known.sum(axis=0) + SHRINK)
    family_acc = np.stack(
        [
            (s[label == k].sum(axis=0) + SHRINK * overall) / (known[label == k].sum(axis=0) + SHRINK)
            for k in range(len(names))
        ]
    )
    gen = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(tasks.astype(np.float32))
    t = x.shape[1]
    w_fam = torch.zeros(t, len(names), requires_grad=True)
    b_fam = torch.zeros(len(names), requires_grad=True)
    if len(names) > 1:
        y = torch.from_numpy(label)
        optim = torch.optim.Adam([w_fam, b_fam], lr=0.05)
        for _ in range(STEPS):
            loss = F.cross_entropy(x @ w_fam + b_fam, y) + 1e-4 * (w_fam**2).sum()
            optim.zero_grad()
            loss.backward()
            optim.step()
    with torch.no_grad():
        probs = torch.softmax(x @ w_fam + b_fam, dim=1)
    xf = torch.cat([x, probs], dim=1)
    target = torch.from_numpy((s >= 0.5).astype(np.float32))
    mask = torch.from_numpy(known.astype(np.float32))
    counts = mask.sum(dim=0).clamp(min=1)  # [p]
    w = (torch.randn(score.shape[1], xf.shape[1], generator=gen) * 0.01).requires_grad_()
    b = torch.zeros(score.shape[1], requires_grad=True)
    optim = torch.optim.Adam([w, b], lr=0.05)
    for _ in range(STEPS):
        bce = F.binary_cross_entropy_with_logits(xf @ w.T + b, target, weight=mask, reduction="none")
        loss = (bce.sum(dim=0) / counts).sum() + (L2 / 2 * (w**2).sum(dim=1) / counts).sum()
        optim.zero_grad()
        loss.backward()
        optim.step()
    return AccuracyPrior(
        families=names,
        family_weight=w_fam.detach().double().numpy(),
        family_bias=b_fam.detach().double().numpy(),
        family_acc=family_acc,
        pair_weight=w.detach().double().numpy(),
        pair_bias=b.detach().double().numpy(),
    )


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)), p clipped to [CLIP, 1 - CLIP]."""
    q = np.clip(p, CLIP, 1 - CLIP)
    out: np.ndarray = np.log(q / (1 - q))
    return out
