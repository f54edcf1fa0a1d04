"""OrchRM's reward of one-node plans as a probability of a right answer (Platt scaling)."""

from __future__ import annotations

import numpy as np
import torch

from orchestrator.reward.model import RewardNet


def rm_rewards(net: RewardNet, task: np.ndarray, plans: np.ndarray) -> np.ndarray:
    """float64 [n, p]: OrchRM's reward at λ = 0 of each one-node plan (task [n, T], plans [n, p, D])."""
    n, p, d = plans.shape
    net.eval()
    with torch.no_grad():
        flat = net(
            torch.from_numpy(np.repeat(task, p, axis=0)), torch.from_numpy(plans.reshape(n * p, d)), torch.zeros(n * p)
        )
    out: np.ndarray = flat.double().numpy().reshape(n, p)
    return out


def platt(reward: np.ndarray, score: np.ndarray, *, steps: int = 300) -> tuple[float, float]:
    """(a, b) with sigmoid(a·reward + b) fitted by BCE to the recorded scores (NaN cells skipped)."""
    known = ~np.isnan(score) & ~np.isnan(reward)
    x = torch.from_numpy(reward[known].astype(np.float32))
    y = torch.from_numpy(score[known].astype(np.float32))
    ab = torch.tensor([1.0, 0.0], requires_grad=True)
    optim = torch.optim.LBFGS([ab], max_iter=steps)

    def closure() -> torch.Tensor:
        optim.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(ab[0] * x + ab[1], y)
        loss.backward()
        return loss

    optim.step(closure)
    a, b = ab.detach().tolist()
    return float(a), float(b)
