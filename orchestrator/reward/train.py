"""The OrchRM trainer: Bradley-Terry on preference pairs, one readable loop (TRL's reward trainer, CleanRL's layout).

loss = -logsigmoid(r(task, winner, λ) - r(task, loser, λ) - margin)

The reward is conditioned on the cost preference λ (the policy's units: cost is divided
by the pool's most expensive pair). A pair holds only for some λ: a right answer beats a
wrong one while 1 - λ·c_win > -λ·c_lose, a cheaper right answer beats a dearer one for
any λ > 0. Each pair carries that range.

The separable model (the default, `RewardConfig.separable`) is r = s(task, plan) - β·λ·cost
and trains in two stages:
1. s on the accuracy pairs (every source but cheaper_correct) at λ = 0;
2. β alone, s fixed, on every pair with λ drawn from the pair's range: correct-but-dearer
   winners bound it from above, cheaper-correct winners from below.
Trained jointly, the cheaper-correct pairs taught s that cheap plans are right, and the
held-out correct-over-incorrect accuracy fell by 1-3 points (`bench/ceilings.py` gives the
ceiling it is measured against). The joint model (separable False) draws λ from each
pair's range at every step instead.

Shapes: M pairs, T task features, D plan features.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from orchestrator.configs import STRICT_KEYS, Count, NonNegative, NonNegativeInt, Positive, Seed
from orchestrator.reward.features import plan_cost
from orchestrator.reward.model import RewardNet
from orchestrator.reward.pairs import TablePairs

HoldOut = Annotated[float, Field(ge=0, lt=1)]


@dataclass(frozen=True)
class RMTrainConfig:
    """Bradley-Terry training."""

    __pydantic_config__ = STRICT_KEYS

    epochs: NonNegativeInt = 2  # passes over the pairs (few: more memorizes the training tasks)
    batch_size: Count = 256  # pairs per step
    lr: Positive = 1e-3  # Adam learning rate
    weight_decay: NonNegative = 0.1  # AdamW decay (strong, for the same reason)
    cost_steps: NonNegativeInt = 200  # separable model: full-batch steps fitting β once the accuracy score is fixed
    margin: NonNegative = 0.0  # required reward gap (the optional margin of the BT loss)
    human_weight: NonNegative = 1.0  # a human-labelled pair's weight in the loss (source "human"; the others 1)
    human_holdout: HoldOut = 0.2  # share of the human pairs kept out of training to measure agreement (0: none)
    seed: Seed = 0  # torch and shuffling seed
    threads: Count = 2  # torch CPU threads


LAM_MAX = 1.0  # the largest cost preference trained on
HUMAN = "human"  # the source of pairs people labelled
LAM_MIN_COST = 0.2  # a pair that needs λ > 0 (cheaper_correct) is trained from here up


@dataclass
class PairTensors:
    """Pairs as tensors: each row a task and two plan feature vectors, the first preferred."""

    task: torch.Tensor  # [M, T]
    win: torch.Tensor  # [M, D]
    lose: torch.Tensor  # [M, D]
    source: np.ndarray  # [M] str
    group: np.ndarray  # [M] int64 task id (pairs of one task share it)
    lam_lo: torch.Tensor  # [M] the pair holds for λ in [lam_lo, lam_hi]
    lam_hi: torch.Tensor  # [M]

    def __len__(self) -> int:
        return int(self.task.shape[0])

    def take(self, index: np.ndarray) -> PairTensors:
        idx = torch.from_numpy(np.asarray(index, dtype=np.int64))
        return PairTensors(
            self.task[idx],
            self.win[idx],
            self.lose[idx],
            self.source[index],
            self.group[index],
            self.lam_lo[idx],
            self.lam_hi[idx],
        )

    @classmethod
    def concat(cls, parts: list[PairTensors]) -> PairTensors:
        return cls(
            torch.cat([p.task for p in parts]),
            torch.cat([p.win for p in parts]),
            torch.cat([p.lose for p in parts]),
            np.concatenate([p.source for p in parts]),
            np.concatenate([p.group for p in parts]),
            torch.cat([p.lam_lo for p in parts]),
            torch.cat([p.lam_hi for p in parts]),
        )


def lam_range(source: np.ndarray, cost_win: np.ndarray, cost_lose: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """([M], [M]): the λ range in which each pair's preference holds (costs / cost_ref)."""
    cheaper = source == "cheaper_correct"
    dearer_by = np.maximum(np.nan_to_num(cost_win - cost_lose), 1e-6)
    hi = np.where(cheaper, LAM_MAX, np.minimum(LAM_MAX, 1.0 / dearer_by))
    lo = np.where(cheaper, LAM_MIN_COST, 0.0)
    return torch.from_numpy(lo.astype(np.float32)), torch.from_numpy(hi.astype(np.float32))


