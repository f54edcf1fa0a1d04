"""Supervised fine-tuning on trajectories curated from recorded outcomes.

Three kinds of targets, each built per item at a sampled cost preference λ (cost in units
of the pool's most expensive pair):

- **direct**: the pair maximising score - λ·cost over the recorded outcomes (ties go to
  the cheaper pair; at λ = 0 the cheapest correct pair), then finish;
- **recovery** (ParaManager): a first pair the prior would pick that was recorded wrong,
  then a repair to the pair maximising score - λ·cost among the rest (when that pays,
  i.e. score - λ·cost > 0), then finish. The first step is given, not a target; the
  finish after it is a target of 0 (repair) exactly where the first answer was wrong
  and a repair pays;
- **extra trajectories** recorded live (the studio's runs): the pairs they called, in
  order, when their final answer was verified right.

The reliability head, which judges an executed response, is fit first with a
binary cross-entropy on random subsets of executed pairs (every (item, pair) outcome is
recorded). The decompose head gets only negative targets: the shipped tables hold no
composite runs, so nothing shows that decomposing a single recorded item pays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orchestrator.configs import STRICT_KEYS, Count, Fraction, NonNegative, NonNegativeInt, Positive, Seed, check_order
from orchestrator.learning.episode import ITEM_ACC, EpisodeBatch, response_features, rollout
from orchestrator.learning.model import PolicyNet

if TYPE_CHECKING:
    from orchestrator.learning.holdout import Best


@dataclass(frozen=True)
class SFTConfig:
    """Supervised stage: reliability head, then teacher-forced trajectories."""

    __pydantic_config__ = STRICT_KEYS

    reliability_epochs: NonNegativeInt = 12  # passes over the items for the reliability head
    epochs: NonNegativeInt = 12  # passes over the items for the action heads
    batch_size: Count = 256  # items per gradient step
    lr: Positive = 2e-3  # AdamW learning rate
    weight_decay: NonNegative = 1e-4  # AdamW weight decay
    max_steps: Count = 3  # pair calls per episode at most
    lam_max: Positive = 2.0  # λ is drawn log-uniform in [lam_min, lam_max], or 0
    lam_min: Positive = 0.005  # smallest non-zero λ
    lam_zero: Fraction = 0.15  # probability of λ = 0 (accuracy only)
    target_tolerance: NonNegative = 0.05  # a pair within this much utility of the item's best is a target
    recovery_temperature: Positive = 0.05  # softness of the prior pick that recovery starts from
    decompose_weight: NonNegative = 0.1  # weight of the (negative-only) decompose loss
    extra_weight: NonNegative = 1.0  # weight of live-recorded trajectories
    seed: Seed = 0  # seeds λ draws, subsets and batches

    def __post_init__(self) -> None:
        check_order(self, "lam_min", "lam_max")


@dataclass
class ExtraTrajectories:
    """Live trajectories mapped onto a table's items: pair columns called in order, per item row."""

    rows: list[int] = field(default_factory=list)
    calls: list[list[int]] = field(default_factory=list)
    lams: list[float] = field(default_factory=list)


