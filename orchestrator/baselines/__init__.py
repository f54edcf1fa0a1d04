"""The baselines every learned router is compared against, each a `orchestrator.routing.Method`.

- random, cheapest, best single (chosen on train, or on the probe for an unseen pool);
- zero: RouterBench's zero router, the hull of fixed pairs and mixes of two (on train, or
  the probe), with no look at the prompt;
- oracle: the cheapest pair with the item's best recorded score, an UPPER BOUND that reads
  test scores by definition;
- cascade (FrugalGPT), knn (kNN on MiniLM), cluster (AvengersPro-style k-means clusters on
  MiniLM), mf (RouteLLM-style matrix factorization);
- always_decompose (not applicable on outcome tables: they hold no composite tasks);
- self_consistency: the best CoT / self-consistency pair, where the data records one.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.baselines.cascade import CascadeRouter
from orchestrator.baselines.cluster import ClusterRouter
from orchestrator.baselines.knn import KnnRouter
from orchestrator.baselines.mf import MfRouter
from orchestrator.baselines.simple import (
    AlwaysDecompose,
    BestSingleRouter,
    CheapestRouter,
    FixedPrimitiveRouter,
    OracleRouter,
    RandomRouter,
)
from orchestrator.baselines.zero import ZeroRouter
from orchestrator.routing.methods import Method

BASELINES: dict[str, Callable[[], Method]] = {
    "random": RandomRouter,
    "cheapest": CheapestRouter,
    "best_single": BestSingleRouter,
    "zero": ZeroRouter,
    "oracle": OracleRouter,
    "cascade": CascadeRouter,
    "knn": KnnRouter,
    "cluster": ClusterRouter,
    "mf": MfRouter,
    "always_decompose": AlwaysDecompose,
    "self_consistency": FixedPrimitiveRouter,
}

__all__ = [
    "BASELINES",
    "AlwaysDecompose",
    "BestSingleRouter",
    "CascadeRouter",
    "CheapestRouter",
    "ClusterRouter",
    "FixedPrimitiveRouter",
    "KnnRouter",
    "MfRouter",
    "OracleRouter",
    "RandomRouter",
    "ZeroRouter",
]
