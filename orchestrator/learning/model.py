"""The policy network: one shared scorer for every candidate pair, plus finish, decompose and reliability heads.

Inputs are a task (embedding + domain one-hot), state features, a cost preference λ and
one feature vector per candidate pair, so the same weights serve any pool and any point
of the accuracy-cost frontier. Inadmissible pairs get a logit of -inf and are never chosen.

Shapes: B batch, P candidate pairs, T task features, F pair features.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from orchestrator.configs import STRICT_KEYS, Count, Dropout
from orchestrator.embedding import EMBEDDING_ID, check_embedding, saved_embedding
from orchestrator.errors import CheckpointError
from orchestrator.learning.features import CANDIDATE_DIM, PAIR_DIM, RESPONSE_DIM, STATE_DIM, TASK_EXTRA

LAMBDA_DIM = 2


@dataclass(frozen=True)
class PolicyConfig:
    """Sizes of the policy network."""

    __pydantic_config__ = STRICT_KEYS

    embedding_dim: Count = 384  # width of the task text embedding (MiniLM)
    hidden: Count = 128  # width of every hidden layer
    dropout: Dropout = 0.0  # dropout inside the MLPs (training only)
    members: Count = 1  # networks deciding together (`learning.ensemble`), each trained on its own items

    @property
    def task_dim(self) -> int:
        return self.embedding_dim + TASK_EXTRA


def lambda_features(lam: torch.Tensor) -> torch.Tensor:
    """[B] -> [B, LAMBDA_DIM]: λ and its log, so small and large preferences both register."""
    return torch.stack([lam, torch.log(lam + 0.01) / 5], dim=-1)


def mlp(inp: int, hidden: int, out: int, dropout: float) -> nn.Sequential:
    layers = [nn.Linear(inp, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(hidden, out))


class PolicyNet(nn.Module):  # type: ignore[misc]  # torch is not type-checked (pyproject)
    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.task_proj = nn.Sequential(nn.Linear(config.task_dim, h), nn.GELU())
        context = h + STATE_DIM + LAMBDA_DIM
        self.pair_head = mlp(context + PAIR_DIM + CANDIDATE_DIM, h, 1, config.dropout)
        self.finish_head = mlp(context, h, 1, config.dropout)
        self.decompose_head = mlp(h + LAMBDA_DIM, h, 1, config.dropout)
        # The reliability head judges an executed response; it has its own view of the task.
        self.rel_task_proj = nn.Sequential(nn.Linear(config.task_dim, h), nn.GELU())
        self.reliability_head = mlp(h + PAIR_DIM + RESPONSE_DIM, h, 1, config.dropout)

    def encode_task(self, task: torch.Tensor) -> torch.Tensor:
        """[B, T] -> [B, H]"""
        out: torch.Tensor = self.task_proj(task)
        return out

    def action_logits(
        self,
        task_h: torch.Tensor,  # [B, H] from encode_task
        state: torch.Tensor,  # [B, STATE_DIM]
        lam: torch.Tensor,  # [B]
        pairs: torch.Tensor,  # [B, P, F]
        candidate: torch.Tensor,  # [B, P, CANDIDATE_DIM]
        allowed: torch.Tensor,  # [B, P] bool: admissible and not yet executed
        finish_allowed: torch.Tensor,  # [B] bool
    ) -> torch.Tensor:
        """[B, P + 1] logits: one per pair, then finish; a disallowed action is -inf."""
        context = torch.cat([task_h, state, lambda_features(lam)], dim=-1)  # [B, C]
        pair_logits = self.pair_scores(context, torch.cat([pairs, candidate], dim=-1))  # [B, P]
        finish_logit = self.finish_head(context)  # [B, 1]
        logits = torch.cat([pair_logits, finish_logit], dim=-1)  # [B, P+1]
        mask = torch.cat([allowed, finish_allowed.unsqueeze(-1)], dim=-1)
        return logits.masked_fill(~mask, -math.inf)

    def pair_scores(self, context: torch.Tensor, per_pair: torch.Tensor) -> torch.Tensor:
        """[B, P]: `pair_head` over [context, per_pair] for every pair (context [B, C], per_pair
        [B, P, F+K]). Its first layer is applied in two column blocks, the context's once per
        item, so the [B, P, C+F+K] input is never built: the same function, a fraction of the
        FLOPs (C is most of the input)."""
        first, rest = self.pair_head[0], self.pair_head[1:]
        c = context.shape[-1]
        shared = nn.functional.linear(context, first.weight[:, :c], first.bias)  # [B, H]
        h = nn.functional.linear(per_pair, first.weight[:, c:]) + shared.unsqueeze(1)  # [B, P, H]
        out: torch.Tensor = rest(h).squeeze(-1)
        return out

    def decompose_logit(self, task_h: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        """[B]: the logit of decomposing rather than delegating the whole task to one pair."""
        out: torch.Tensor = self.decompose_head(torch.cat([task_h, lambda_features(lam)], dim=-1)).squeeze(-1)
        return out

    def reliability_logits(self, task: torch.Tensor, pairs: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        """[B, P]: the logit that each pair's executed response is correct (task [B, T], response [B, P, R])."""
        b, p, _ = pairs.shape
        return self.reliability_of(self.rel_task_proj(task).unsqueeze(1).expand(b, p, -1), pairs, response)

    def reliability_of(self, task_h: torch.Tensor, pairs: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        """[...]: the same logit for any cells, each with its own row of rel_task_proj(task) [..., H],
        pair features [..., F] and response features [..., R]."""
        out: torch.Tensor = self.reliability_head(torch.cat([task_h, pairs, response], dim=-1)).squeeze(-1)
        return out


def build_net(config: PolicyConfig) -> nn.Module:
    """An untrained network of `config`: one PolicyNet, or a `PolicyEnsemble` of `config.members`."""
    if config.members == 1:
        return PolicyNet(config)
    from orchestrator.learning.ensemble import PolicyEnsemble

    return PolicyEnsemble.empty(config)


def save_checkpoint(path: str | Path, net: PolicyNet, *, extra: dict[str, Any]) -> None:
    """A .pt file of plain tensors and JSON-able values: loads with weights_only=True."""
    payload = {"config": asdict(net.config), "state_dict": net.state_dict(), "embedding": EMBEDDING_ID, **extra}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)


def checkpoint_file_facts(path: str | Path) -> tuple[str, bool]:
    """The text embedding a checkpoint file was trained on (see `check_embedding`), and whether
    it carries its pool's calibration (`context`: checkpoints from before did not)."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    return saved_embedding(payload), "context" in payload


def load_checkpoint(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """(network in eval mode, the rest of the payload: metrics, training config, ...);
    CheckpointError naming the file and the cause when it cannot be loaded."""
    try:
        payload: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
        check_embedding(payload, path)
        net = build_net(PolicyConfig(**payload.pop("config")))
        net.load_state_dict(payload.pop("state_dict"))
    except Exception as error:  # torch.load raises many kinds (OSError, RuntimeError, UnpicklingError, ...)
        raise CheckpointError(f"{path}: {type(error).__name__}: {error}") from error
    net.eval()
    return net, payload
