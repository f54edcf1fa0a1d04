"""One seed of `evaluate_rm_composite`: the policy and OrchRM fitted on the train composites,
then every figure on the test composites (`run_seed`), and the names of the best-of-N lines
and gains it reports."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from orchestrator.composite.build import Composite, CompositeConfig, build_split
from orchestrator.composite.learned import LearnedComposite
from orchestrator.composite.outcome import CompositeCosting, planner_price
from orchestrator.composite.rm import (
    COMPOSITE_SOURCES,
    PlanPairs,
    calls_of,
    composite_pairs,
    leaf_estimates,
    leaf_probabilities,
    pair_tensors,
)
from orchestrator.evaluate_rm import held_out_pairs
from orchestrator.learning.features import PAIR_DIM, task_features
from orchestrator.offline.rm_composite_candidates import (
    Candidates,
    Judge,
    Sampler,
    benchmark_accuracy,
    budget_scale,
    spend_of,
)
from orchestrator.offline.rm_composite_lines import discrimination_lines, fit_best_of_cost, live_lines
from orchestrator.reward.bestofn import select_matched
from orchestrator.reward.features import table_plan_features
from orchestrator.reward.model import RewardNet
from orchestrator.reward.platt import platt, rm_rewards
from orchestrator.reward.train import PairTensors, pair_metrics, train_reward
from orchestrator.routing.table import OutcomeTable
from orchestrator.train_rm import table_pair_data

LINES = (
    "n1", "rm", "rm_matched", "rm_node", "rm_node_executed", "oracle", "greedy", "rm_at_greedy", "rm_node_at_greedy",
    "rm_node_at_greedy_executed", "estimate_node", "benchmark_ceiling",
)  # fmt: skip
GAINS = {  # printed: a line's gain over another, in points
    "rm_node-n1": ("rm_node", "n1"),
    "rm_node_at_greedy-greedy": ("rm_node_at_greedy", "greedy"),
    "rm_node_executed-n1": ("rm_node_executed", "n1"),
    "rm_node_at_greedy_executed-greedy": ("rm_node_at_greedy_executed", "greedy"),
    "rm_matched-n1": ("rm_matched", "n1"),
    "rm_at_greedy-greedy": ("rm_at_greedy", "greedy"),
    "estimate_node-n1": ("estimate_node", "n1"),
    "benchmark_ceiling-n1": ("benchmark_ceiling", "n1"),
}


def multi_node(pairs: PlanPairs, composites: Sequence[Composite], costing: CompositeCosting) -> np.ndarray:
    """bool [pairs]: at least one of the two plans has more than one node."""
    return np.array(
        [
            max(calls_of(composites[i], w, costing).nodes, calls_of(composites[i], lo, costing).nodes) > 1
            for i, w, lo in zip(pairs.composite, pairs.win, pairs.lose, strict=True)
        ],
        dtype=bool,
    )


def run_seed(table: OutcomeTable, args: argparse.Namespace, prices: dict[str, Any], seed: int) -> dict[str, Any]:
    train, test = build_split(table, train_count=args.train_count, test_count=args.test_count, seed=seed,
                              config=CompositeConfig())  # fmt: skip
    train_rows = sorted({leaf for c in train for leaf in c.leaves()})
    test_rows = sorted({leaf for c in test for leaf in c.leaves()})
    planner, price = planner_price(prices, args.planner, table)
    costing = CompositeCosting(table, planner_price=price, penalty=args.penalty)

    start = time.perf_counter()
    learned = LearnedComposite(args.policy_config)
    learned.fit(costing, train_rows, train, seed=seed)
    policy_s = time.perf_counter() - start
    method, context = learned.method, learned.method.context
    assert context is not None
    cost_ref = context.calibration.cost_ref
    train_items, train_batch = method.episodes()  # as training saw them
    test_items, test_batch = method.episodes(table.rows(test_rows))
    emb_tr, emb_te = method._embed(train_items), method._embed(test_items)
    lam = args.lam

    start = time.perf_counter()
    on_train = Sampler(learned, train, train_batch, train_rows, lam)
    chosen = on_train.greedy_cols  # the policy's choice on each train item: specialized_over_base
    item_data = table_pair_data(train_items, emb_tr, context, args.rm.pairs, seed=seed, chosen=chosen)
    plans_tr = table_plan_features(context, emb_tr, train_items.domains, exclude_self=True)
    est_tr = leaf_estimates(train_rows, plans_tr, None, cost_ref)
    samples_tr = on_train.sample(args.n, seed)
    made_tr = composite_pairs(train, samples_tr, on_train.greedy(), costing, seed=seed)
    tasks_tr = learned._node_tasks(train)
    comp_data = pair_tensors(made_tr, train, tasks_tr, est_tr, costing, cost_ref, group_offset=table.n_items)
    data = PairTensors.concat([item_data, comp_data])
    torch.manual_seed(seed)
    net = RewardNet(args.rm.model)
    fit = train_reward(net, data, replace(args.rm.train, seed=seed))
    rm_s = time.perf_counter() - start

    # OrchRM node by node: each leaf's one-node plans scored, as probabilities (Platt on the train items)
    fit_platt = platt(rm_rewards(net, task_features(emb_tr, train_items.domains), plans_tr),
                      np.where(train_items.available(), train_items.score, np.nan))  # fmt: skip

    # held-out: test items' pairs, test composites' pairs
    plans_te = table_plan_features(context, emb_te, test_items.domains)
    items = held_out_pairs(net, test_items, task_features(emb_te, test_items.domains), plans_te,
                           np.nan_to_num(test_items.cost) / cost_ref)  # fmt: skip
    on_test = Sampler(learned, test, test_batch, test_rows, lam)
    drawn = [on_test.sample(args.n, seed + 1000 * k) for k in range(args.draws)]
    greedy = on_test.greedy()
    est_te = leaf_estimates(test_rows, plans_te, None, cost_ref)
    prob_te = leaf_probabilities(rm_rewards(net, task_features(emb_te, test_items.domains), plans_te), fit_platt)
    benchmark_te = benchmark_accuracy(test_items)  # a ceiling: it reads the test items' outcomes
    tasks_te = learned._node_tasks(test)
    made_te = composite_pairs(test, drawn[0], greedy, costing, seed=seed + 1)
    held = pair_tensors(made_te, test, tasks_te, est_te, costing, cost_ref)
    multi = multi_node(made_te, test, costing)
    pairs = {
        **pair_metrics(net, held.take(np.flatnonzero(multi)), "multi_node"),
        **pair_metrics(net, held, "all"),
        **{k: v for k, v in items.items() if "[" not in k},
    }

    # best-of-N
    price_in = np.array([prices.get(model, {}).get("input_per_mtok", np.nan) for model, _ in table.pairs]) / 1e6
    spend_te = spend_of(est_te, train_items, test_items, price_in, context)
    leaf_te = {
        "node": prob_te,
        "estimate": plans_te[..., PAIR_DIM].astype(np.float64),  # the calibration's per-item estimate, no OrchRM
        "benchmark": benchmark_te,
    }
    judge = Judge(net, costing, cost_ref, lam)
    test_greedy = judge(test, [[p] for p in greedy], est_te, spend_te, leaf_te, tasks_te)
    g_score, g_cost, g_est = test_greedy.score[:, 0], test_greedy.cost[:, 0], test_greedy.est[:, 0]
    per_draw: list[dict[str, dict[str, float]]] = []
    split_rate: list[float] = []
    shares: list[float] = []
    judged = []
    for candidates in drawn:
        c = judge(test, candidates, est_te, spend_te, leaf_te, tasks_te)
        judged.append(c)
        split_rate.append(c.decomposed)
        matched, at_greedy = float(c.est.mean()), float(g_est.mean())

        def pick(chosen: np.ndarray, c: Candidates = c) -> dict[str, float]:
            rows = np.arange(len(chosen))
            return {"score": float(c.score[rows, chosen].mean()), "cost": float(c.cost[rows, chosen].mean())}

        def at(name: str, target: float, c: Candidates = c) -> dict[str, float]:
            return pick(select_matched(c.by[name], c.est, target))

        def at_executed(name: str, target: float, executed: float, c: Candidates = c) -> dict[str, float]:
            """Held to the reference's executed cost: the budget share at which the picks execute
            at it, found on these candidates' recorded costs (an evaluation device, not a method)."""
            share = budget_scale(c.by[name], c.est, c.cost, target, executed)
            shares.append(share)
            return pick(select_matched(c.by[name], c.est, share * target))

        per_draw.append(
            {
                "n1": {"score": float(c.score.mean()), "cost": float(c.cost.mean())},
                "rm": pick(c.by["reward"].argmax(1)),
                "rm_matched": at("plan", matched),
                "rm_node": at("node", matched),
                "rm_node_executed": at_executed("node", matched, float(c.cost.mean())),
                "oracle": {"score": float(c.score.max(1).mean()), "cost": float(c.cost.sum(1).mean())},
                "greedy": {"score": float(g_score.mean()), "cost": float(g_cost.mean())},
                "rm_at_greedy": at("plan", at_greedy),
                "rm_node_at_greedy": at("node", at_greedy),
                "rm_node_at_greedy_executed": at_executed("node", at_greedy, float(g_cost.mean())),
                "estimate_node": at("estimate", matched),
                "benchmark_ceiling": at("benchmark", matched),
            }
        )
    prob_tr = leaf_probabilities(rm_rewards(net, task_features(emb_tr, train_items.domains), plans_tr), fit_platt)
    spend_tr = spend_of(est_tr, train_items, train_items, price_in, context)
    weight = fit_best_of_cost(train, samples_tr, on_train.greedy(), prob_tr, est_tr, spend_tr, costing, cost_ref)
    live = live_lines(learned, net, fit_platt, test, costing, lam, args.n, weight)
    takes = discrimination_lines(test, drawn, judged, est_te.rows, test_items, leaf_te, costing)
    lines = {name: {k: float(np.mean([d[name][k] for d in per_draw])) for k in ("score", "cost")} for name in LINES}
    gains = {name: [100 * (d[a]["score"] - d[b]["score"]) for d in per_draw] for name, (a, b) in GAINS.items()}
    return {
        "seed": seed,
        "planner": planner,
        "train_composites": len(train),
        "test_composites": len(test),
        "rm_pairs": {str(k): int(v) for k, v in zip(*np.unique(data.source, return_counts=True), strict=True)},
        "test_pairs": {s: int(sum(x == s for x in made_te.source)) for s in COMPOSITE_SOURCES},
        "rm_fit": {k: v for k, v in fit.items() if not k.startswith("train/pairs/")},
        "pairs": pairs,
        "lines": lines,
        "draw_gains": gains,
        "live": live,
        "best_of_cost": weight,
        "discrimination": takes,
        "candidate_decompose_rate": float(np.mean(split_rate)),
        "greedy_decompose_rate": float(
            np.mean([costing.outcome(c, p).decomposed for c, p in zip(test, greedy, strict=True)])
        ),
        "executed_share": [float(min(shares)), float(max(shares))],
        "time/policy_s": policy_s,
        "time/rm_s": rm_s,
    }
