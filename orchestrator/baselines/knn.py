"""A kNN router on MiniLM embeddings.

For a test query, the k most similar fitting items (cosine) vote: each pair's predicted
accuracy is its mean recorded score over those neighbours. The route maximizes
    acc_hat[j] - λ * cost_hat[j] / max_j' cost_hat[j']
over the pairs available on the item, with cost_hat a pair's mean cost on the fitting
table. For an unseen pool the neighbours are the probe items, the only ones with the new
columns recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.baselines.common import (
    DEFAULT_LAMBDAS,
    PredictedAccuracyRouter,
    calibration_table,
    cost_normalized,
    pair_cost,
)
from orchestrator.embedding import embed
from orchestrator.routing.table import OutcomeTable

EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class KnnConfig:
    """The kNN router's settings."""

    k: int = 20  # neighbours per query (capped at the fitting items)
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS  # cost weights swept for the frontier


class KnnRouter(PredictedAccuracyRouter):
    name = "knn"

    def __init__(self, config: KnnConfig | None = None, embed_fn: EmbedFn = embed) -> None:
        self.config = config or KnnConfig()
        self.knobs = self.config.lambdas
        self.embed_fn = embed_fn
        self._keys = np.zeros((0, 0), dtype=np.float32)
        self._score = np.zeros((0, 0))
        self._known = np.zeros((0, 0), dtype=bool)
        self._cost = np.zeros(0)
        self._memo = None

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        self._keys = self.embed_fn(table.prompts)  # [n_fit, 384], unit norm
        self._known = table.available()  # [n_fit, n_pairs]
        self._score = np.where(self._known, table.score, 0.0)
        self._cost = cost_normalized(pair_cost(table))
        self._memo = None

    def predict(self, test: OutcomeTable) -> np.ndarray:
        """float64 [n_test, n_pairs]: each pair's mean score over the query's k nearest fitting items."""
        queries = self.embed_fn(test.prompts)  # [n_test, 384]
        k = min(self.config.k, len(self._keys))
        similarity = queries @ self._keys.T  # [n_test, n_fit]
        nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]  # [n_test, k]
        total = self._score[nearest].sum(axis=1)  # [n_test, n_pairs]
        count = self._known[nearest].sum(axis=1)
        prior = self._score.sum(axis=0) / np.maximum(self._known.sum(axis=0), 1)  # where no neighbour has the pair
        predicted: np.ndarray = np.where(count > 0, total / np.maximum(count, 1), prior)
        return predicted
