"""Evaluate OrchRM on recorded outcomes: held-out pairwise accuracy, and best-of-N against N=1.

    python -m orchestrator.evaluate_rm --outcomes FILE [FILE ...] [--seeds 0 1 2] [--n 8] [--draws 1]
        [--lam 0.05] [--json OUT.json] [--prices P] [--rm-config C.json] [--policy-config C.json]

Items are split as `orchestrator.evaluate` splits them (the upstream train/test split where
every item has one, else a seeded 80/20); tasks of the test split are never seen in training.
For each seed:
1. OrchRM is trained on self-supervised pairs of the train items;
2. its pairwise accuracy is measured on every pair of each kind built from the test items,
   per source file and pooled (a pair is judged at the lowest λ at which it holds: λ = 0
   for correct-over-incorrect);
3. the learned policy is fitted on the train items; for each test item it samples N
   candidate plans at λ, and takes its greedy plan (what a run without best_of executes);
   the lines of `reward.bestofn` are scored, the greedy ones included. With `--draws K`
   the N candidates are drawn K times (the first draw is the one `--draws 1` makes) and
   each line's figures are their mean over the draws: one draw's rm_matched − n1 moves
   by about 0.4 points from draw to draw on RouterBench + LLMRouter.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator import cli
from orchestrator.learning.dataset import Embedder, default_embedder, encode, make_context
from orchestrator.learning.episode import EpisodeBatch, Rollout, rollout
from orchestrator.learning.features import domain_indices, task_features
from orchestrator.learning.method import LearnedConfig, LearnedMethod
from orchestrator.outcomes import read_prices
from orchestrator.reward.bestofn import (
    GREEDY_LINES,
    LINES,
    LineResult,
    evaluate_lines,
    mean_lines,
    prompt_cost_estimate,
)
from orchestrator.reward.features import table_plan_features
from orchestrator.reward.model import RewardNet
from orchestrator.reward.pairs import cheaper_correct, concat, correct_over_incorrect, node_level
from orchestrator.reward.prior import table_prior
from orchestrator.reward.train import pair_metrics, table_tensors, train_reward
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable, split_table
from orchestrator.train_rm import RMConfig, table_pair_data

HEADLINE_SOURCE = "correct_over_incorrect"


def held_out_pairs(
    net: RewardNet, test: OutcomeTable, task: np.ndarray, plans: np.ndarray, cost: np.ndarray
) -> dict[str, float]:
    """Pairwise accuracy on every test pair of each kind, per source file and pooled."""
    pairs = concat([correct_over_incorrect(test), cheaper_correct(test, cost_ratio=1.5), node_level(test)])
    data = table_tensors(pairs, task, plans, cost)
    files = np.asarray(test.sources)[pairs.item]
    out = pair_metrics(net, data, "test")
    for name in sorted(set(test.sources)):
        rows = np.flatnonzero(files == name)
        out |= {
            k.replace("test/", f"test[{name}]/", 1): v for k, v in pair_metrics(net, data.take(rows), "test").items()
        }
    return out


def sample_candidates(method: LearnedMethod, batch: EpisodeBatch, *, n: int, lam: float, seed: int) -> np.ndarray:
    """int64 [items, n]: the first pair of n sampled episodes of the fitted policy at λ (-1: none),
    on `batch` (`learning.dataset.encode` of the test items, without their outcomes)."""
    assert method.net is not None
    gen = torch.Generator().manual_seed(seed)
    lams = torch.full((batch.available.shape[0],), lam)
    with torch.no_grad():
        episodes = [rollout(method.net, batch, lams, max_steps=1, mode="sample", generator=gen) for _ in range(n)]
    return np.stack([first_pairs(episode) for episode in episodes], axis=1)


def sample_draws(
    method: LearnedMethod, batch: EpisodeBatch, *, n: int, lam: float, seed: int, draws: int
) -> list[np.ndarray]:
    """`draws` independent `sample_candidates` of n plans; draw k's generator seed is seed + 1000·k,
    so the first draw is the one a single draw makes."""
    return [sample_candidates(method, batch, n=n, lam=lam, seed=seed + 1000 * k) for k in range(draws)]


def sampled_in_every_draw(drawn: Sequence[np.ndarray]) -> np.ndarray:
    """bool [items]: every draw sampled a pair for each of the item's n plans (-1: none)."""
    out: np.ndarray = np.logical_and.reduce([(c >= 0).all(axis=1) for c in drawn])
    return out


