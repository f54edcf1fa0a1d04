"""Plan features for OrchRM: each node's pair descriptor, the DAG's shape and the estimated cost.

A node's pair is described as the policy describes it (`learning.features`,
`learning.calibration`): log prices, size and family, the primitive, and calibration
statistics from the training pool, including the per-item accuracy estimate for the task
at hand. A plan is the mean of its
nodes' descriptors, the weakest node's estimated accuracy, its size, depth, whether it
decomposes, and its estimated cost. A pair the pool never saw gets its static features
and the pool's mean statistics. With an `AccuracyPrior` (`reward.prior`), the per-item
accuracy is the logit mean of its estimate and the calibration's.

Shapes: n tasks, p pool pairs, m plans, D = PLAN_DIM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from orchestrator.learning.calibration import Calibration, ItemPredictor, item_accuracy
from orchestrator.learning.dataset import PoolContext
from orchestrator.learning.features import (
    PAIR_DIM,
    STATIC_DIM,
    PairInfo,
    assemble_pair_features,
    domain_indices,
    task_features,
)
from orchestrator.reward.plans import Plan
from orchestrator.reward.prior import AccuracyPrior, logit

SHAPE_DIM = 5  # weakest node's accuracy, nodes / 8, depth / 4, decomposes, log estimated cost
PLAN_DIM = PAIR_DIM + SHAPE_DIM
ACC, KNN, COST = STATIC_DIM, STATIC_DIM + 1, STATIC_DIM + 7  # indices in a pair descriptor
PLAN_ACC = PAIR_DIM  # index of the plan's weakest node's estimated accuracy
PLAN_COST = PAIR_DIM + 4  # index of the plan's encoded estimated cost


def encode_cost(cost: np.ndarray) -> np.ndarray:
    """The plan-cost feature: log1p(10·cost) / 3, cost in units of cost_ref (negatives read as 0)."""
    encoded: np.ndarray = np.log1p(np.maximum(cost, 0.0) * 10) / 3
    return encoded


def plan_cost(plans: torch.Tensor) -> torch.Tensor:
    """[B, PLAN_DIM] -> [B]: a plan's estimated cost / cost_ref, the inverse of `encode_cost`."""
    return torch.expm1(plans[:, PLAN_COST] * 3) / 10


def single_plan_features(pair_feats: np.ndarray) -> np.ndarray:
    """float32 [n, p, PLAN_DIM]: the one-node plan of every pair, from pair descriptors [n, p, PAIR_DIM]."""
    n, p, _ = pair_feats.shape
    cost = pair_feats[..., COST]
    shape = np.stack(
        [
            pair_feats[..., KNN],
            np.full((n, p), 1 / 8),
            np.full((n, p), 1 / 4),
            np.zeros((n, p)),
            encode_cost(cost),
        ],
        axis=-1,
    )
    return np.concatenate([pair_feats, shape], axis=-1).astype(np.float32)


def table_plan_features(
    context: PoolContext,
    embeddings: np.ndarray,
    domains: Sequence[str],
    *,
    exclude_self: bool = False,
    prior: AccuracyPrior | None = None,
) -> np.ndarray:
    """float32 [n, p, PLAN_DIM] for the one-node plans of the pool's pairs on n tasks.

    `exclude_self`: the tasks are the calibration items themselves (training pairs), so
    their own outcomes are left out of their per-item accuracy (the prior's out-of-fold
    estimates stand in for its fit ones).
    """
    acc, knn, cost = pool_estimates(context, embeddings, domains, exclude_self=exclude_self, prior=prior)
    calib = context.calibration
    return single_plan_features(assemble_pair_features(context.infos, acc, knn, calib.global_acc, cost))


