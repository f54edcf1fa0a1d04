"""The candidate plans of `evaluate_rm_composite`: the fitted policy's plans (greedy, or N
sampled), what OrchRM and each leaf score make of them before they run (`Judge`), and the
budget share at which the picks execute within a reference's cost (`budget_scale`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from orchestrator.composite.build import Composite
from orchestrator.composite.learned import LearnedComposite, nodes_of
from orchestrator.composite.outcome import CompositeCosting, Plan
from orchestrator.composite.rm import LeafEstimates, node_scores, plan_features, sampled_plan
from orchestrator.evaluate_rm import sample_candidates
from orchestrator.learning.decompose import encoded
from orchestrator.learning.episode import EpisodeBatch, rollout
from orchestrator.learning.features import domain_indices
from orchestrator.reward.bestofn import prompt_cost_estimate, select_matched
from orchestrator.reward.model import RewardNet
from orchestrator.routing.table import OutcomeTable


class Sampler:
    """The fitted policy's plans for some composites at λ: greedy, or N sampled."""

    def __init__(self, learned: LearnedComposite, composites: Sequence[Composite], batch: EpisodeBatch,
                 rows: Sequence[int], lam: float) -> None:  # fmt: skip
        self.learned, self.composites, self.batch, self.lam = learned, composites, batch, lam
        self.rows = list(rows)  # the batch's table rows
        position = {r: n for n, r in enumerate(self.rows)}
        self.nodes = nodes_of(composites)
        net = learned.method.net
        assert net is not None
        self.pairs = {
            c.key: learned._delegate(batch, [position[leaf] for leaf in c.leaves()], c, lam) for c in self.nodes
        }
        with torch.no_grad():
            logits = net.decompose_logit(
                encoded(net, learned._node_tasks(self.nodes)), torch.full((len(self.nodes),), lam)
            )
        self.p_split = torch.sigmoid(logits).numpy()
        self.forced = np.array([self.pairs[c.key] is None for c in self.nodes])
        with torch.no_grad():
            first = rollout(net, batch, torch.full((len(self.rows),), lam), max_steps=1, mode="greedy")
        self.greedy_cols = np.array([calls[0] if calls else -1 for calls in first.order])

    def _plans(self, cols: np.ndarray, split: np.ndarray) -> list[Plan]:
        by_row = dict(zip(self.rows, cols.tolist(), strict=True))
        decide = {c.key: bool(s) for c, s in zip(self.nodes, split, strict=True)}
        return [sampled_plan(c, by_row, self.pairs, decide) for c in self.composites]

    def greedy(self) -> list[Plan]:
        if self.learned.head:
            return self._plans(self.greedy_cols, (self.p_split > 0.5) | self.forced)
        return self._plans(self.greedy_cols, np.ones(len(self.nodes), dtype=bool))

    def sample(self, n: int, seed: int) -> list[list[Plan]]:
        """[composites][n] plans: each node's decision drawn from the head, each part's pair from the scorer."""
        cols = sample_candidates(self.learned.method, self.batch, n=n, lam=self.lam, seed=seed)  # [rows, n]
        cols = np.where(cols >= 0, cols, self.greedy_cols[:, None])
        rng = np.random.default_rng([seed, 31])
        split = (rng.random((n, len(self.nodes))) < self.p_split) | self.forced
        drawn = [self._plans(cols[:, k], split[k]) for k in range(n)]
        return [[drawn[k][i] for k in range(n)] for i in range(len(self.composites))]


def benchmark_accuracy(items: OutcomeTable) -> np.ndarray:
    """float64 [items, p]: each pair's mean recorded score on the items of each item's benchmark
    (0 where none is recorded). A ceiling for estimates at benchmark level: it reads the
    outcomes of the very items it scores."""
    score = np.where(items.available(), items.score, np.nan)
    benchmarks = np.asarray(items.benchmarks)
    out = np.zeros_like(score)
    for name in set(benchmarks.tolist()):
        rows = benchmarks == name
        known = (~np.isnan(score[rows])).sum(axis=0)
        out[rows] = np.where(known > 0, np.nansum(score[rows], axis=0) / np.maximum(known, 1), 0.0)
    return out