def table_tensors(
    pairs: TablePairs, task: np.ndarray, plans: np.ndarray, cost: np.ndarray, *, group_offset: int = 0
) -> PairTensors:
    """Pairs over a table: task [n, T], one-node plan features [n, p, D] and recorded cost / cost_ref [n, p]."""
    lo, hi = lam_range(pairs.source, cost[pairs.item, pairs.win], cost[pairs.item, pairs.lose])
    return PairTensors(
        task=torch.from_numpy(task[pairs.item]),
        win=torch.from_numpy(plans[pairs.item, pairs.win]),
        lose=torch.from_numpy(plans[pairs.item, pairs.lose]),
        source=pairs.source.astype(str),
        group=pairs.item.astype(np.int64) + group_offset,
        lam_lo=lo,
        lam_hi=hi,
    )


def bt_loss(
    r_win: torch.Tensor, r_lose: torch.Tensor, margin: float = 0.0, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """The Bradley-Terry loss, mean over the batch (each pair's term times its `weight`)."""
    loss = -F.logsigmoid(r_win - r_lose - margin)
    return (loss * weight).mean() if weight is not None else loss.mean()


def rewards(
    net: RewardNet, data: PairTensors, *, lam: float | None = None, batch: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """(r_win [M], r_lose [M]) in eval mode, at `lam` (default: each pair's lowest valid λ)."""
    net.eval()
    wins, loses = [], []
    lams = data.lam_lo if lam is None else torch.full((len(data),), float(lam))
    with torch.no_grad():
        for s in range(0, len(data), batch):
            wins.append(net(data.task[s : s + batch], data.win[s : s + batch], lams[s : s + batch]))
            loses.append(net(data.task[s : s + batch], data.lose[s : s + batch], lams[s : s + batch]))
    if not wins:
        return torch.zeros(0), torch.zeros(0)
    return torch.cat(wins), torch.cat(loses)


def pair_metrics(net: RewardNet, data: PairTensors, prefix: str = "eval") -> dict[str, float]:
    """Accuracy (ties count half), mean margin and reward statistics, overall and per source.

    Each pair is judged at the lowest λ at which it holds: λ = 0 (accuracy only) for all
    but cheaper_correct pairs, which are judged at LAM_MIN_COST.
    """
    r_win, r_lose = rewards(net, data)
    gap = (r_win - r_lose).numpy()
    hit = (gap > 0) + 0.5 * (gap == 0)
    out = {f"{prefix}/accuracy": float(hit.mean()) if len(gap) else float("nan"), f"{prefix}/pairs": float(len(gap))}
    if len(gap):
        both = torch.cat([r_win, r_lose])
        out |= {
            f"{prefix}/margin": float(gap.mean()),
            f"{prefix}/reward_mean": float(both.mean()),
            f"{prefix}/reward_std": float(both.std()),
        }
    for source in sorted(set(data.source.tolist())):
        rows = data.source == source
        out[f"{prefix}/accuracy/{source}"] = float(hit[rows].mean())
        out[f"{prefix}/pairs/{source}"] = float(rows.sum())
    return out


def train_reward(
    net: RewardNet,
    data: PairTensors,
    config: RMTrainConfig,
    *,
    valid: PairTensors | None = None,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """Train `net` in place; returns the final metrics (train and, with `valid`, held-out)."""
    # seeding
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    gen = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    full = data
    if net.config.separable:  # stage 1: the accuracy score, on the accuracy pairs at λ = 0
        data = data.take(np.flatnonzero(data.source != "cheaper_correct"))
    weight = torch.from_numpy(np.where(data.source == HUMAN, config.human_weight, 1.0).astype(np.float32))
    params = [p for name, p in net.named_parameters() if name != "cost_scale"]
    optim = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    m = len(data)
    steps_per_epoch = max(1, -(-m // config.batch_size))
    total = config.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(optim, max_lr=config.lr, total_steps=max(total, 1))
    history: dict[str, float] = {}
    for epoch in range(config.epochs):
        net.train()
        order = torch.randperm(m, generator=gen)
        losses, hits = [], []
        for s in range(0, m, config.batch_size):
            idx = order[s : s + config.batch_size]
            u = torch.rand(len(idx), generator=gen)
            lam = data.lam_lo[idx] + u * (data.lam_hi[idx] - data.lam_lo[idx])  # [b] drawn where the pair holds
            if net.config.separable:
                lam = torch.zeros_like(lam)
            r_win = net(data.task[idx], data.win[idx], lam)  # [b]
            r_lose = net(data.task[idx], data.lose[idx], lam)  # [b]
            loss = bt_loss(r_win, r_lose, config.margin, weight[idx])
            optim.zero_grad()
            loss.backward()
            optim.step()
            sched.step()
            losses.append(float(loss.detach()))
            hits.append(float((r_win > r_lose).float().mean()))
        # fit/accuracy: the epoch's batches ranked right while fitted (the pairs fitted on, at the λ
        # drawn); train/accuracy, at the end, is every training pair judged once (pair_metrics).
        history = {"loss/bt": float(np.mean(losses)) if losses else 0.0, "fit/accuracy": float(np.mean(hits or [0]))}
        if valid is not None and len(valid):
            history |= pair_metrics(net, valid, "valid")
        if progress is not None:
            progress(epoch + 1, config.epochs, history)
    if net.config.separable:
        history["cost/beta"] = fit_cost_weight(net, full, config, gen)
    metrics = {**history, **pair_metrics(net, full, "train"), "time/train_s": time.perf_counter() - start}
    net.eval()
    return metrics


def fit_cost_weight(net: RewardNet, data: PairTensors, config: RMTrainConfig, gen: torch.Generator) -> float:
    """Stage 2 of the separable model: β on every pair, the accuracy score fixed; returns β."""
    net.eval()
    with torch.no_grad():
        gap, cost_gap = [], []  # s_win - s_lose, and (cost_win - cost_lose) per pair
        for s in range(0, len(data), 4096):
            rows = slice(s, s + 4096)
            gap.append(net.accuracy(data.task[rows], data.win[rows]) - net.accuracy(data.task[rows], data.lose[rows]))
            cost_gap.append(plan_cost(data.win[rows]) - plan_cost(data.lose[rows]))
    if not gap:
        return float(net.cost_weight().detach())
    s_gap, c_gap = torch.cat(gap), torch.cat(cost_gap)
    lam = data.lam_lo + torch.rand(len(data), generator=gen) * (data.lam_hi - data.lam_lo)  # [M] one draw per pair
    optim = torch.optim.Adam([net.cost_scale], lr=0.05)
    for _ in range(config.cost_steps):
        loss = bt_loss(s_gap - net.cost_weight() * lam * c_gap, torch.zeros(()), config.margin)
        optim.zero_grad()
        loss.backward()
        optim.step()
    return float(net.cost_weight().detach())
