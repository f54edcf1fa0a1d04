"""A policy of several networks, each trained on its own share of the items: bagging.

Trained for a pool it will not see, one network on every item of the train pool learns the
train pool's models too well: the more items, the more it scores a pair by what it learned
of that model, not by the calibration it will get on an unseen one (docs/evaluation.md,
"Without the training cap"). A network on a share of about 2,000 items does not, and several
of them, on disjoint shares, use every item. Each share holds at least `min_items` items, so a
pool of fewer than twice that many trains one network, as a seen pool does. Their decisions are averaged: the
action log-probabilities (so the masked actions stay -inf), the reliability and decompose
logits.

`PolicyEnsemble` answers every call a `PolicyNet` answers at decision time, so the episode
code, the runtime policy and the checkpoint files take either. A task's hidden vector is the
members' side by side ([B, M·H]); each member reads its own block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from orchestrator.configs import STRICT_KEYS, Count
from orchestrator.learning.model import PolicyConfig, PolicyNet


@dataclass(frozen=True)
class UnseenConfig:
    """How a policy trains for pools it will not see: how many items one network learns from."""

    __pydantic_config__ = STRICT_KEYS

    min_items: Count | None = 2000  # items per network at least; twice as many make several networks (None: one on all)


def shares(n_items: int, min_items: int | None, *, seed: int) -> list[np.ndarray]:
    """Disjoint sorted row indices covering all `n_items`, floor(n / min_items) shares of
    near-equal size (one share of every row when `min_items` is None or n is less than twice it)."""
    if min_items is None or n_items < 2 * min_items:
        return [np.arange(n_items)]
    count = n_items // min_items
    order = np.random.default_rng([seed, 7]).permutation(n_items)
    return [np.sort(part) for part in np.array_split(order, count)]


class PolicyEnsemble(nn.Module):  # type: ignore[misc]  # torch is not type-checked (pyproject)
    """Members trained apart, deciding together."""

    def __init__(self, members: Sequence[PolicyNet]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError("an ensemble needs at least two members")
        configs = {replace(m.config, members=1) for m in members}
        if len(configs) != 1:
            raise ValueError("the members of an ensemble must share one network config")
        self.members = nn.ModuleList(members)
        self.config = replace(configs.pop(), members=len(members))
        self.hidden = self.config.hidden

    @classmethod
    def empty(cls, config: PolicyConfig) -> PolicyEnsemble:
        """Untrained members of `config` (config.members of them), for a checkpoint's state dict."""
        single = replace(config, members=1)
        return cls([PolicyNet(single) for _ in range(config.members)])

    def _blocks(self, task_h: torch.Tensor) -> list[torch.Tensor]:
        return list(task_h.split(self.hidden, dim=-1))

    def encode_task(self, task: torch.Tensor) -> torch.Tensor:
        """[B, T] -> [B, M·H]"""
        return torch.cat([m.encode_task(task) for m in self.members], dim=-1)

    def rel_task_proj(self, task: torch.Tensor) -> torch.Tensor:
        """[..., T] -> [..., M·H]: each member's view of the task for its reliability head."""
        return torch.cat([m.rel_task_proj(task) for m in self.members], dim=-1)

    def action_logits(
        self,
        task_h: torch.Tensor,
        state: torch.Tensor,
        lam: torch.Tensor,
        pairs: torch.Tensor,
        candidate: torch.Tensor,
        allowed: torch.Tensor,
        finish_allowed: torch.Tensor,
    ) -> torch.Tensor:
        """[B, P + 1]: the members' mean action log-probabilities (disallowed: -inf)."""
        logps = [
            torch.log_softmax(m.action_logits(h, state, lam, pairs, candidate, allowed, finish_allowed), dim=-1)
            for m, h in zip(self.members, self._blocks(task_h), strict=True)
        ]
        return torch.stack(logps).mean(dim=0)

    def decompose_logit(self, task_h: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        """[B]: the members' mean decompose logit."""
        logits = [m.decompose_logit(h, lam) for m, h in zip(self.members, self._blocks(task_h), strict=True)]
        return torch.stack(logits).mean(dim=0)

    def reliability_logits(self, task: torch.Tensor, pairs: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        """[B, P]: the members' mean reliability logit."""
        return torch.stack([m.reliability_logits(task, pairs, response) for m in self.members]).mean(dim=0)

    def reliability_of(self, task_h: torch.Tensor, pairs: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        """[...]: the members' mean reliability logit, each on its block of rel_task_proj's output."""
        logits = [m.reliability_of(h, pairs, response) for m, h in zip(self.members, self._blocks(task_h), strict=True)]
        return torch.stack(logits).mean(dim=0)
