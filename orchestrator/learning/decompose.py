"""The decompose head, trained on decisions with both answers: split this task, or do not.

`policy.sft` can only tell the head "do not" (no shipped table records a composite run).
Where composite tasks exist with an outcome for each option (`orchestrator.composite`: the
parts' recorded outcomes under the policy's own choices), the head is trained in two stages,
as the pair scorer is:

- **SFT** (`fit_decompose_head`): weighted binary cross-entropy on targets of both signs, 1
  where decomposing is worth more at λ, weighted by how much more either option is worth,
  plus a floor: where the two are nearly level (a same-domain task whose parts all want
  the pair it would be delegated to, the planner's call being all that differs), the
  cheaper plan is still the answer to learn, not a toss-up;
- **GRPO** (`train_decompose_rl`): episodes of whole composite tasks, a decision sampled at
  every node that has one (a nested part decides again once its parent decomposed), scored
  with the reward of the item episodes: correctness − λ·cost − violations, plus a small
  diversity bonus; group-relative advantages, PPO's clipped surrogate, a KL penalty toward
  the SFT head and an entropy bonus.

Only the head learns (every other weight stays as trained, so the policy's choice of pairs
does not move), on the task's encoding, which is computed once. The runtime asks the same
head (`policies.learned`), so a checkpoint saved after this step decides live as it was
evaluated. Shapes: M decision nodes, T task features, H hidden, N·G sampled episodes.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from orchestrator.configs import STRICT_KEYS, Count, NonNegative, NonNegativeInt, Positive
from orchestrator.learning.rl import clipped_loss, group_advantages


@dataclass(frozen=True)
class DecomposeConfig:
    """Training the decompose head on composite decisions."""

    __pydantic_config__ = STRICT_KEYS

    composites: NonNegativeInt = 0  # train_policy: composites built from the items to train it on (0: none)
    epochs: Count = 40  # SFT passes over the decisions
    batch_size: Count = 256  # SFT minibatch
    lr: Positive = 3e-3  # AdamW learning rate (SFT)
    weight_decay: NonNegative = 1e-4  # AdamW weight decay (SFT)
    weight_floor: NonNegative = 0.5  # a decision's SFT weight: |worth split − worth whole| + this × their mean
    rl_iterations: NonNegativeInt = 60  # GRPO updates (0 skips the stage)
    rl_tasks: Count = 64  # composite tasks per update
    rl_group: Count = 8  # episodes per task
    rl_lr: Positive = 1e-3  # AdamW learning rate (GRPO)
    rl_update_epochs: Count = 2  # gradient passes over each batch of episodes
    clip: Positive = 0.2  # PPO ratio clip
    kl_coef: NonNegative = 0.02  # KL penalty toward the SFT head
    entropy_coef: NonNegative = 0.001  # entropy bonus
    diversity_coef: NonNegative = 0.0  # bonus for a root decision the rest of the group did not take
    std_floor: Positive = 0.05  # floor of the group reward std in the advantage
    violation_penalty: NonNegative = 1.0  # reward subtracted per protocol violation


def head_parameters(net: Any) -> list[torch.nn.Parameter]:
    found = [p for name, p in net.named_parameters() if "decompose_head" in name]
    if not found:
        raise ValueError("the network has no decompose head")
    return found


def encoded(net: Any, tasks: np.ndarray) -> torch.Tensor:
    """[M, H]: the tasks' encoding, which the head reads (frozen here)."""
    with torch.no_grad():
        out: torch.Tensor = net.encode_task(torch.from_numpy(np.asarray(tasks, dtype=np.float32)))
    return out


