"""A cluster router in the style of AvengersPro (LLMRouterBench's strongest simple method).

Fit: k-means the fitting items' MiniLM embeddings (unit norm, so Euclidean k-means is
spherical) into min(clusters, distinct fitting items) clusters. Per cluster and pair, the
predicted accuracy is a Bayesian average of the pair's recorded scores on that cluster's
items and the pair's global mean, the prior counting as `prior_weight` items:
    acc[c, j] = (sum of scores of j in c + w * global[j]) / (items of c recording j + w)
so a cluster with no item recording the pair gets the global mean. For an unseen pool the
fitting items are the probe's, the only ones with the new columns recorded.

Predict: each test query takes the accuracies of its nearest centroid (cosine). The route
maximizes acc[j] - λ * cost[j] / max_j' cost[j'] over the pairs available on the item
(`PredictedAccuracyRouter`), with cost a pair's mean cost on the fitting table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans  # type: ignore[import-untyped]

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
class ClusterConfig:
    """The cluster router's settings; the k-means seed is the fit seed."""

    clusters: int = 16  # k-means clusters (capped at the distinct fitting items)
    prior_weight: float = 2.0  # items' worth of the pair's global mean in each cluster's estimate
    restarts: int = 4  # k-means++ initializations; the one of least inertia is kept
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS  # cost weights swept for the frontier


def unit_rows(x: np.ndarray) -> np.ndarray:
    """float64 rows scaled to unit L2 norm (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    unit: np.ndarray = x / np.maximum(norm, 1e-12)
    return unit


def spherical_kmeans(keys: np.ndarray, clusters: int, *, seed: int, restarts: int) -> np.ndarray:
    """float64 [min(clusters, distinct rows), dim] unit centroids of the unit rows `keys`."""
    k = max(1, min(clusters, len(np.unique(keys, axis=0))))
    kmeans = KMeans(n_clusters=k, n_init=restarts, random_state=seed).fit(keys)
    return unit_rows(kmeans.cluster_centers_)


def nearest(queries: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """int [n]: each unit query's most similar centroid by cosine (ties: the lowest index)."""
    nearest_index: np.ndarray = (queries @ centroids.T).argmax(axis=1)
    return nearest_index


def cluster_accuracy(
    score: np.ndarray, known: np.ndarray, labels: np.ndarray, n_clusters: int, prior_weight: float
) -> np.ndarray:
    """float64 [n_clusters, n_pairs]: per cluster and pair, the mean score shrunk toward the pair's global mean.

    `score` [n_fit, n_pairs] is 0 where not `known`; a pair never recorded has global mean 0.
    """
    recorded = known.sum(axis=0)  # [n_pairs]
    global_mean = score.sum(axis=0) / np.maximum(recorded, 1)
    one_hot = np.eye(n_clusters)[labels]  # [n_fit, n_clusters]
    total = one_hot.T @ score  # [n_clusters, n_pairs]
    count = one_hot.T @ known.astype(np.float64)
    accuracy: np.ndarray = (total + prior_weight * global_mean) / np.maximum(count + prior_weight, 1e-12)
    return np.where(count + prior_weight > 0, accuracy, global_mean)


class ClusterRouter(PredictedAccuracyRouter):
    name = "cluster"

    def __init__(self, config: ClusterConfig | None = None, embed_fn: EmbedFn = embed) -> None:
        self.config = config or ClusterConfig()
        self.knobs = self.config.lambdas
        self.embed_fn = embed_fn
        self.centroids = np.zeros((0, 0))  # [n_clusters, dim], unit norm
        self.accuracy = np.zeros((0, 0))  # [n_clusters, n_pairs]
        self._cost = np.zeros(0)
        self._memo = None

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        if table.n_items == 0:
            raise ValueError("the cluster router needs at least one fitting item")
        keys = unit_rows(self.embed_fn(table.prompts))  # [n_fit, 384]
        self.centroids = spherical_kmeans(keys, self.config.clusters, seed=seed, restarts=self.config.restarts)
        known = table.available()  # [n_fit, n_pairs]
        score = np.where(known, table.score, 0.0)
        labels = nearest(keys, self.centroids)
        self.accuracy = cluster_accuracy(score, known, labels, len(self.centroids), self.config.prior_weight)
        self._cost = cost_normalized(pair_cost(table))
        self._memo = None

    def predict(self, test: OutcomeTable) -> np.ndarray:
        """float64 [n_test, n_pairs]: the accuracies of each query's nearest cluster."""
        queries = unit_rows(self.embed_fn(test.prompts))  # [n_test, 384]
        predicted: np.ndarray = self.accuracy[nearest(queries, self.centroids)]
        return predicted
