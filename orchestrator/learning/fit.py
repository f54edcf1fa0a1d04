"""Training the learned policy on one pool's items: SFT then RL (`fit_policy`), and for an
unseen pool an ensemble of networks on shares of the items (`train_network`). `LearnedMethod`
fits with it, and `train_policy` writes what it trains as a checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orchestrator.learning.dataset import PoolContext, encode, make_context
from orchestrator.learning.ensemble import PolicyEnsemble, shares
from orchestrator.learning.episode import EpisodeBatch
from orchestrator.learning.holdout import Best, Holdout
from orchestrator.learning.model import PolicyNet
from orchestrator.learning.rl import evaluate_reward, train_rl
from orchestrator.learning.sft import ExtraTrajectories, extra_from_records, train_sft
from orchestrator.routing.table import OutcomeTable

if TYPE_CHECKING:
    from orchestrator.learning.method import LearnedConfig

Progress = Callable[[int, int, dict[str, float]], None]  # (done, total, metrics), as the trainers report
Guide = Callable[[EpisodeBatch], tuple[EpisodeBatch, dict[str, float]]]  # the episodes RL plays, and metrics


def train_network(
    train: OutcomeTable,
    emb: np.ndarray,
    config: LearnedConfig,
    *,
    seed: int,
    unseen: bool,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    extra_records: Sequence[Mapping[str, Any]] = (),
    holdout: Holdout | None = None,
    progress_sft: Progress | None = None,
    progress_rl: Progress | None = None,
    guide: Guide | None = None,
) -> tuple[Any, EpisodeBatch, PoolContext, dict[str, float]]:
    """The policy trained on `train` (whose rows `emb` embeds): (the network, the train items'
    episodes, their calibration, the metrics).

    `unseen`: for pools it will not see, which a small probe will calibrate. The per-item
    accuracy is then the plain kNN one, as on a probe, so the feature means the same; and from
    twice `config.unseen.min_items` items on, the policy is a `PolicyEnsemble` of networks, each
    trained on its own share of the items with that share's calibration (`learning.ensemble`).
    `guide(episodes)`: the episodes RL plays instead, and metrics (`reward.guided.guide_cells`).
    """
    torch.manual_seed(seed)
    context = make_context(train, emb, prices, predictor=not unseen)
    batch = encode(train, emb, context, with_outcomes=True, exclude_self=True)
    parts = shares(train.n_items, config.unseen.min_items if unseen else None, seed=seed)
    if guide is not None and len(parts) > 1:
        raise ValueError("a guide trains one network: it does not go with an unseen-pool ensemble")
    if len(parts) == 1:
        net = PolicyNet(config.policy)
        metrics = fit_policy(
            net, batch, config, seed=seed, extra=_extra(extra_records, train), progress_sft=progress_sft,
            progress_rl=progress_rl, holdout=holdout, guide=guide,
        )  # fmt: skip
        return net, batch, context, metrics
    members, metrics = [], {}
    for m, rows in enumerate(parts):
        share, share_emb = train.rows(rows), emb[rows]
        share_context = make_context(share, share_emb, prices, predictor=False)
        share_batch = encode(share, share_emb, share_context, with_outcomes=True, exclude_self=True)
        torch.manual_seed(seed + 1000 * m)
        net = PolicyNet(config.policy)
        found = fit_policy(
            net, share_batch, config, seed=seed + 1000 * m, extra=_extra(extra_records, share),
            progress_sft=_part(progress_sft, m, len(parts)), progress_rl=_part(progress_rl, m, len(parts)),
            holdout=holdout,
        )  # fmt: skip
        members.append(net)
        for key, value in found.items():  # times add up; the rest is the members' mean
            metrics[key] = metrics.get(key, 0.0) + (value if key.startswith("time/") else value / len(parts))
    metrics["unseen/members"] = float(len(parts))
    metrics["unseen/items_per_member"] = float(np.mean([len(rows) for rows in parts]))
    return PolicyEnsemble(members), batch, context, metrics


def _extra(records: Sequence[Mapping[str, Any]], table: OutcomeTable) -> ExtraTrajectories | None:
    """The live trajectories whose items are in `table`, as SFT targets."""
    return extra_from_records(list(records), table.item_ids, table.pairs) if records else None


def _part(progress: Progress | None, m: int, count: int) -> Progress | None:
    """Member m's progress as its part of all `count` members' (done and total scaled)."""
    if progress is None:
        return None

    def update(done: int, total: int, metrics: dict[str, float]) -> None:
        progress(m * total + done, count * total, metrics)

    return update


def fit_policy(
    net: PolicyNet,
    batch: EpisodeBatch,
    config: LearnedConfig,
    *,
    seed: int,
    extra: ExtraTrajectories | None = None,
    progress_sft: Any = None,
    progress_rl: Any = None,
    holdout: Holdout | None = None,
    guide: Guide | None = None,
) -> dict[str, float]:
    """SFT then RL on one pool's episodes; metrics include the greedy reward before and after.

    With `holdout`, each stage ends with its weights that did best on the held-out pools; with
    `guide`, RL plays the episodes it returns (cells without a recording scored by a reward model)."""
    start = time.perf_counter()
    lams = (0.0, 0.1, 0.5, 1.0)
    best = Best(net, holdout) if holdout is not None else None
    metrics = {"eval/reward_untrained": evaluate_reward(net, batch, lams, config.sft.max_steps)}
    sft = replace(config.sft, seed=seed)
    metrics |= train_sft(net, batch, sft, extra=extra, progress=progress_sft, best=best)
    metrics["eval/reward_sft"] = evaluate_reward(net, batch, lams, config.sft.max_steps)
    if config.rl.iterations > 0:
        rl = replace(config.rl, seed=seed)
        played = batch
        if guide is not None:
            played, found = guide(batch)
            metrics |= found
        metrics |= train_rl(net, played, rl, progress=progress_rl, best=best, every=config.holdout.rl_every)
    metrics["eval/reward_rl"] = evaluate_reward(net, batch, lams, config.sft.max_steps)
    metrics["time/fit_s"] = time.perf_counter() - start
    return metrics