def pool_estimates(
    context: PoolContext,
    embeddings: np.ndarray,
    domains: Sequence[str],
    *,
    exclude_self: bool,
    prior: AccuracyPrior | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 [n, p] each: every pool pair's domain accuracy, per-item accuracy and estimated
    cost / cost_ref on n tasks.

    The per-item accuracy is the calibration's, averaged in logit space with the accuracy
    prior's estimate where there is a prior. On the shipped recordings the mean ranks all
    held-out correct-over-incorrect pairs better than either alone (`bench/ceilings.py`),
    but best-of-N at a fixed budget gains more with the calibration's estimate alone
    (docs/reward.md).
    """
    calib = context.calibration
    dom = domain_indices(domains)
    acc = calib.domain_acc[dom]
    cost = calib.domain_cost[dom] / calib.cost_ref
    if not len(domains):
        return acc, acc, cost
    knn = item_accuracy(calib, embeddings, domains, acc, exclude_self=exclude_self)
    if prior is None:
        return acc, knn, cost
    if exclude_self:
        assert prior.oof is not None and prior.oof.shape == acc.shape, "exclude_self needs the prior's fit items"
        estimate = prior.oof
    else:
        estimate = prior.predict(task_features(embeddings, domains))
    return acc, 1.0 / (1.0 + np.exp(-(logit(estimate) + logit(knn)) / 2)), cost


def plan_features(
    context: PoolContext,
    embeddings: np.ndarray,
    domains: Sequence[str],
    plans: Sequence[Plan],
    *,
    infos: dict[tuple[str, str], PairInfo] | None = None,
    prior: AccuracyPrior | None = None,
) -> np.ndarray:
    """float32 [m, PLAN_DIM] for any plans (one per task row), on pairs known to the pool or not.

    `infos` gives prices etc. of pairs the pool does not know (keyed (model, primitive));
    `prior` (fit on the pool's table) gives the per-item accuracy of the pool's pairs.
    """
    calib = context.calibration
    index = {(info.model, info.primitive): j for j, info in enumerate(context.infos)}
    acc, knn, cost = pool_estimates(context, embeddings, domains, exclude_self=False, prior=prior)  # [m, p] each
    # A pool pair is described relative to the whole pool, exactly as in `table_plan_features`.
    pool = assemble_pair_features(context.infos, acc, knn, calib.global_acc, cost)  # [m, p, PAIR_DIM]
    mean_acc = float(calib.global_acc.mean()) if calib.global_acc.size else 0.5
    mean_cost = float(cost.mean()) if cost.size else 1.0
    out = np.zeros((len(plans), PLAN_DIM), dtype=np.float32)
    for r, plan in enumerate(plans):
        nodes, near, spent = [], [], []
        for model, primitive in plan.pairs:
            j = index.get((model.removeprefix("replay/"), primitive))
            if j is None:  # unknown to the pool: static features and the pool's means
                info = (infos or {}).get((model, primitive), PairInfo(model=model, primitive=primitive))
                one = np.asarray([[mean_acc]])
                nodes.append(
                    assemble_pair_features([info], one, one, np.asarray([mean_acc]), np.asarray([[mean_cost]]))[0, 0]
                )
                near.append(mean_acc)
                spent.append(mean_cost)
            else:
                nodes.append(pool[r, j])
                near.append(float(knn[r, j]))
                spent.append(float(cost[r, j]))
        total = plan.cost_estimate / calib.cost_ref if plan.cost_estimate is not None else float(np.sum(spent))
        out[r, :PAIR_DIM] = np.mean(nodes, axis=0)
        out[r, PAIR_DIM:] = [
            min(near),
            min(len(plan.nodes), 64) / 8,
            min(plan.depth(), 16) / 4,
            float(plan.decompose),
            float(encode_cost(np.asarray(total))),
        ]
    return out


# --- calibration to and from a checkpoint (plain tensors: loads with weights_only=True) ---


def calibration_payload(calib: Calibration) -> dict[str, Any]:
    def t(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a))

    payload: dict[str, Any] = {
        "embeddings": t(calib.embeddings),
        "score": t(calib.score),
        "global_acc": t(calib.global_acc),
        "domain_acc": t(calib.domain_acc),
        "domain_cost": t(calib.domain_cost),
        "cost_ref": float(calib.cost_ref),
        "domains": list(calib.domains),
        "blend": float(calib.blend),
    }
    if calib.predictor is not None:
        pred = calib.predictor
        payload["predictor"] = {
            "weight": t(pred.weight),
            "bias": t(pred.bias),
            "pair": t(pred.pair),
            "pair_bias": t(pred.pair_bias),
        }
    return payload


def calibration_from_payload(payload: dict[str, Any]) -> Calibration:
    pred = payload.get("predictor")
    return Calibration(
        embeddings=payload["embeddings"].numpy(),
        score=payload["score"].numpy(),
        global_acc=payload["global_acc"].numpy(),
        domain_acc=payload["domain_acc"].numpy(),
        domain_cost=payload["domain_cost"].numpy(),
        cost_ref=float(payload["cost_ref"]),
        domains=tuple(payload["domains"]),
        predictor=ItemPredictor(**{k: v.numpy() for k, v in pred.items()}) if pred else None,
        blend=float(payload["blend"]),
    )
