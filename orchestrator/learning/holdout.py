"""Pools held out of training, so the policy picks its own training length on models it never saw.

Trained for a pool it will not see (a probe calibrates it), the policy's failure is the one
of over-fitting the pool it trains on: run longer on more items, it learns those models and
reads the probe less (docs/evaluation.md, "Without the training cap"). So, for each source of
the train table with enough models, a share of its models and of its items is held out: the
held-out models' outcomes on the held-out items are a small unseen pool, calibrated on a probe
of its items as a real one is, and training never sees them. After each epoch of the action
heads, and every few RL updates, the policy's greedy reward on those pools (the mean over a
grid of λ) is measured, and the network keeps the weights of its best measurement. With
`refit`, the policy is then trained again on everything for the epochs and updates chosen.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from orchestrator.configs import STRICT_KEYS, Count, Fraction
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.episode import EpisodeBatch
from orchestrator.learning.model import PolicyNet
from orchestrator.learning.rl import evaluate_reward
from orchestrator.routing.table import OutcomeTable, probe_split

LAMS = (0.0, 0.05, 0.2, 1.0)  # the λ grid of the held-out reward
MIN_MODELS = 3  # a source with fewer models holds none out (at least two stay to train on)


@dataclass(frozen=True)
class HoldoutConfig:
    """What is held out of an unseen-pool training, and how often it is measured."""

    __pydantic_config__ = STRICT_KEYS

    share: Fraction = 0.0  # of each source's models, and of its items held out (0: none; measured at 0.3)
    probe: Count = 50  # probe items calibrating each held-out pool
    max_items: Count = 1000  # held-out items measured per pool, at most
    rl_every: Count = 20  # RL updates between two measurements
    refit: bool = False  # then train again on every item and model, for the chosen epochs and updates


@dataclass
class Holdout:
    """The held-out pools as episodes, calibrated on their probes; `score` measures a network."""

    pools: list[EpisodeBatch]
    max_steps: int

    def score(self, net: PolicyNet) -> float:
        """Mean greedy reward over the pools and the λ grid (the network left in eval mode)."""
        net.eval()
        return float(np.mean([evaluate_reward(net, pool, LAMS, self.max_steps) for pool in self.pools]))


def hold_out(
    train: OutcomeTable,
    emb: np.ndarray,
    config: HoldoutConfig,
    *,
    seed: int,
    max_steps: int,
    prices: Any = None,
) -> tuple[OutcomeTable, np.ndarray, Holdout | None]:
    """(the table to train on, its embeddings, the held-out pools); the table itself and no
    pools where nothing can be held out."""
    if config.share <= 0:
        return train, emb, None
    rng = np.random.default_rng([seed, 11])
    available = train.available()
    sources = np.array(train.sources)
    models = np.array([model for model, _ in train.pairs])
    held_columns = np.zeros(train.n_pairs, dtype=bool)
    held_rows = np.zeros(train.n_items, dtype=bool)
    pools = []
    for source in sorted(set(train.sources)):
        rows = np.flatnonzero(sources == source)
        own = sorted(set(models[available[rows].any(axis=0)]))
        n_held = min(len(own) - 2, max(1, round(config.share * len(own))))
        n_rows = round(config.share * len(rows))
        if len(own) < MIN_MODELS or n_held < 1 or n_rows <= config.probe:
            continue
        unseen = np.isin(models, rng.choice(own, size=n_held, replace=False))
        picked = np.sort(rng.choice(rows, size=n_rows, replace=False))
        held_columns |= unseen
        held_rows[picked] = True
        pool = train.rows(picked).columns(np.flatnonzero(unseen))
        keep = np.flatnonzero(pool.available().any(axis=1))
        pools.append((pool.rows(keep), emb[picked][keep]))
    if not pools:
        return train, emb, None
    fit = train.rows(np.flatnonzero(~held_rows)).columns(np.flatnonzero(~held_columns))
    fit_rows = np.flatnonzero(~held_rows)
    keep = np.flatnonzero(fit.available().any(axis=1))
    batches = []
    for pool, pool_emb in pools:
        probe, rest = probe_split(pool, k=config.probe, seed=seed)  # the rest less the probe's texts
        row_of = {key: i for i, key in enumerate(pool.keys())}
        probe_keys, rest_keys = probe.keys(), rest.keys()  # (source, item id) lists
        context = make_context(probe, pool_emb[[row_of[key] for key in probe_keys]], prices)
        rest_emb = pool_emb[[row_of[key] for key in rest_keys]]
        if rest.n_items > config.max_items:
            chosen = np.sort(rng.choice(rest.n_items, size=config.max_items, replace=False))
            rest, rest_emb = rest.rows(chosen), rest_emb[chosen]
        batches.append(encode(rest, rest_emb, context, with_outcomes=True))
    return fit.rows(keep), emb[fit_rows][keep], Holdout(pools=batches, max_steps=max_steps)


class Best:
    """The weights of the best measurement so far: `offer` after each step, `restore` at the end."""

    def __init__(self, net: PolicyNet, holdout: Holdout) -> None:
        self.net, self.holdout = net, holdout
        self.score, self.at, self.state = -float("inf"), -1, copy.deepcopy(net.state_dict())
        self.scores: list[float] = []

    def offer(self, at: int) -> float:
        """Measure the network after step `at`; keep its weights when they are the best."""
        training = self.net.training
        score = self.holdout.score(self.net)
        self.net.train(training)
        self.scores.append(score)
        if score > self.score:
            self.score, self.at, self.state = score, at, copy.deepcopy(self.net.state_dict())
        return score

    def reset(self) -> None:
        """Forget the measurements: what comes next competes only with itself."""
        self.score, self.at = -float("inf"), -1

    def restore(self) -> None:
        with torch.no_grad():
            self.net.load_state_dict(self.state)