def greedy_plans(method: LearnedMethod, batch: EpisodeBatch, *, lam: float) -> np.ndarray:
    """int64 [items]: the first pair of the fitted policy's greedy episode at λ (-1: none), what a
    run without best_of executes."""
    assert method.net is not None
    with torch.no_grad():
        episode = rollout(method.net, batch, torch.full((batch.available.shape[0],), lam), max_steps=1, mode="greedy")
    return first_pairs(episode)


def first_pairs(episode: Rollout) -> np.ndarray:
    """int64 [items]: each episode's first call (-1: it made none)."""
    return np.array([calls[0] if calls else -1 for calls in episode.order], dtype=np.int64)


def reward_matrix(net: RewardNet, task: np.ndarray, plans: np.ndarray, lam: float) -> np.ndarray:
    """float64 [items, p]: OrchRM's reward of every one-node plan at λ."""
    n, p, d = plans.shape
    with torch.no_grad():
        flat = net(
            torch.from_numpy(np.repeat(task, p, axis=0)),
            torch.from_numpy(plans.reshape(n * p, d)),
            torch.full((n * p,), float(lam)),
        )
    matrix: np.ndarray = flat.double().numpy().reshape(n, p)
    return matrix


def run_seed(
    table: OutcomeTable,
    *,
    seed: int,
    n: int,
    lam: float,
    draws: int = 1,
    rm_config: RMConfig,
    policy_config: dict[str, Any] | None,
    prices: dict[str, dict[str, float]] | None,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    embed = embedder or default_embedder
    train, test = split_table(table, seed=seed)
    if not train.n_items or not test.n_items:
        raise cli.InputError(
            f"{table.n_items} item(s) split into {train.n_items} train and {test.n_items} test: both need some"
        )
    emb_tr = np.asarray(embed(list(train.prompts)), dtype=np.float32)
    emb_te = np.asarray(embed(list(test.prompts)), dtype=np.float32)
    context = make_context(train, emb_tr, prices)
    cost_ref = context.calibration.cost_ref

    start = time.perf_counter()
    prior = table_prior(train, emb_tr, seed=seed) if rm_config.model.accuracy_prior else None
    data = table_pair_data(train, emb_tr, context, rm_config.pairs, seed=seed, prior=prior)
    torch.manual_seed(seed)  # the net's initial weights: from the seed, not from what ran before
    net = RewardNet(rm_config.model)
    fit = train_reward(net, data, replace(rm_config.train, seed=seed))
    rm_s = time.perf_counter() - start
    task_te = task_features(emb_te, test.domains)
    plans_te = table_plan_features(context, emb_te, test.domains, prior=prior)
    pairs = held_out_pairs(net, test, task_te, plans_te, np.nan_to_num(test.cost) / cost_ref)

    start = time.perf_counter()
    method = LearnedMethod(policy_config, embedder=embed)
    method.fit(train, seed=seed)
    policy_s = time.perf_counter() - start
    assert method.context is not None
    batch = encode(test, emb_te, method.context, with_outcomes=False)
    drawn = sample_draws(method, batch, n=n, lam=lam, seed=seed, draws=draws)
    greedy = greedy_plans(method, batch, lam=lam)
    routable = sampled_in_every_draw(drawn) & (greedy >= 0)
    test_r, greedy = test.rows(np.flatnonzero(routable)), greedy[routable]
    rows = np.arange(test_r.n_items)[:, None]
    reward_all = reward_matrix(net, task_te[routable], plans_te[routable], lam)  # [items, p]
    reward_acc_all = reward_matrix(net, task_te[routable], plans_te[routable], 0.0)
    dom = domain_indices(test_r.domains)
    price = np.array([(prices or {}).get(model, {}).get("input_per_mtok", np.nan) for model, _ in train.pairs]) / 1e6
    domain_cost = context.calibration.domain_cost[dom]  # [items, p] USD: for a pair without a price
    pair_cost = prompt_cost_estimate(train, test_r, price, domain_cost) / cost_ref  # [items, p]
    greedy_cost, sources = pair_cost[rows[:, 0], greedy], np.asarray(test_r.sources)
    per_draw: dict[str, list[dict[str, LineResult]]] = {name: [] for name in ("all", *sorted(set(sources)))}
    for candidates in drawn:
        cand = candidates[routable]
        reward, reward_acc, est_cost = reward_all[rows, cand], reward_acc_all[rows, cand], pair_cost[rows, cand]
        for name, results in per_draw.items():
            keep = np.flatnonzero((sources == name) | (name == "all"))
            results.append(
                evaluate_lines(
                    test_r.rows(keep),
                    cand[keep],
                    reward[keep],
                    est_cost[keep],
                    reward_acc=reward_acc[keep],
                    greedy=(greedy[keep], greedy_cost[keep]),
                )
            )
    lines = {name: mean_lines(results) for name, results in per_draw.items()}
    draw_gains = {
        name: [100 * (r["rm_matched"].macro_acc - r["n1"].macro_acc) for r in results]
        for name, results in per_draw.items()
    }
    distinct = [np.mean([len(set(row)) for row in c[routable].tolist()]) for c in drawn]
    return {
        "seed": seed,
        "train_items": train.n_items,
        "test_items": test.n_items,
        "rm_fit": {k: v for k, v in fit.items() if not k.startswith("train/pairs/")},
        "rm_pairs": {str(k): int(v) for k, v in zip(*np.unique(data.source, return_counts=True), strict=True)},
        "time/rm_s": rm_s,
        "time/policy_s": policy_s,
        "pairs": pairs,
        "distinct_candidates": float(np.mean(distinct)),
        "draws": draws,
        "draw_gains": draw_gains,  # rm_matched − n1 in points, per draw of the candidates
        "lines": {group: {name: asdict(r) for name, r in res.items()} for group, res in lines.items()},
    }


def mean_sd(values: Sequence[float], digits: int = 4, sign: str = "") -> str:
    """'mean ± sd' (sample sd); sign "+" shows the mean's sign."""
    arr = np.asarray(values, dtype=float)
    return f"{arr.mean():{sign}.{digits}f} ± {arr.std(ddof=1) if len(arr) > 1 else 0.0:.{digits}f}"


def report(results: list[dict[str, Any]], *, n: int, lam: float, draws: int = 1) -> None:
    print(f"\nOrchRM held-out pairwise accuracy (test tasks unseen in training), {len(results)} seed(s)")
    first = results[0]["pairs"]
    for key in sorted(k for k in first if "/accuracy" in k):
        count = first.get(key.replace("/accuracy", "/pairs"), float("nan"))
        print(f"  {key:55s} {mean_sd([r['pairs'][key] for r in results])}   ({int(count)} pairs)")
    each = f", each seed's figures the mean over {draws} draws of the candidates" if draws > 1 else ""
    print(f"\nBest-of-{n} at λ={lam}: macro accuracy, $/query, executed plans and LLM tokens per query{each}")
    for group in results[0]["lines"]:
        print(f"  [{group}]")
        for line in (*LINES, *GREEDY_LINES):
            rows = [r["lines"][group][line] for r in results]
            print(
                f"    {line:11s} macro {mean_sd([x['macro_acc'] for x in rows])}"
                f"  ${np.mean([x['cost_per_query'] for x in rows]):.3e}/query"
                f"  executed {np.mean([x['executed_per_query'] for x in rows]):.2f}"
                f"  tokens {np.mean([x['tokens_per_query'] for x in rows]):.0f}"
                f"  scoring tokens {rows[0]['scoring_tokens']}"
            )
        n1 = [100 * r["lines"][group]["n1"]["macro_acc"] for r in results]
        gain = [100 * r["lines"][group]["rm"]["macro_acc"] - a for r, a in zip(results, n1, strict=True)]
        matched = [100 * r["lines"][group]["rm_matched"]["macro_acc"] - a for r, a in zip(results, n1, strict=True)]
        greedy = [100 * r["lines"][group]["greedy"]["macro_acc"] for r in results]
        at_greedy = [
            100 * r["lines"][group]["rm_at_greedy"]["macro_acc"] - a for r, a in zip(results, greedy, strict=True)
        ]
        print(f"    rm − n1: {mean_sd(gain)} points; rm_matched − n1: {mean_sd(matched)} points")
        print(f"    rm_at_greedy − greedy: {mean_sd(at_greedy)} points")
        if draws > 1:
            spread = ", ".join(f"seed {r['seed']} {mean_sd(r['draw_gains'][group])}" for r in results)
            print(f"    rm_matched − n1 over the draws: {spread}")
    print(
        "\ntimes (s): "
        + ", ".join(f"seed {r['seed']}: RM {r['time/rm_s']:.1f}, policy {r['time/policy_s']:.1f}" for r in results)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.evaluate_rm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", nargs="+", required=True, type=Path, help="outcome files (.jsonl / .jsonl.gz)")
    parser.add_argument("--seeds", nargs="+", type=cli.seed, default=[0], help="seeds (each trains and evaluates anew)")
    parser.add_argument("--n", type=int, default=8, help="candidate plans per task (best-of-N)")
    parser.add_argument("--draws", type=int, default=1, help="draws of the N candidates per seed, averaged (default 1)")
    parser.add_argument("--lam", type=cli.finite, default=0.05, help="cost preference λ for sampling and scoring")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first outcome file)")
    parser.add_argument("--rm-config", type=Path, help="JSON config of OrchRM (as train_rm --config)")
    parser.add_argument(
        "--policy-config", type=Path, help="JSON config of the learned policy (as evaluate --learned-config)"
    )
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    for path in args.outcomes:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    if args.n < 1:
        parser.error("--n must be at least 1")
    if args.draws < 1:
        parser.error("--draws must be at least 1")
    if args.lam < 0:
        parser.error("--lam must be non-negative")
    prices = default_prices(args.outcomes, args.prices)
    try:
        cli.check_output(args.json, "--json")
        rm_config = RMConfig.from_mapping(cli.read_config(args.rm_config, "--rm-config"))
        policy_config = cli.read_config(args.policy_config, "--policy-config")
        LearnedConfig.from_mapping(policy_config)  # checked now, not after OrchRM has trained
        price_map = read_prices(prices) if prices else None
        table = load_routable(list(args.outcomes), prices=prices)
    except cli.INPUT_ERRORS as error:
        parser.error(str(error))
    results = []
    for seed in args.seeds:
        print(f"seed {seed}: training OrchRM and the policy ...", file=sys.stderr, flush=True)
        try:
            results.append(
                run_seed(
                    table,
                    seed=seed,
                    n=args.n,
                    lam=args.lam,
                    draws=args.draws,
                    rm_config=rm_config,
                    policy_config=policy_config,
                    prices=price_map,
                )
            )
        except cli.INPUT_ERRORS as error:
            parser.error(str(error))
    report(results, n=args.n, lam=args.lam, draws=args.draws)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report_json = {"n": args.n, "lam": args.lam, "draws": args.draws, "seeds": results}
        args.json.write_text(json.dumps(report_json, indent=1, default=float))
        print(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