def extra_from_records(
    records: Sequence[Mapping[str, Any]], item_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> ExtraTrajectories:
    """Keep live runs whose final answer was verified right and whose item and pairs the table knows.

    A record: {"item_id", "calls": [[model, primitive], ...], "score": final score in [0, 1],
    "cost_preference": λ (optional)}.
    """
    row_of = {item: i for i, item in enumerate(item_ids)}
    col_of = {pair: j for j, pair in enumerate(pairs)}
    out = ExtraTrajectories()
    for record in records:
        row = row_of.get(str(record.get("item_id")))
        calls = [col_of.get((str(m), str(p))) for m, p in record.get("calls", [])]
        if row is None or not calls or any(c is None for c in calls) or float(record.get("score", 0)) < 0.5:
            continue
        out.rows.append(row)
        out.calls.append([int(c) for c in calls if c is not None])
        out.lams.append(float(record.get("cost_preference") or 0.0))
    return out


def sample_lambdas(n: int, config: SFTConfig, rng: np.random.Generator) -> np.ndarray:
    """[n] λ: 0 with probability lam_zero, else log-uniform in [lam_min, lam_max]."""
    lam = np.exp(rng.uniform(math.log(config.lam_min), math.log(config.lam_max), size=n))
    return np.where(rng.random(n) < config.lam_zero, 0.0, lam).astype(np.float32)


def curate(batch: EpisodeBatch, lam: np.ndarray, config: SFTConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Direct, recovery and check trajectories for every item: rows, actions taken, target sets, a loss mask.

    A target is a set: every pair within `target_tolerance` of the best score - λ·cost on
    the item (at λ = 0: every correct pair), trained by the likelihood of the set. The
    cheapest pair of the set is the one taken, so the episode can go on.
    """
    assert batch.score is not None and batch.cost is not None
    score, cost = batch.score.numpy(), batch.cost.numpy()
    avail = batch.available.numpy()
    b, p = score.shape
    finish, width, rows = p, config.max_steps + 1, np.arange(b)
    utility = np.where(avail, score - lam[:, None] * cost, -np.inf)  # [B, P]

    def best_set(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        good = u >= u.max(1, keepdims=True) - config.target_tolerance  # [B, P]
        taken = np.where(good, cost, np.inf).argmin(1)  # the cheapest good pair
        return good, taken

    kinds = 3
    actions = np.full((kinds, b, width), -1, dtype=np.int64)
    sets = np.zeros((kinds, b, width, p + 1), dtype=bool)
    mask = np.zeros((kinds, b, width), dtype=np.float32)

    # direct: a best pair, then finish
    good, taken = best_set(utility)
    actions[0, :, 0], actions[0, :, 1] = taken, finish
    sets[0, :, 0, :p], sets[0, :, 1, finish] = good, True
    mask[0, :, :2] = 1.0

    # recovery: the prior's pick (calibration estimates only); repair where it was wrong and a repair pays
    prior = batch.pairs[..., ITEM_ACC].numpy()  # the kNN calibration accuracy
    prior_u = np.where(avail, prior - lam[:, None] * batch.cost_est.numpy(), -np.inf) / config.recovery_temperature
    first = _sample(prior_u, rng)
    wrong = score[rows, first] < 0.5
    rest = utility.copy()
    rest[rows, first] = -np.inf
    pays = wrong & (rest.max(1) > 0)
    good, taken = best_set(rest)
    actions[1, :, 0] = first
    actions[1, :, 1] = np.where(pays, taken, finish)
    actions[1, :, 2] = np.where(pays, finish, -1)
    sets[1, :, 1, :p] = good & pays[:, None]
    sets[1, :, 1, finish] = ~pays
    sets[1, :, 2, finish] = pays
    mask[1, :, 1] = 1.0  # the first step is given; the decision after it is the target
    mask[1, :, 2] = pays

    # check: the prior's two picks (given), then finish when both were right, else repair where it pays
    prior_u[rows, first] = -np.inf
    two = avail.sum(1) >= 2  # items with a second pair to call
    second = np.where(two, _sample(np.where(two[:, None], prior_u, 0.0), rng), first)
    if p > 1 and config.max_steps >= 3:
        both = (score[rows, first] >= 0.5) & (score[rows, second] >= 0.5)
        rest[rows, second] = -np.inf
        pays = ~both & (rest.max(1) > 0)
        good, taken = best_set(rest)
        actions[2, :, 0], actions[2, :, 1] = first, second
        actions[2, :, 2] = np.where(pays, taken, finish)
        actions[2, :, 3] = np.where(pays, finish, -1)
        sets[2, :, 2, :p] = good & pays[:, None]
        sets[2, :, 2, finish] = ~pays
        sets[2, :, 3, finish] = pays
        mask[2, :, 2] = 1.0
        mask[2, :, 3] = pays
        # An item with one pair has no check trajectory: call it, finish, no loss.
        actions[2, ~two] = -1
        actions[2, ~two, 0], actions[2, ~two, 1] = first[~two], finish
        sets[2, ~two] = False
        mask[2, ~two] = 0.0
    else:
        kinds = 2
    return {
        "rows": np.tile(rows, kinds),
        "actions": actions[:kinds].reshape(kinds * b, width),
        "sets": sets[:kinds].reshape(kinds * b, width, p + 1),
        "mask": mask[:kinds].reshape(kinds * b, width),
        "lam": np.tile(lam, kinds),
    }


def _sample(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """[B] one draw per row from softmax(logits [B, P]) (-inf = excluded)."""
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    draws: np.ndarray = (probs.cumsum(1) > rng.random((logits.shape[0], 1))).argmax(1)
    return draws


def reliability_loss(net: PolicyNet, batch: EpisodeBatch, rng: np.random.Generator, max_calls: int) -> torch.Tensor:
    """BCE of the reliability head on a random subset of 1..max_calls executed pairs per item."""
    assert batch.score is not None
    avail = batch.available.numpy()
    b, p = avail.shape
    keys = np.where(avail, rng.random((b, p)), np.inf)
    k = rng.integers(1, max_calls + 1, size=b)
    ranks = keys.argsort(1).argsort(1)
    executed = torch.from_numpy((ranks < k[:, None]) & avail)
    logits = net.reliability_logits(batch.task, batch.pairs, response_features(batch, executed))
    target = batch.score.clamp(0, 1)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return (loss * executed.float()).sum() / executed.float().sum().clamp(min=1)


def train_sft(
    net: PolicyNet,
    batch: EpisodeBatch,
    config: SFTConfig,
    *,
    extra: ExtraTrajectories | None = None,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
    best: Best | None = None,
) -> dict[str, float]:
    """Fit the reliability head, then the action heads on curated trajectories; returns metrics.

    With `best` (pools held out of training, `learning.holdout`), the network is measured after
    each epoch of the action heads and ends with the weights of its best epoch."""
    # --- seeding ---
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    start = time.perf_counter()
    n = batch.task.shape[0]
    metrics: dict[str, float] = {}
    total = config.reliability_epochs + config.epochs

    # --- reliability head ---
    rel_params = list(net.rel_task_proj.parameters()) + list(net.reliability_head.parameters())
    optim = torch.optim.AdamW(rel_params, lr=config.lr, weight_decay=config.weight_decay)
    net.train()
    for epoch in range(config.reliability_epochs):
        losses = []
        for idx in np.array_split(rng.permutation(n), max(1, n // config.batch_size)):
            loss = reliability_loss(net, batch.rows(torch.from_numpy(idx)), rng, config.max_steps)
            optim.zero_grad()
            loss.backward()
            optim.step()
            losses.append(loss.item())
        metrics["loss/reliability"] = float(np.mean(losses))
        if progress:
            progress(epoch + 1, total, metrics)

    # --- action heads, teacher-forced ---
    policy_params = [p for name, p in net.named_parameters() if not name.startswith(("rel_", "reliability"))]
    optim = torch.optim.AdamW(policy_params, lr=config.lr, weight_decay=config.weight_decay)
    for epoch in range(config.epochs):
        lam_all = sample_lambdas(n, config, rng)
        targets = curate(batch, lam_all, config, rng)
        rows, actions, mask, lam = targets["rows"], targets["actions"], targets["mask"], targets["lam"]
        sets = targets["sets"]
        weights = np.ones(len(rows), dtype=np.float32)
        if extra is not None and extra.rows:
            ex_actions = np.full((len(extra.rows), config.max_steps + 1), -1, dtype=np.int64)
            ex_mask = np.zeros_like(ex_actions, dtype=np.float32)
            for r, calls in enumerate(extra.calls):
                calls = calls[: config.max_steps]
                ex_actions[r, : len(calls)] = calls
                ex_actions[r, len(calls)] = batch.available.shape[1]
                ex_mask[r, : len(calls) + 1] = 1.0
            ex_sets = np.zeros((*ex_actions.shape, sets.shape[2]), dtype=bool)
            np.put_along_axis(ex_sets, np.maximum(ex_actions, 0)[..., None], True, axis=2)
            sets = np.concatenate([sets, ex_sets])
            rows = np.concatenate([rows, np.asarray(extra.rows)])
            actions, mask = np.concatenate([actions, ex_actions]), np.concatenate([mask, ex_mask])
            lam = np.concatenate([lam, np.asarray(extra.lams, dtype=np.float32)])
            weights = np.concatenate([weights, np.full(len(extra.rows), config.extra_weight, dtype=np.float32)])
        losses, dec_losses = [], []
        order = rng.permutation(len(rows))
        for idx in np.array_split(order, max(1, len(order) // config.batch_size)):
            sub = batch.rows(torch.from_numpy(rows[idx]))
            lam_t = torch.from_numpy(lam[idx])
            out = rollout(
                net,
                sub,
                lam_t,
                max_steps=config.max_steps,
                mode="forced",
                forced=torch.from_numpy(actions[idx]),
                targets=torch.from_numpy(sets[idx]),
            )
            m = torch.from_numpy(mask[idx])[:, : out.logp.shape[1]] * torch.from_numpy(weights[idx]).unsqueeze(1)
            # Steps outside the mask may score an action that is not allowed there (-inf): keep them out.
            nll = -(torch.where(m > 0, out.logp, 0.0) * m).sum() / m.sum().clamp(min=1)
            dec_logit = net.decompose_logit(net.encode_task(sub.task), lam_t)
            dec = torch.nn.functional.binary_cross_entropy_with_logits(dec_logit, torch.zeros_like(dec_logit))
            loss = nll + config.decompose_weight * dec
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy_params, 1.0)
            optim.step()
            losses.append(nll.item())
            dec_losses.append(dec.item())
        metrics["loss/sft"] = float(np.mean(losses))
        metrics["loss/decompose"] = float(np.mean(dec_losses))
        if best is not None:
            metrics["holdout/reward"] = best.offer(epoch + 1)
        if progress:
            progress(config.reliability_epochs + epoch + 1, total, metrics)
    if best is not None and best.at >= 0:
        best.restore()
        metrics["holdout/sft_epochs"], metrics["holdout/sft_reward"] = best.at, best.score
    net.eval()
    metrics["time/sft_s"] = time.perf_counter() - start
    return metrics