def fit_decompose_head(
    net: Any,
    tasks: np.ndarray,
    lams: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    config: DecomposeConfig | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """SFT: fit `net`'s decompose head (every member's, for an ensemble) on (task features [M, T],
    λ [M], target [M] in {0, 1}, weight [M]) by weighted binary cross-entropy; the rest of
    the network is frozen. Returns the final loss and the training agreement."""
    config = config or DecomposeConfig()
    if not len(tasks) == len(lams) == len(targets):
        raise ValueError("tasks, lams and targets need one entry per decision")
    if len(targets) == 0:
        raise ValueError("no decisions to fit the decompose head on")
    head = head_parameters(net)
    generator = torch.Generator().manual_seed(seed)
    hidden = encoded(net, tasks)
    lam = torch.from_numpy(np.asarray(lams, dtype=np.float32))
    y = torch.from_numpy(np.asarray(targets, dtype=np.float32))
    w = torch.ones_like(y) if weights is None else torch.from_numpy(np.asarray(weights, dtype=np.float32))
    w = w / w.mean().clamp(min=1e-12)
    optim = torch.optim.AdamW(head, lr=config.lr, weight_decay=config.weight_decay)
    was_training = net.training
    net.train()
    loss_value = float("nan")
    for _ in range(config.epochs):
        order = torch.randperm(len(y), generator=generator)
        for idx in order.split(config.batch_size):
            logit = net.decompose_logit(hidden[idx], lam[idx])
            loss = functional.binary_cross_entropy_with_logits(logit, y[idx], weight=w[idx])
            optim.zero_grad()
            loss.backward()
            optim.step()
            loss_value = float(loss.item())
    net.train(was_training)
    with torch.no_grad():
        agree = ((net.decompose_logit(hidden, lam) > 0).float() == y).float()
    return {
        "decompose/loss": loss_value,
        "decompose/agreement": float((agree * w).sum() / w.sum()),
        "decompose/positive_share": float(y.mean()),
        "decompose/decisions": float(len(y)),
    }


@dataclass(frozen=True)
class DecisionEpisodes:
    """Composite tasks to play: every decision node's task features, and per task its nodes."""

    tasks: np.ndarray  # [M, T] task features of every decision node
    nodes: Sequence[np.ndarray]  # per task: indices into `tasks`, its root first
    forced: np.ndarray  # [M] bool: a node no single pair can take whole (it must decompose)
    lams: np.ndarray  # [L] the λ grid an episode's λ is drawn from


# (task, λ index, decisions [k] bool over its nodes) -> (reward, violations, which decisions counted [k] bool)
Scorer = Callable[[int, int, np.ndarray], tuple[float, int, np.ndarray]]


def bernoulli_logp(logit: torch.Tensor, decision: torch.Tensor) -> torch.Tensor:
    return decision * functional.logsigmoid(logit) + (1 - decision) * functional.logsigmoid(-logit)


def train_decompose_rl(
    net: Any,
    episodes: DecisionEpisodes,
    score: Scorer,
    *,
    config: DecomposeConfig | None = None,
    seed: int = 0,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """GRPO of the decompose head over composite episodes (see the module docstring); returns
    the last update's metrics."""
    config = config or DecomposeConfig()
    if config.rl_iterations == 0 or not len(episodes.nodes):
        return {}
    # --- seeding ---
    rng = np.random.default_rng([seed, 29])
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()

    head = head_parameters(net)
    reference = copy.deepcopy(net).eval()
    hidden = encoded(net, episodes.tasks)  # [M, H]
    forced = torch.from_numpy(np.asarray(episodes.forced, dtype=bool))
    lam_grid = np.asarray(episodes.lams, dtype=np.float32)
    optim = torch.optim.AdamW(head, lr=config.rl_lr, weight_decay=0.0)
    group = config.rl_group
    metrics: dict[str, float] = {}
    violations_seen = 0
    for it in range(config.rl_iterations):
        tasks = rng.choice(len(episodes.nodes), size=min(config.rl_tasks, len(episodes.nodes)), replace=False)
        lam_index = rng.integers(len(lam_grid), size=len(tasks))
        # Node instances, sample-major: sample s = task t's g-th episode; each has its nodes in order.
        sample_of: list[int] = []
        node_of: list[int] = []
        lam_of: list[float] = []
        bounds: list[tuple[int, int]] = []
        for t, (task, li) in enumerate(zip(tasks, lam_index, strict=True)):
            for g in range(group):
                bounds.append((len(node_of), len(node_of) + len(episodes.nodes[task])))
                for node in episodes.nodes[task]:
                    sample_of.append(t * group + g)
                    node_of.append(int(node))
                    lam_of.append(lam_grid[li])
        sample = torch.tensor(sample_of)
        node = torch.tensor(node_of)
        lam = torch.tensor(lam_of)
        h = hidden[node]  # [K, H]

        # --- sample decisions and score the episodes (no grad) ---
        with torch.no_grad():
            logit = net.decompose_logit(h, lam)
            drawn = torch.bernoulli(torch.sigmoid(logit), generator=gen)
            decision = torch.where(forced[node], torch.ones_like(drawn), drawn)
            old_logp = bernoulli_logp(logit, decision)
            ref_logp = bernoulli_logp(reference.decompose_logit(h, lam), decision)
        n_samples = len(tasks) * group
        reward = torch.zeros(n_samples)
        counted = torch.zeros(len(node), dtype=torch.bool)
        for s, (lo, hi) in enumerate(bounds):
            task, li = int(tasks[s // group]), int(lam_index[s // group])
            value, violated, used = score(task, li, decision[lo:hi].bool().numpy())
            reward[s] = value - config.violation_penalty * violated
            violations_seen += violated
            counted[lo:hi] = torch.from_numpy(np.asarray(used, dtype=bool))
        active = (counted & ~forced[node]).float()  # [K] decisions that were the policy's and mattered
        adv = group_advantages(reward, group, config.std_floor)
        # Diversity: a root decision the rest of the group did not take (added after normalizing).
        roots = torch.tensor([lo for lo, _ in bounds])
        root_choice = decision[roots].view(-1, group)
        same = (root_choice.unsqueeze(2) == root_choice.unsqueeze(1)).float().sum(-1) - 1
        bonus = (1 - same / max(group - 1, 1)).view(-1)
        adv = adv + config.diversity_coef * (bonus - bonus.view(-1, group).mean(1).repeat_interleave(group))
        a = adv[sample]  # [K]

        # --- clipped policy-gradient updates of the head ---
        net.train()
        for _ in range(config.rl_update_epochs):
            logit = net.decompose_logit(h, lam)
            p = torch.sigmoid(logit)
            entropy = -(p * functional.logsigmoid(logit) + (1 - p) * functional.logsigmoid(-logit))
            loss, pg_loss, kl_loss, _ = clipped_loss(
                bernoulli_logp(logit, decision), old_logp, ref_logp, a, entropy, active,
                clip=config.clip, kl_coef=config.kl_coef, entropy_coef=config.entropy_coef,
            )  # fmt: skip
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(head, 1.0)
            optim.step()
        net.eval()
        metrics = {
            "decompose_rl/reward": reward.mean().item(),
            "decompose_rl/decompose_rate": float(decision[roots].mean().item()),
            "decompose_rl/violations": float(violations_seen),
            "decompose_rl/diversity": bonus.mean().item(),
            "loss/decompose_pg": pg_loss.item(),
            "loss/decompose_kl": kl_loss.item(),
        }
        if progress:
            progress(it + 1, config.rl_iterations, metrics)
    metrics["time/decompose_rl_s"] = time.perf_counter() - start
    return metrics
