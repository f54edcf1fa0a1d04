"""Reward-guided policy training: OrchRM's score stands in for an execution outcome.

Only the *grounded* items have been executed (their recorded outcomes may be read). The
policy is fitted by SFT on them; RL then plays episodes on every item. On a grounded item
an episode is scored on its recorded outcome, as usual. On any other item it is scored
on OrchRM's estimate that the final pair's answer is right, less λ times the *estimated*
cost. No response or outcome of such an item is read: its episode state sees no answers.

OrchRM's reward (at λ = 0) becomes a probability by Platt scaling fitted on the grounded
items' recorded scores. The executed tokens are those of the grounded items' recordings:
every pair was run once on each to fill the table that SFT and RL read.

`guide_cells` is the same idea for `train_policy --guide CKPT`: a stored OrchRM scores the cells
of the training tables that hold no recording, and RL plays them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import torch

from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.episode import EpisodeBatch
from orchestrator.learning.features import task_features
from orchestrator.learning.method import LearnedConfig, LearnedMethod
from orchestrator.learning.model import PolicyNet
from orchestrator.learning.rl import train_rl
from orchestrator.learning.sft import train_sft
from orchestrator.reward.features import table_plan_features
from orchestrator.reward.model import RewardModel, RewardNet
from orchestrator.reward.plans import Plan
from orchestrator.reward.platt import platt, rm_rewards
from orchestrator.reward.prior import table_prior
from orchestrator.reward.train import train_reward
from orchestrator.routing.table import OutcomeTable
from orchestrator.train_rm import RMConfig, table_pair_data

GUIDE_SOURCES = ("correct_over_incorrect", "node_level")  # pairs the guiding OrchRM learns from


def estimated_batch(free: EpisodeBatch, probability: np.ndarray) -> EpisodeBatch:
    """`free` (encoded without outcomes) scored by estimates: score = probability [n, p], cost = cost_est."""
    return EpisodeBatch(
        task=free.task,
        pairs=free.pairs,
        available=free.available,
        cost_est=free.cost_est,
        answers=free.answers,
        surface=free.surface,
        score=torch.from_numpy(probability.astype(np.float32)),
        cost=free.cost_est.clone(),
    )


def concat_batches(a: EpisodeBatch, b: EpisodeBatch) -> EpisodeBatch:
    """Rows of `a` then rows of `b` (both with outcomes attached)."""
    assert a.score is not None and b.score is not None and a.cost is not None and b.cost is not None
    return EpisodeBatch(
        task=torch.cat([a.task, b.task]),
        pairs=torch.cat([a.pairs, b.pairs]),
        available=torch.cat([a.available, b.available]),
        cost_est=torch.cat([a.cost_est, b.cost_est]),
        answers=torch.cat([a.answers, b.answers]),
        surface=torch.cat([a.surface, b.surface]),
        score=torch.cat([a.score, b.score]),
        cost=torch.cat([a.cost, b.cost]),
    )


def executed_tokens(table: OutcomeTable) -> float:
    """LLM tokens of every recorded call of `table`: what executing it cost."""
    available = table.available()
    return float(np.where(available, table.tokens_in + table.tokens_out, 0.0).sum())


def fit_grounded(
    train: OutcomeTable,
    emb: np.ndarray,
    grounded: np.ndarray,
    *,
    guided: bool,
    config: LearnedConfig,
    seed: int,
    prices: Mapping[str, Mapping[str, float]] | None,
) -> LearnedMethod:
    """A LearnedMethod fitted on the `grounded` rows of `train` only; with `guided`, RL also
    plays every other row, rewarded by an OrchRM trained on the grounded rows' pairs.

    The pool's calibration comes from the grounded rows; `emb` [n, e] embeds `train`.
    """
    torch.manual_seed(seed)
    rest = np.setdiff1d(np.arange(train.n_items), grounded)
    known, free = train.rows(grounded), train.rows(rest)
    emb_known, emb_free = emb[grounded], emb[rest]
    context = make_context(known, emb_known, prices)
    batch = encode(known, emb_known, context, with_outcomes=True, exclude_self=True)
    net = PolicyNet(config.policy)
    train_sft(net, batch, replace(config.sft, seed=seed))
    if guided and free.n_items:
        # The stand-in outcome is a probability of a right answer, and cost enters the reward
        # apart (λ · estimated cost): the guide learns from correctness pairs only. Trained
        # with cheaper-correct pairs as well, it leaned to cheap pairs even at λ = 0, and the
        # policy followed it (bench/reward_guided.py, first run: 0.568 vs 0.614 at f = 0.1).
        rm_config = RMConfig.from_mapping({"pairs": {"sources": GUIDE_SOURCES}})
        rm = RewardNet(rm_config.model)
        prior = table_prior(known, emb_known, seed=seed) if rm_config.model.accuracy_prior else None
        train_reward(
            rm,
            table_pair_data(known, emb_known, context, rm_config.pairs, seed=seed, prior=prior),
            replace(rm_config.train, seed=seed),
        )
        a, b = platt(
            rm_rewards(
                rm,
                task_features(emb_known, known.domains),
                table_plan_features(context, emb_known, known.domains, exclude_self=True, prior=prior),
            ),
            np.where(known.available(), known.score, np.nan),
        )
        reward = rm_rewards(
            rm, task_features(emb_free, free.domains), table_plan_features(context, emb_free, free.domains, prior=prior)
        )
        free_batch = encode(free, emb_free, context, with_outcomes=False)
        batch = concat_batches(batch, estimated_batch(free_batch, 1 / (1 + np.exp(-(a * reward + b)))))
    if config.rl.iterations:
        train_rl(net, batch, replace(config.rl, seed=seed))
    method = LearnedMethod(config.to_dict())
    method.net, method.context = net, context
    return method


def guide_cells(
    batch: EpisodeBatch, table: OutcomeTable, emb: np.ndarray, guide: RewardModel
) -> tuple[EpisodeBatch, dict[str, float]]:
    """`batch` (the train items' episodes, with outcomes) with every cell the tables did not
    record made playable for RL, scored by the stored OrchRM `guide` (`train_policy --guide`).

    The guide's reward at λ = 0 of each one-node plan becomes a probability of a right answer by
    Platt scaling on the recorded cells; an unrecorded cell's outcome is that probability at the
    pair's estimated cost. Its episode sees no answer (none was recorded), as on an item without
    outcomes. Recorded cells keep their outcomes. A pair the guide's pool never saw gets its
    static features and that pool's means (`reward.features.plan_features`).
    """
    assert batch.score is not None and batch.cost is not None, "the train items' episodes carry their outcomes"
    n, p = table.n_items, table.n_pairs
    plans = [Plan.single(model, primitive) for _ in range(n) for model, primitive in table.pairs]
    reward = guide.score(np.repeat(emb, p, axis=0), [d for d in table.domains for _ in range(p)], plans).reshape(n, p)
    recorded = table.available()
    a, b = platt(reward, np.where(recorded, table.score, np.nan))
    probability = torch.from_numpy((1 / (1 + np.exp(-(a * reward + b)))).astype(np.float32))
    known = torch.from_numpy(recorded)
    guided = EpisodeBatch(
        task=batch.task,
        pairs=batch.pairs,
        available=torch.ones_like(batch.available),
        cost_est=batch.cost_est,
        answers=batch.answers,
        surface=batch.surface,
        score=torch.where(known, batch.score, probability),
        cost=torch.where(known, batch.cost, batch.cost_est),
    )
    unrecorded = ~recorded
    metrics = {
        "guide/cells": float(unrecorded.sum()),
        "guide/share": float(unrecorded.mean()) if unrecorded.size else 0.0,
        "guide/platt_a": a,
        "guide/platt_b": b,
        "guide/mean_probability": float(probability.numpy()[unrecorded].mean()) if unrecorded.any() else float("nan"),
    }
    return guided, metrics
