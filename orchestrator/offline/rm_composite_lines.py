"""The lines of `evaluate_rm_composite` beyond the per-draw best-of-N: the same best-of-N as a
live request decides it, through the core (`live_lines`, with the weight `fit_best_of_cost`
fits), and what a better per-leaf estimate would gain (`discrimination_lines`, an evaluation
device that reads the test outcomes, not a method)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator.composite.build import Composite
from orchestrator.composite.learned import LearnedComposite
from orchestrator.composite.outcome import CompositeCosting, Plan
from orchestrator.composite.rm import LeafEstimates, node_scores, plan_features
from orchestrator.offline.composite_shell import route_composites
from orchestrator.offline.rm_composite_candidates import Candidates, budget_scale, flattened
from orchestrator.reward.bestofn import select_matched
from orchestrator.reward.model import RewardNet, save_reward_model
from orchestrator.reward.pairs import RIGHT, TablePairs, correct_over_incorrect
from orchestrator.routing.table import OutcomeTable

SHIFTS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.1)  # β of `discrimination_lines`


def ranked_right(pairs: TablePairs, estimate: np.ndarray) -> float:
    """The share of (right, wrong) pairs of one item that `estimate` [items, p] ranks right first (ties: half)."""
    win, lose = estimate[pairs.item, pairs.win], estimate[pairs.item, pairs.lose]
    return float(np.mean((win > lose) + 0.5 * (win == lose)))


def discrimination_lines(
    composites: Sequence[Composite], drawn: Sequence[Sequence[Sequence[Plan]]], judged: Sequence[Candidates],
    rows: Mapping[int, int], items: OutcomeTable, leaf: dict[str, np.ndarray], costing: CompositeCosting,
) -> dict[str, Any]:  # fmt: skip
    """What a better per-leaf estimate would gain: OrchRM's probability moved toward each test
    item's recorded outcome by β in logit, for each β in `SHIFTS` its correct-over-incorrect
    accuracy on the test items' pairs and the gain of node-by-node best-of-N over n1 at equal
    executed cost it gives. It reads the test outcomes: an evaluation device, not a method."""
    pairs = correct_over_incorrect(items)
    right = np.where(items.available(), (np.nan_to_num(items.score) >= RIGHT) * 2.0 - 1.0, 0.0)
    prob = np.clip(leaf["node"], 1e-9, 1 - 1e-9)
    logit = np.log(prob / (1 - prob))
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "orchrm": ranked_right(pairs, leaf["node"]),
        "benchmark_ceiling": ranked_right(pairs, leaf["benchmark"]),
    }
    shifted = [1 / (1 + np.exp(-(logit + beta * right))) for beta in SHIFTS]
    gains: list[list[float]] = [[] for _ in SHIFTS]
    for candidates, c in zip(drawn, judged, strict=True):
        flat, plans = flattened(composites, candidates)
        target, executed = float(c.est.mean()), float(c.cost.mean())
        for estimate, gain in zip(shifted, gains, strict=True):
            score = node_scores(flat, plans, rows, estimate, costing).reshape(c.score.shape)
            chosen = select_matched(score, c.est, budget_scale(score, c.est, c.cost, target, executed) * target)
            gain.append(100 * float(c.score[np.arange(len(chosen)), chosen].mean() - c.score.mean()))
    out["shifts"] = [
        {"beta": beta, "ranked_right": ranked_right(pairs, estimate), "gain": float(np.mean(gain))}
        for beta, estimate, gain in zip(SHIFTS, shifted, gains, strict=True)
    ]
    return out


def fit_best_of_cost(
    composites: Sequence[Composite], candidates: Sequence[Sequence[Plan]], greedy: Sequence[Plan],
    probability: np.ndarray, estimates: LeafEstimates, spend: LeafEstimates, costing: CompositeCosting, cost_ref: float,
) -> float:  # fmt: skip
    """The weight of estimated cost in a request's best-of-N (`LearnedPolicyConfig.best_of_cost`)
    at which its picks among `candidates` cost, estimated, at most the `greedy` plans on the
    mean: the smallest w >= 0 found by bisection. A request picks the top of the mean over the
    parts of `probability` less w times the mean of their estimated costs (`estimates`, the
    policy's per-domain costs over `cost_ref`, its units); the budget is held on `spend`, as
    the evaluation's lines are (the planner calls included)."""
    n = len(candidates[0])
    flat, plans = flattened(composites, candidates)
    right = node_scores(flat, plans, estimates.rows, probability, costing).reshape(-1, n)
    unit = node_scores(flat, plans, estimates.rows, estimates.cost / cost_ref, costing).reshape(-1, n)
    est = plan_features(flat, plans, spend, costing, cost_ref)[1].reshape(-1, n)
    target = float(plan_features(composites, greedy, spend, costing, cost_ref)[1].mean())
    rows = np.arange(len(composites))

    def spent(w: float) -> float:
        return float(est[rows, (right - w * unit).argmax(axis=1)].mean())

    if spent(0.0) <= target:
        return 0.0
    lo, hi = 0.0, 1.0
    while spent(hi) > target and hi < 1e6:
        lo, hi = hi, hi * 2
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if spent(mid) <= target else (mid, hi)
    return hi


LIVE = ("engine", "engine_best_of", "engine_best_of_at_greedy")


def live_lines(
    learned: LearnedComposite, net: RewardNet, platt_ab: tuple[float, float], composites: Sequence[Composite],
    costing: CompositeCosting, lam: float, n: int, best_of_cost: float,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Each composite as a run through the core (`offline.composite_shell`), as a live request decides
    it: the runtime learned policy alone ("engine"), and with best-of-`n` over whole plans scored
    by this OrchRM, saved with its Platt scaling, weighing estimated cost by λ ("engine_best_of")
    or by `best_of_cost` ("engine_best_of_at_greedy", `fit_best_of_cost`)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "orchrm.pt"
        save_reward_model(path, net, learned.method.context, extra={"platt": list(platt_ab)})  # type: ignore[arg-type]
        runs = (("engine", 1, None), ("engine_best_of", n, None), ("engine_best_of_at_greedy", n, best_of_cost))
        for name, best_of, weight in runs:
            policy = learned.method.runtime_policy(
                lam, decides_composites=True, reward_model=str(path), best_of_cost=weight
            )
            with torch.no_grad():
                plans, _ = route_composites(costing.table, composites, policy, lam=lam, best_of=best_of)
            outcomes = [costing.outcome(c, p) for c, p in zip(composites, plans, strict=True)]
            out[name] = {"score": float(np.mean([o.score for o in outcomes])),
                         "cost": float(np.mean([o.cost for o in outcomes])),
                         "decomposed": float(np.mean([o.decomposed for o in outcomes]))}  # fmt: skip
    return out
