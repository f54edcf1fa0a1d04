"""What `orchestrator.evaluate_rm_composite` prints from its seeds' results: the held-out
pairwise accuracy, the best-of-N lines and gains, the live runs through the core, and what a
better per-leaf estimate would gain."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from orchestrator.evaluate_rm import mean_sd
from orchestrator.offline.composites import ASSUMPTIONS
from orchestrator.offline.rm_composite_lines import LIVE
from orchestrator.offline.rm_composite_seed import GAINS, LINES


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
