"""OrchRM's network and its checkpoint: one scalar per (task, plan), no execution needed.

Shapes: B plans, T task features (embedding + domain one-hot), D = PLAN_DIM.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from orchestrator.configs import STRICT_KEYS, Count, Dropout
from orchestrator.embedding import EMBEDDING_ID, check_embedding
from orchestrator.learning.dataset import PoolContext
from orchestrator.learning.features import TASK_EXTRA, PairInfo, task_features
from orchestrator.learning.model import LAMBDA_DIM, lambda_features
from orchestrator.reward.features import (
    PLAN_ACC,
    PLAN_DIM,
    calibration_from_payload,
    calibration_payload,
    plan_cost,
    plan_features,
)
from orchestrator.reward.plans import Plan
from orchestrator.reward.prior import CLIP, AccuracyPrior

KIND = "orchestra-reward-model"
COST_SCALE_INIT = 4.0  # β before it is fitted: near p = 0.5 a reward logit moves about 4x a probability


@dataclass(frozen=True)
class RewardConfig:
    """Sizes of the reward network."""

    __pydantic_config__ = STRICT_KEYS

    embedding_dim: Count = 384  # width of the task text embedding (MiniLM)
    hidden: Count = 64  # width of the hidden layers (small: per-task signal is weak, a wide net memorizes tasks)
    dropout: Dropout = 0.2  # dropout inside the MLP (training only)
    # Separable: reward = accuracy score(task, plan) - β·λ·estimated cost, with β ≥ 0 learned
    # (`train.train_reward` fits the score on accuracy pairs, then β on every pair). λ moves
    # only the cost term, so cost pairs cannot bend the accuracy ranking. False: one MLP
    # over (task, plan, λ), as checkpoints saved before this option were trained.
    separable: bool = True
    # Anchor: the accuracy score is α·logit(the plan's weakest-node accuracy estimate) + the
    # MLP, α learned from 1, so the MLP learns a correction to the per-item estimate rather
    # than the estimate itself. Without it the MLP ranked held-out pairs below its own input
    # feature, and best-of-8 picked worse (docs/reward.md).
    anchor: bool = True
    # Accuracy prior: blend `reward.prior` (per-pair regressions and task-family accuracy)
    # into the per-item accuracy estimate. It ranks held-out correct-over-incorrect pairs
    # better (0.751 against 0.745), but at a fixed budget best-of-N spends on the wrong
    # items and gains less: off by default (docs/reward.md has both figures).
    accuracy_prior: bool = False


class RewardNet(nn.Module):  # type: ignore[misc]  # torch is not type-checked (pyproject)
    def __init__(self, config: RewardConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.task_proj = nn.Sequential(nn.Linear(config.embedding_dim + TASK_EXTRA, h), nn.GELU())
        self.head = nn.Sequential(
            nn.Linear(h + PLAN_DIM + (0 if config.separable else LAMBDA_DIM), h),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(h, h),
            nn.GELU(),
            nn.Linear(h, 1),
        )
        if config.separable:  # β = softplus(cost_scale)
            self.cost_scale = nn.Parameter(torch.tensor(math.log(math.expm1(COST_SCALE_INIT))))
        if config.anchor:  # α
            self.anchor_scale = nn.Parameter(torch.tensor(1.0))

    def forward(self, task: torch.Tensor, plan: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        """task [B, T], plan [B, D], cost preference lam [B] -> [B] reward."""
        if self.config.separable:
            return self.accuracy(task, plan) - self.cost_weight() * lam * plan_cost(plan)
        joint = torch.cat([self.task_proj(task), plan, lambda_features(lam)], dim=-1)
        out: torch.Tensor = self.head(joint).squeeze(-1) + self.anchor_term(plan)
        return out

    def accuracy(self, task: torch.Tensor, plan: torch.Tensor) -> torch.Tensor:
        """[B]: the separable model's accuracy score (its reward at λ = 0)."""
        out: torch.Tensor = self.head(torch.cat([self.task_proj(task), plan], dim=-1)).squeeze(-1)
        return out + self.anchor_term(plan)

    def anchor_term(self, plan: torch.Tensor) -> torch.Tensor | float:
        """[B]: α·logit of the plan's weakest-node accuracy estimate (0 without `config.anchor`)."""
        if not self.config.anchor:
            return 0.0
        out: torch.Tensor = self.anchor_scale * torch.logit(plan[:, PLAN_ACC], eps=CLIP)
        return out

    def cost_weight(self) -> torch.Tensor:
        """β: how many reward units one unit of λ·cost takes away (separable model)."""
        return F.softplus(self.cost_scale)


