"""A RouteLLM-style matrix-factorization router.

RouteLLM's MF router scores a (query, model) pair by a bilinear form between a projected
query embedding and a learned model embedding. Here it is fit pointwise on recorded
correctness rather than on pairwise preferences:
    p(correct | i, j) = sigmoid(u_j . (W e_i + c) + b_j)        e_i: MiniLM [384], W: [d, 384]
trained with binary cross-entropy (the recorded score as a soft target) over the available
cells. The route maximizes p - λ * cost_hat_j / max cost_hat. For an unseen pool, W and c
are learned on train and frozen; only the new columns' u_j, b_j are fit on the probe items.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from orchestrator.baselines.common import (
    DEFAULT_LAMBDAS,
    PredictedAccuracyRouter,
    calibration_table,
    cost_normalized,
    pair_cost,
)
from orchestrator.embedding import EMBEDDING_DIM, embed
from orchestrator.routing.table import OutcomeTable

EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class MfConfig:
    """The MF router's settings."""

    dim: int = 32  # size of the shared query/pair space
    epochs: int = 300  # full-batch Adam steps
    lr: float = 1e-2  # Adam learning rate
    weight_decay: float = 1e-4  # L2 on every parameter
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS  # cost weights swept for the frontier


class MatrixFactorization(nn.Module):  # type: ignore[misc]  # torch is untyped here (follow_imports=skip)
    def __init__(self, n_pairs: int, dim: int) -> None:
        super().__init__()
        self.project = nn.Linear(EMBEDDING_DIM, dim)  # W, c
        self.pair = nn.Embedding(n_pairs, dim)  # u
        self.bias = nn.Embedding(n_pairs, 1)  # b
        nn.init.normal_(self.pair.weight, std=0.1)
        nn.init.zeros_(self.bias.weight)

    def forward(self, query: torch.Tensor) -> torch.Tensor:
        """query [n, 384] -> logits [n, n_pairs]."""
        z = self.project(query)  # [n, d]
        logits: torch.Tensor = z @ self.pair.weight.T + self.bias.weight.T  # [n, n_pairs]
        return logits


def _train(
    model: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor, m: torch.Tensor, cfg: MfConfig
) -> None:
    """Full-batch Adam on masked BCE: x [n, 384], y [n, n_pairs] targets, m [n, n_pairs] mask."""
    optimizer = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    for _ in range(cfg.epochs):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y, weight=m, reduction="sum") / m.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def _targets(table: OutcomeTable) -> tuple[torch.Tensor, torch.Tensor]:
    known = table.available()
    y = torch.tensor(np.where(known, table.score, 0.0), dtype=torch.float32)
    return y, torch.tensor(known, dtype=torch.float32)


class MfRouter(PredictedAccuracyRouter):
    name = "mf"

    def __init__(self, config: MfConfig | None = None, embed_fn: EmbedFn = embed) -> None:
        self.config = config or MfConfig()
        self.knobs = self.config.lambdas
        self.embed_fn = embed_fn
        self._model: MatrixFactorization | None = None
        self._cost = np.zeros(0)
        self._memo = None

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        torch.manual_seed(seed)
        cfg = self.config
        model = MatrixFactorization(train.n_pairs, cfg.dim)
        x = torch.tensor(self.embed_fn(train.prompts))  # [n_train, 384]
        y, m = _targets(train)
        _train(model, list(model.parameters()), x, y, m, cfg)
        if probe is not None:
            # new columns: a fresh pair table on the frozen projection
            fresh = MatrixFactorization(probe.n_pairs, cfg.dim)
            fresh.project.load_state_dict(model.project.state_dict())
            fresh.project.requires_grad_(False)
            x = torch.tensor(self.embed_fn(probe.prompts))  # [n_probe, 384]
            y, m = _targets(probe)
            _train(fresh, [fresh.pair.weight, fresh.bias.weight], x, y, m, cfg)
            model = fresh
        self._model = model.eval()
        self._cost = cost_normalized(pair_cost(calibration_table(train, probe)))
        self._memo = None

    def predict(self, test: OutcomeTable) -> np.ndarray:
        """float64 [n_test, n_pairs]: predicted probability of a correct answer."""
        assert self._model is not None, "fit first"
        with torch.no_grad():
            logits = self._model(torch.tensor(self.embed_fn(test.prompts)))
        probability: np.ndarray = torch.sigmoid(logits).double().numpy()
        return probability
