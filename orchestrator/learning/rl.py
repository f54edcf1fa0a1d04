"""GRPO-style RL on the recorded outcome table: group-relative advantages, clipped policy gradient.

For each sampled task, λ is drawn once and the policy plays a group of G episodes (pair
calls, then finish). Each episode is scored on the recorded outcomes, which are real:

    reward = correct - λ·normalized cost - violation_penalty·violations

The advantage of an episode is its reward minus the group mean, over the group std (with
a floor), plus a small diversity bonus: a first pair the rest of the group did not pick. The
objective is PPO's clipped surrogate per action, plus a KL penalty toward the SFT policy
(k3 estimator) and a small entropy bonus. The reliability head is not trained here.

Inadmissible pairs are masked out of the action distribution, so a sampled episode should
commit no protocol violation: `rl/violations` counts the unavailable pairs episodes executed
all the same (0 unless the masking breaks), and the penalty keeps the reward the protocol's.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from orchestrator.configs import STRICT_KEYS, Count, Fraction, NonNegative, NonNegativeInt, Positive, Seed, check_order
from orchestrator.learning.episode import EpisodeBatch, episode_reward, rollout, violations
from orchestrator.learning.model import PolicyNet
from orchestrator.learning.sft import SFTConfig, sample_lambdas

if TYPE_CHECKING:
    from orchestrator.learning.holdout import Best

RL_STEP = 1000  # `Best.at` of RL's measurements: RL_STEP + updates (the action heads' epochs are below)


@dataclass(frozen=True)
class RLConfig:
    """GRPO stage."""

    __pydantic_config__ = STRICT_KEYS

    iterations: NonNegativeInt = 120  # policy updates
    tasks_per_iteration: Count = 64  # tasks sampled per update
    group: Count = 8  # episodes per task (the group of GRPO)
    lr: Positive = 3e-4  # AdamW learning rate
    update_epochs: Count = 2  # gradient passes over each batch of episodes
    clip: Positive = 0.2  # PPO ratio clip
    kl_coef: NonNegative = 0.02  # KL penalty toward the SFT policy
    entropy_coef: NonNegative = 0.003  # entropy bonus
    diversity_coef: NonNegative = 0.02  # bonus for a first pair the rest of the group did not pick
    std_floor: Positive = 0.1  # floor of the group reward std in the advantage
    violation_penalty: NonNegative = 1.0  # reward subtracted per protocol violation
    max_steps: Count = 3  # pair calls per episode at most
    lam_max: Positive = 2.0  # λ is drawn log-uniform in [lam_min, lam_max], or 0
    lam_min: Positive = 0.005  # smallest non-zero λ
    lam_zero: Fraction = 0.15  # probability of λ = 0
    seed: Seed = 0  # seeds tasks, λ and sampling

    def __post_init__(self) -> None:
        check_order(self, "lam_min", "lam_max")


def group_advantages(reward: torch.Tensor, group: int, std_floor: float) -> torch.Tensor:
    """[N*G] rewards laid out task-major -> advantages normalized within each task's group.

    The std has a floor, so a group whose episodes differ only by a sliver of cost does not
    turn that sliver into a full unit of advantage.
    """
    r = reward.view(-1, group)  # [N, G]
    adv = (r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True).clamp(min=std_floor)
    return adv.view(-1)


def diversity_bonus(first: torch.Tensor, group: int) -> torch.Tensor:
    """[N*G]: 1 - the share of the rest of the group that chose the same first pair."""
    f = first.view(-1, group)  # [N, G]
    same = (f.unsqueeze(2) == f.unsqueeze(1)).float().sum(-1) - 1  # [N, G]
    return (1 - same / max(group - 1, 1)).view(-1)


def clipped_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    adv: torch.Tensor,
    entropy: torch.Tensor,
    active: torch.Tensor,
    *,
    clip: float,
    kl_coef: float,
    entropy_coef: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, policy-gradient term, KL term, entropy) over the active actions (1, else 0):
    PPO's clipped surrogate of the advantages, plus kl_coef times the k3 estimate of
    KL(π || π_ref), less entropy_coef times the entropy. Every tensor has the actions' shape
    (`adv` broadcast to it)."""
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
    log_ref_ratio = ref_logp - logp
    kl = torch.exp(log_ref_ratio) - log_ref_ratio - 1  # k3 estimator of KL(π || π_ref)
    denom = active.sum().clamp(min=1)
    pg_loss = -(surrogate * active).sum() / denom
    kl_loss = (kl * active).sum() / denom
    ent = (entropy * active).sum() / denom
    return pg_loss + kl_coef * kl_loss - entropy_coef * ent, pg_loss, kl_loss, ent