def save_reward_model(
    path: str | Path,
    net: RewardNet,
    context: PoolContext,
    *,
    extra: dict[str, Any],
    prior: AccuracyPrior | None = None,
) -> None:
    """A .pt file of tensors and JSON-able values (loads with weights_only=True)."""
    payload = {
        "kind": KIND,
        "config": asdict(net.config),
        "embedding": EMBEDDING_ID,
        "state_dict": net.state_dict(),
        "pool": {
            "infos": [asdict(info) for info in context.infos],
            "calibration": calibration_payload(context.calibration),
            "prior": prior.payload() if prior is not None else None,
        },
        **extra,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)


class RewardModel:
    """A trained OrchRM: scores plans for tasks; load with `RewardModel.load(path)`."""

    def __init__(
        self, net: RewardNet, context: PoolContext, payload: dict[str, Any], prior: AccuracyPrior | None = None
    ) -> None:
        self.net, self.context, self.payload, self.prior = net.eval(), context, payload, prior

    @classmethod
    def load(cls, path: str | Path) -> RewardModel:
        payload: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
        if payload.get("kind") != KIND:
            raise ValueError(f"{path} is not an OrchRM checkpoint")
        check_embedding(payload, path)
        # Options a checkpoint does not name did not exist when it was saved: it was trained without them.
        config = {"separable": False, "anchor": False, "accuracy_prior": False, **payload.pop("config")}
        net = RewardNet(RewardConfig(**config))
        net.load_state_dict(payload.pop("state_dict"))
        pool = payload.pop("pool")
        context = PoolContext(
            infos=[PairInfo(**info) for info in pool["infos"]],
            calibration=calibration_from_payload(pool["calibration"]),
        )
        prior = AccuracyPrior.from_payload(pool["prior"]) if pool.get("prior") else None
        return cls(net, context, payload, prior)

    @property
    def platt(self) -> tuple[float, float]:
        """(a, b): sigmoid(a·reward + b) is the probability that a one-node plan is right, fitted
        by `train_rm` on its items' recorded scores; (1, 0) for a checkpoint saved before that."""
        a, b = self.payload.get("platt") or (1.0, 0.0)
        return float(a), float(b)

    def score(
        self,
        embeddings: np.ndarray,
        domains: Sequence[str],
        plans: Sequence[Plan],
        *,
        lam: float = 0.0,
        infos: dict[tuple[str, str], PairInfo] | None = None,
    ) -> np.ndarray:
        """float64 [m]: the reward of each plan for its task (embeddings [m, e], one row per plan).

        `lam` is the cost preference (0 = accuracy only), in the policy's units.
        """
        if not plans:
            return np.zeros(0)
        feats = plan_features(self.context, embeddings, domains, plans, infos=infos, prior=self.prior)
        task = task_features(embeddings, domains)
        with torch.no_grad():
            out = self.net(torch.from_numpy(task), torch.from_numpy(feats), torch.full((len(plans),), float(lam)))
        scores: np.ndarray = out.double().numpy()
        return scores

    def scorer(self, embedder: Callable[[list[str]], np.ndarray]) -> Callable[[list[str], list[Plan]], np.ndarray]:
        """A `(task texts, plans) -> rewards` function, for callers that hold text rather than embeddings."""

        def score_texts(texts: list[str], plans: list[Plan]) -> np.ndarray:
            emb = np.asarray(embedder(texts), dtype=np.float32) if texts else np.zeros((0, 384), np.float32)
            return self.score(emb, [""] * len(texts), plans)

        return score_texts
