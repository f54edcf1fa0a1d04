"""The cluster router on the synthetic table, whose best pair depends on the embedding's first coordinate."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from orchestrator.baselines import BASELINES, ClusterRouter
from orchestrator.baselines.cluster import ClusterConfig
from orchestrator.routing.table import OutcomeTable
from tests.orchestrator.synthetic_outcomes import lookup_embedder, synthetic_table


def fitted(config: ClusterConfig, seed: int = 0) -> tuple[ClusterRouter, OutcomeTable, np.ndarray]:
    """(the router fit on 160 items, 160 test items, which test items are easy)."""
    full, emb = synthetic_table(n=320, seed=0)
    train, test = full.rows(range(160)), full.rows(range(160, 320))
    method = ClusterRouter(config, embed_fn=lookup_embedder(full, emb))
    method.fit(train, seed=seed)
    return method, test, emb[160:, 0] > 0


def test_is_registered():
    assert BASELINES["cluster"] is ClusterRouter and ClusterRouter.name == "cluster"


def test_sends_easy_items_to_a_cheap_pair_and_hard_ones_to_the_strong_one():
    method, test, easy = fitted(ClusterConfig(clusters=4))
    final = np.array(method.route(test, knob=0.2).final)
    assert (final[easy] != 0).mean() >= 0.8  # mistral or llama, right on 90% of the easy items
    assert (final[~easy] == 0).mean() >= 0.9  # gpt-4, the only one right on the hard items
    # one cluster knows no structure: every item goes the same way
    blind, _, _ = fitted(ClusterConfig(clusters=1))
    assert len(set(blind.route(test, knob=0.2).final)) == 1


def test_lambda_moves_it_toward_cheaper_pairs():
    method, test, _ = fitted(ClusterConfig(clusters=4))
    rows = np.arange(test.n_items)
    spent = [test.cost[rows, method.route(test, knob=lam).final].sum() for lam in (0.0, 0.2, 1.0, 100.0)]
    assert spent[0] > spent[1] > spent[3] and spent[1] >= spent[2] >= spent[3]
    assert method.route(test, knob=0.0).final == [0] * test.n_items  # gpt-4 is the most accurate everywhere
    assert method.route(test, knob=100.0).final == [2] * test.n_items  # mistral is the cheapest


def test_an_unseen_pool_is_fit_on_the_probe_only():
    full, emb = synthetic_table(n=320, seed=0)
    easy = emb[:, 0] > 0
    # the new pool: mistral is now right exactly on the hard items, and sits next to gpt-4
    new_pool = full.columns([2, 0])
    new_pool = replace(new_pool, score=np.column_stack([(~easy).astype(float), new_pool.score[:, 1]]))
    train, probe, test = full.rows(range(160)), new_pool.rows(range(160, 240)), new_pool.rows(range(240, 320))
    embed_fn = lookup_embedder(new_pool.rows(range(160, 320)), emb[160:])  # a train prompt raises KeyError
    method = ClusterRouter(ClusterConfig(clusters=4), embed_fn=embed_fn)
    method.fit(train, seed=0, probe=probe)
    assert method.predict(test).shape == (80, 2)
    final = np.array(method.route(test, knob=0.2).final)
    hard = ~easy[240:]
    assert (final[hard] == 0).mean() >= 0.9 and (final[~hard] == 1).mean() >= 0.9


def test_the_same_seed_gives_the_same_router():
    (first, test, _), (again, _, _) = fitted(ClusterConfig(), seed=3), fitted(ClusterConfig(), seed=3)
    other, _, _ = fitted(ClusterConfig(), seed=4)
    assert np.array_equal(first.centroids, again.centroids) and np.array_equal(first.accuracy, again.accuracy)
    assert first.route(test, knob=0.1).final == again.route(test, knob=0.1).final
    assert not np.array_equal(first.centroids, other.centroids)  # the seed is what fixes it


def test_clusters_are_capped_by_the_distinct_fitting_items():
    full, emb = synthetic_table(n=12, seed=0)
    method = ClusterRouter(ClusterConfig(clusters=16), embed_fn=lookup_embedder(full, emb))
    method.fit(full.rows(range(5)), seed=0)
    assert method.centroids.shape == (5, emb.shape[1])
    # the same five items twice over: five distinct embeddings, five clusters
    method.fit(full.rows([0, 1, 2, 3, 4] * 2), seed=0)
    assert method.centroids.shape[0] == 5
    assert method.predict(full.rows(range(5))).shape == (5, 3)


def test_a_cluster_estimate_is_shrunk_toward_the_pair_mean():
    full, emb = synthetic_table(n=4, seed=0)
    score = np.array([[1.0, 1.0, np.nan], [1.0, 0.0, np.nan], [0.0, 0.0, np.nan], [0.0, 0.0, 1.0]])
    train = replace(full, score=score)
    method = ClusterRouter(ClusterConfig(clusters=4, prior_weight=2.0), embed_fn=lookup_embedder(full, emb))
    method.fit(train, seed=0)
    predicted = method.predict(train)
    # pair 0: global mean 0.5, so item 0 (score 1) reads (1 + 2 * 0.5) / (1 + 2)
    assert predicted[:, 0] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])
    assert predicted[:, 1] == pytest.approx([0.5, 1 / 6, 1 / 6, 1 / 6])  # global mean 0.25
    # pair 2 is recorded on item 3 only: the others' clusters get its global mean, 1
    assert predicted[:, 2] == pytest.approx([1.0, 1.0, 1.0, 1.0])
