"""OrchRM over composite plans: held-out pairwise accuracy on multi-node plan pairs, and
best-of-N over candidates that include decomposed plans.

    python -m orchestrator.evaluate_rm_composite [--outcomes FILE ...] [--prices P] [--seeds 0,1,2]
        [--train-count 2000] [--test-count 1000] [--n 8] [--draws 10] [--lam 0.05]
        [--penalty 0] [--planner MODEL] [--rm-config C.json] [--policy-config C.json] [--json OUT]

Per seed, composites are drawn as `evaluate_composite` draws them (the train ones from the
train items, the test ones from the test items: no test part is seen in training), and:
1. the learned policy is fitted on the train composites' items, its decompose head on their
   decisions (`composite.learned`);
2. OrchRM is trained on the train items' pairs (`train_rm`'s kinds, `specialized_over_base`
   from the policy's greedy choices) and the train composites' pairs (`composite.rm`: decomposed
   against delegated, one part's pair changed, the policy's plan over a random one), built from
   N plans sampled from the policy (its head's decisions drawn, each part's pair drawn from the
   pair scorer) and its greedy plan;
3. on the test composites: the pairwise accuracy of each kind (pairs with a multi-node plan on
   at least one side, and all), and the lines of `reward.bestofn` over N sampled plans, drawn
   `--draws` times: n1 (one sampled plan), rm, rm_matched (OrchRM's accuracy score, the best it
   can pick for a mean *estimated* cost of at most n1's), oracle, greedy (the policy's most
   likely plan: the head's decisions, each part's most likely pair) and rm_at_greedy (held to
   the greedy plan's estimated cost); rm_node and rm_node_at_greedy pick the same way on OrchRM
   node by node (`composite.rm.node_scores`: each leaf's one-node plan, Platt-scaled on the train
   items, averaged over the leaves); estimate_node on the policy's own per-item estimate (what
   OrchRM adds); benchmark_ceiling on each pair's accuracy over the test items of the leaf's
   benchmark (it reads test outcomes: a ceiling for benchmark-level estimates, not a method).
   A plan's estimated cost is known before it runs: each call's prompt tokens at the pair's
   input price plus its mean output cost on the train items of the item's domain, and the
   planner calls' estimated tokens. The picks execute a little above that estimate, so
   rm_node_executed and rm_node_at_greedy_executed hold rm_node to the reference's *executed*
   cost: the estimated budget is scaled to the largest share at which the picks execute within
   it (`budget_scale`), found on the test candidates' recorded costs: an evaluation device
   for a comparison at equal executed cost, not a method.

4. the same best-of-N as a live request decides it (`policies.learned_best_of`): each test
   composite a run through the core (`offline.composite_shell`) of the runtime learned policy with
   this OrchRM (saved with its Platt scaling), once without best-of-N ("engine") and once with
   best_of = N ("engine_best_of"): one draw per composite, seeded by its text, each plan's
   pick the top of OrchRM's probability less λ·estimated cost (a request's own rule, no budget
   matched across composites); and once more with the cost weighed by `best_of_cost`
   ("engine_best_of_at_greedy"), fitted on the train composites' candidates so that the picks
   cost, estimated, what the policy's own plans cost there (`fit_best_of_cost`).

5. what +2 points would take (`discrimination_lines`, an evaluation device that reads the test
   outcomes, not a method): OrchRM's per-leaf probability moved toward each test item's recorded
   outcome by a shift β in logit (β·(2·right - 1)), for each β the estimate's correct-over-
   incorrect accuracy on the test items' pairs and the gain of `rm_node_executed` over n1 it
   would give; and the same accuracy of OrchRM and of the benchmark-level ceiling.

Each part is one call (the pair scorer's first pick, as `evaluate_rm` samples items): the
policy's escalations are not among the candidates. The two assumptions of `composite.outcome`
hold here too and every report repeats them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator import cli
from orchestrator.composite.build import Composite, CompositeConfig, build_split
from orchestrator.composite.learned import LearnedComposite, nodes_of
from orchestrator.composite.outcome import CompositeCosting, Plan, planner_price
from orchestrator.composite.rm import (
    COMPOSITE_SOURCES,
    LeafEstimates,
    PlanPairs,
    calls_of,
    composite_pairs,
    leaf_estimates,
    leaf_probabilities,
    node_scores,
    pair_tensors,
    plan_features,
    sampled_plan,
)
from orchestrator.evaluate_composite import add_draw_arguments
from orchestrator.evaluate_rm import held_out_pairs, mean_sd, sample_candidates
from orchestrator.learning.decompose import encoded
from orchestrator.learning.episode import EpisodeBatch, rollout
from orchestrator.learning.features import PAIR_DIM, domain_indices, task_features
from orchestrator.offline.composite_shell import route_composites
from orchestrator.offline.composites import ASSUMPTIONS
from orchestrator.outcomes import read_prices
from orchestrator.reward.bestofn import prompt_cost_estimate, select_matched
from orchestrator.reward.features import table_plan_features
from orchestrator.reward.model import RewardNet, save_reward_model
from orchestrator.reward.pairs import RIGHT, TablePairs, correct_over_incorrect
from orchestrator.reward.platt import platt, rm_rewards
from orchestrator.reward.train import PairTensors, pair_metrics, train_reward
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable
from orchestrator.train_rm import RMConfig, table_pair_data

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


def multi_node(pairs: PlanPairs, composites: Sequence[Composite], costing: CompositeCosting) -> np.ndarray:
    """bool [pairs]: at least one of the two plans has more than one node."""
    return np.array(
        [
            max(calls_of(composites[i], w, costing).nodes, calls_of(composites[i], lo, costing).nodes) > 1
            for i, w, lo in zip(pairs.composite, pairs.win, pairs.lose, strict=True)
        ],
        dtype=bool,
    )


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


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\n{ASSUMPTIONS}")
    print(f"\nOrchRM on held-out composite plans ({len(results)} seed(s); test parts unseen in training)")
    keys = sorted(k for k in results[0]["pairs"] if "/accuracy" in k)
    for key in keys:
        count = int(results[0]["pairs"].get(key.replace("/accuracy", "/pairs"), 0))
        print(
            f"  {key:50s} {mean_sd([r['pairs'][key] for r in results])}   ({count} pairs in seed {results[0]['seed']})"
        )
    print(f"\nBest-of-{args.n} at λ={args.lam}, each seed the mean over {args.draws} draws of the candidates")
    print("  (score: the mean over test composites of their leaves' mean recorded score; $ per composite, executed)")
    for line in LINES:
        rows = [r["lines"][line] for r in results]
        cost = np.mean([x["cost"] for x in rows])
        print(f"  {line:18s} score {mean_sd([x['score'] for x in rows])}  ${cost:.3e}")
    for name in GAINS:
        means = [float(np.mean(r["draw_gains"][name])) for r in results]
        print(f"  {name}: {mean_sd(means, sign='+')} points")
    print("  as live runs through the core (one draw, seeded by each task's text; decompose rate):")
    for name in LIVE:
        rows = [r["live"][name] for r in results]
        print(f"  {name:18s} score {mean_sd([x['score'] for x in rows])}  ${np.mean([x['cost'] for x in rows]):.3e}"
              f"  decomposed {np.mean([x['decomposed'] for x in rows]):.2f}")  # fmt: skip
    gains_live = [100 * (r["live"]["engine_best_of"]["score"] - r["live"]["engine"]["score"]) for r in results]
    print(f"  engine_best_of-engine: {mean_sd(gains_live, sign='+')} points")
    at = [100 * (r["live"]["engine_best_of_at_greedy"]["score"] - r["live"]["engine"]["score"]) for r in results]
    ratio = [r["live"]["engine_best_of_at_greedy"]["cost"] / r["live"]["engine"]["cost"] - 1 for r in results]
    print(
        f"  engine_best_of_at_greedy-engine: {mean_sd(at, sign='+')} points, cost "
        + " / ".join(f"{x:+.1%}" for x in ratio)
        + " by seed (best_of_cost "
        + " / ".join(f"{r['best_of_cost']:.3g}" for r in results)
        + ", fitted on the train composites to keep the picks at the policy's own plans' estimated cost)"
    )
    print(
        "  decompose rate: candidates "
        + ", ".join(f"{r['candidate_decompose_rate']:.2f}" for r in results)
        + "; greedy "
        + ", ".join(f"{r['greedy_decompose_rate']:.2f}" for r in results)
    )
    print(
        "  *_executed: the estimated-cost budget scaled to execute at the reference's cost, share "
        + ", ".join(f"{r['executed_share'][0]:.3f}-{r['executed_share'][1]:.3f}" for r in results)
        + " by seed (fitted on the test composites' recorded costs: an evaluation device, not a method)"
    )
    first = results[0]["discrimination"]
    print(
        f"\nWhat a better per-leaf estimate would gain (an evaluation device: OrchRM's probability moved toward"
        f" each test item's recorded outcome by β in logit). Correct-over-incorrect on the test items' pairs"
        f" ({first['pairs']} in seed {results[0]['seed']}): OrchRM"
        f" {mean_sd([r['discrimination']['orchrm'] for r in results])}, the benchmark-level ceiling"
        f" {mean_sd([r['discrimination']['benchmark_ceiling'] for r in results])}"
    )
    for k, shift in enumerate(first["shifts"]):
        rows = [r["discrimination"]["shifts"][k] for r in results]
        print(f"  β {shift['beta']:<5} correct-over-incorrect {mean_sd([x['ranked_right'] for x in rows])}"
              f"  rm_node_executed-n1 {mean_sd([x['gain'] for x in rows], digits=2, sign='+')} points")  # fmt: skip
    print(
        "times (s): "
        + ", ".join(f"seed {r['seed']}: policy {r['time/policy_s']:.0f}, RM {r['time/rm_s']:.0f}" for r in results)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.evaluate_rm_composite", description=__doc__.split("\n\n")[0]
    )
    add_draw_arguments(parser)
    parser.add_argument("--n", type=cli.positive, default=8, help="candidate plans per composite (best-of-N)")
    parser.add_argument("--draws", type=cli.positive, default=10, help="draws of the N candidates, averaged")
    parser.add_argument("--lam", type=cli.finite, default=0.05, help="cost preference λ for sampling and scoring")
    parser.add_argument("--penalty", type=cli.finite, default=0.0, help="interference penalty per extra delegated part")
    parser.add_argument("--planner", help="the planner model (default: the cheapest priced one)")
    parser.add_argument("--rm-config", type=Path, help="JSON config of OrchRM (as train_rm --config)")
    parser.add_argument("--policy-config", type=Path, help="JSON config of the learned policy and its decompose head")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    for path in [*args.outcomes, *(p for p in (args.prices, args.rm_config, args.policy_config) if p)]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    if args.lam < 0:
        parser.error("--lam must be non-negative")
    if not 0.0 <= args.penalty <= 1.0:
        parser.error("--penalty is within [0, 1]")
    from orchestrator.learning.method import LearnedConfig

    try:
        cli.check_output(args.json, "--json")
        args.rm = RMConfig.from_mapping(cli.read_config(args.rm_config, "--rm-config"))
        args.policy_config = LearnedConfig.from_mapping(
            cli.read_config(args.policy_config, "--policy-config")
        ).to_dict()
        price_path = default_prices(args.outcomes, args.prices)
        if price_path is None:
            raise cli.InputError("no prices.json beside the outcome files: give --prices")
        prices = read_prices(price_path)
        table = load_routable(list(args.outcomes), prices=price_path)
    except cli.INPUT_ERRORS as error:
        parser.error(str(error))
    results = []
    for seed in args.seeds:
        print(f"seed {seed}: fitting the policy and its head, then OrchRM ...", file=sys.stderr, flush=True)
        try:
            results.append(run_seed(table, args, prices, seed))
        except (*cli.INPUT_ERRORS, ValueError) as error:
            parser.error(str(error))
    report(results, args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        body = {"n": args.n, "lam": args.lam, "draws": args.draws, "penalty": args.penalty, "assumptions": ASSUMPTIONS,
                "seeds": results}  # fmt: skip
        args.json.write_text(json.dumps(body, indent=1, default=float))
        print(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