def reward_of(net: RewardNet, tasks: np.ndarray, feats: np.ndarray, lam: float) -> np.ndarray:
    with torch.no_grad():
        out = net(torch.from_numpy(tasks.astype(np.float32)), torch.from_numpy(feats), torch.full((len(feats),), lam))
    scores: np.ndarray = out.double().numpy()
    return scores


def flattened(
    composites: Sequence[Composite], candidates: Sequence[Sequence[Plan]]
) -> tuple[list[Composite], list[Plan]]:
    """Each composite repeated once per candidate, beside its candidates, in row order ([n * N] each)."""
    return [c for c, row in zip(composites, candidates, strict=True) for _ in row], [
        p for row in candidates for p in row
    ]


@dataclass(frozen=True)
class Candidates:
    """N plans per composite, judged: recorded score and executed cost, and what each scorer
    makes of them before they run ([composites, N] each)."""

    score: np.ndarray
    cost: np.ndarray  # executed, USD
    est: np.ndarray  # estimated, USD
    by: dict[str, np.ndarray]  # scorer ("reward", "plan", or a leaf score's name) -> score
    decomposed: float  # the share of the plans that decompose the root


@dataclass(frozen=True)
class Judge:
    """Scores candidate plans: OrchRM's plan-level reward at λ ("reward") and its accuracy ("plan"),
    and node by node on each leaf score given (`node_scores`)."""

    net: RewardNet
    costing: CompositeCosting
    cost_ref: float
    lam: float

    def __call__(
        self, composites: Sequence[Composite], candidates: Sequence[Sequence[Plan]], estimates: LeafEstimates,
        spend: LeafEstimates, leaf: dict[str, np.ndarray], tasks: np.ndarray,
    ) -> Candidates:  # fmt: skip
        n = len(candidates[0])
        flat, plans = flattened(composites, candidates)
        shape = (len(composites), n)
        feats, _ = plan_features(flat, plans, estimates, self.costing, self.cost_ref)
        _, est = plan_features(flat, plans, spend, self.costing, self.cost_ref)
        outcomes = [self.costing.outcome(c, p) for c, p in zip(flat, plans, strict=True)]
        task_rows = np.repeat(tasks, n, axis=0)
        by = {
            "reward": reward_of(self.net, task_rows, feats, self.lam),
            "plan": reward_of(self.net, task_rows, feats, 0.0),
            **{name: node_scores(flat, plans, estimates.rows, values, self.costing) for name, values in leaf.items()},
        }
        return Candidates(
            score=np.array([o.score for o in outcomes]).reshape(shape),
            cost=np.array([o.cost for o in outcomes]).reshape(shape),
            est=est.reshape(shape),
            by={name: values.reshape(shape) for name, values in by.items()},
            decomposed=float(np.mean([o.decomposed for o in outcomes])),
        )


def spend_of(estimates: LeafEstimates, train: OutcomeTable, items: OutcomeTable, price_in: np.ndarray,
             context: Any) -> LeafEstimates:  # fmt: skip
    """`estimates` with each pair's cost on each item as known before it runs (`prompt_cost_estimate`)."""
    dom_cost = context.calibration.domain_cost[domain_indices(items.domains)]
    return LeafEstimates(estimates.rows, estimates.plans, prompt_cost_estimate(train, items, price_in, dom_cost))


def budget_scale(score: np.ndarray, est: np.ndarray, cost: np.ndarray, target_est: float, target_cost: float) -> float:
    """The largest share s of `target_est` (from 1 down, to 2^-20) at which `select_matched` picks
    candidates whose mean executed cost is at most `target_cost` ([n, N] arrays); 0 when none does."""
    rows = np.arange(len(score))

    def executed(share: float) -> float:
        return float(cost[rows, select_matched(score, est, share * target_est)].mean())

    if executed(1.0) <= target_cost:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if executed(mid) <= target_cost else (lo, mid)
    return lo