def evaluate_reward(net: PolicyNet, batch: EpisodeBatch, lams: tuple[float, ...], max_steps: int) -> float:
    """Mean greedy-episode reward over the items, averaged over a grid of λ."""
    rewards = []
    with torch.no_grad():
        for lam in lams:
            lam_t = torch.full((batch.task.shape[0],), lam)
            out = rollout(net, batch, lam_t, max_steps=max_steps, mode="greedy")
            rewards.append(episode_reward(batch, out, lam_t)[0].mean().item())
    return float(np.mean(rewards))


def train_rl(
    net: PolicyNet,
    batch: EpisodeBatch,
    config: RLConfig,
    *,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
    best: Best | None = None,
    every: int = 20,
) -> dict[str, float]:
    """Improve the policy on the recorded outcomes of `batch`; returns the last metrics.

    With `best` (pools held out of training, `learning.holdout`), the network is measured
    before the first update, every `every` updates and after the last, and ends with the
    weights of its best measurement (which may be the one it started from)."""
    # --- seeding ---
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()

    reference = copy.deepcopy(net).eval()
    params = [p for name, p in net.named_parameters() if not name.startswith(("rel_", "reliability"))]
    optim = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    lam_cfg = SFTConfig(lam_min=config.lam_min, lam_max=config.lam_max, lam_zero=config.lam_zero)
    n = batch.task.shape[0]
    metrics: dict[str, float] = {}
    violations_seen = 0
    if best is not None:
        best.reset()
        best.offer(RL_STEP)  # the weights RL starts from: kept when no update beats them
    for it in range(config.iterations):
        tasks = rng.choice(n, size=min(config.tasks_per_iteration, n), replace=False)
        lam_task = sample_lambdas(len(tasks), lam_cfg, rng)
        idx = torch.from_numpy(np.repeat(tasks, config.group))  # [N*G] task-major
        lam = torch.from_numpy(np.repeat(lam_task, config.group))
        episodes = batch.rows(idx)

        # --- rollout (no grad) ---
        with torch.no_grad():
            out = rollout(net, episodes, lam, max_steps=config.max_steps, mode="sample", generator=gen)
            reward, correct = episode_reward(episodes, out, lam)
            violated = violations(episodes, out)  # 0 while the masking holds
            violations_seen += int(violated.sum().item())
            bonus = diversity_bonus(out.actions[:, 0], config.group)
            total = reward - config.violation_penalty * violated
            adv = group_advantages(total, config.group, config.std_floor)  # [N*G]
            # The diversity bonus is added after normalizing: it breaks ties, it never dominates.
            group_mean = bonus.view(-1, config.group).mean(1).repeat_interleave(config.group)
            adv = adv + config.diversity_coef * (bonus - group_mean)
            old_logp = out.logp  # [N*G, steps]
            ref = rollout(reference, episodes, lam, max_steps=config.max_steps, mode="forced", forced=out.actions)
            ref_logp = ref.logp
            active = (out.actions >= 0).float()

        # --- clipped policy-gradient updates ---
        net.train()
        for _ in range(config.update_epochs):
            new = rollout(net, episodes, lam, max_steps=config.max_steps, mode="forced", forced=out.actions)
            steps = min(new.logp.shape[1], old_logp.shape[1])
            logp, act = new.logp[:, :steps], active[:, :steps]
            loss, pg_loss, kl_loss, entropy = clipped_loss(
                logp, old_logp[:, :steps], ref_logp[:, :steps], adv.unsqueeze(1), new.entropy[:, :steps], act,
                clip=config.clip, kl_coef=config.kl_coef, entropy_coef=config.entropy_coef,
            )  # fmt: skip
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
        net.eval()

        metrics = {
            "rl/reward": reward.mean().item(),
            "rl/correct": correct.mean().item(),
            "rl/calls": out.executed.float().sum(-1).mean().item(),
            "rl/violations": violations_seen,  # over every episode so far
            "rl/diversity": bonus.mean().item(),
            "loss/pg": pg_loss.item(),
            "loss/kl": kl_loss.item(),
            "loss/entropy": entropy.item(),
        }
        if best is not None and ((it + 1) % every == 0 or it + 1 == config.iterations):
            metrics["holdout/reward"] = best.offer(RL_STEP + it + 1)
        if progress:
            progress(it + 1, config.iterations, metrics)
    if best is not None:
        best.restore()
        metrics["holdout/rl_updates"], metrics["holdout/rl_reward"] = best.at - RL_STEP, best.score
    metrics["time/rl_s"] = time.perf_counter() - start
    return metrics
