"""Reward-guided policy training against execution-grounded RL: executed tokens for a target accuracy.

    .venv/bin/python bench/reward_guided.py [--fractions 0.1 0.25 0.5 1.0] [--guided 0.1 0.25]
        [--seed 0] [--rl-iterations 60] [--outcomes FILE ...]

On the train split (routerbench + llmrouter by default), a seeded fraction f of the items
is *grounded*: executed on every pair, so its recorded outcomes may be read. For each f:
- executed: SFT then GRPO on the grounded items only (the usual trainer);
- guided (for the fractions in --guided): SFT on the grounded items, an OrchRM trained on
  their pairs, then GRPO on every train item, the others rewarded by OrchRM
  (`orchestrator.reward.guided`).
The pool's calibration statistics come from the grounded items only. Each policy is then
routed greedily on the test split at λ = 0 and at λ = 0.05. Printed per line: macro
accuracy, $/query, and the executed tokens (every recorded call of the grounded items).
The last lines give, for each target accuracy (executed RL's at each fraction unless
--target), the fewest executed tokens with which each kind reaches it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.learning.dataset import default_embedder  # noqa: E402
from orchestrator.learning.method import LearnedConfig  # noqa: E402
from orchestrator.outcomes import read_prices  # noqa: E402
from orchestrator.reward.guided import executed_tokens, fit_grounded  # noqa: E402
from orchestrator.routing import metrics  # noqa: E402
from orchestrator.routing.table import load_table, split_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = ROOT / "data" / "outcomes"
LAMS = (0.0, 0.05)


Row = tuple[str, float, float, list[tuple[float, float]]]  # kind, fraction, tokens, (macro, $/query) per λ


def fewest_tokens(rows: list[Row], targets: list[float]) -> list[str]:
    """Lines of a table: per target macro accuracy at λ = 0, the fewest executed tokens of each kind reaching it."""
    lines = [f"{'target':>8s} {'executed':>24s} {'guided':>24s}"]
    for target in targets:
        cells = []
        for kind in ("executed", "guided"):
            reached = [r for r in rows if r[0] == kind and r[3][0][0] >= target - 1e-9]
            best = min(reached, key=lambda r: r[2]) if reached else None
            cells.append(f"{best[2]:,.0f} ({best[1]:g})" if best else "not reached")
        lines.append(f"{target:8.4f} {cells[0]:>24s} {cells[1]:>24s}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--outcomes", nargs="+", type=Path, default=[OUTCOMES / "routerbench.jsonl.gz", OUTCOMES / "llmrouter.jsonl.gz"]
    )
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.1, 0.25, 0.5, 1.0])
    parser.add_argument("--guided", nargs="*", type=float, default=[0.1, 0.25])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rl-iterations", type=int, default=60)
    parser.add_argument(
        "--target",
        nargs="+",
        type=float,
        help="target macro accuracies at λ = 0 (default: executed RL's at each fraction)",
    )
    args = parser.parse_args()
    for f in [*args.fractions, *args.guided]:
        if not 0 < f <= 1:
            parser.error(f"fractions must be in (0, 1], not {f}")
    torch.set_num_threads(2)
    price_path = OUTCOMES / "prices.json"
    prices = read_prices(price_path) if price_path.is_file() else None
    table = load_table(args.outcomes, prices=price_path if prices else None)
    table = table.rows(np.flatnonzero(table.available().any(axis=1)))
    train, test = split_table(table, seed=args.seed)
    emb = np.asarray(default_embedder(list(train.prompts)), dtype=np.float32)
    config = LearnedConfig.from_mapping({"rl": {"iterations": args.rl_iterations}})
    order = np.random.default_rng(args.seed).permutation(train.n_items)
    runs = [("executed", f) for f in args.fractions] + [("guided", f) for f in args.guided if f < 1]
    rows = []
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"train {train.n_items} items, test {test.n_items}; RL {args.rl_iterations} iterations; seed {args.seed}")
    print(f"load average at start: {load}")
    print(
        f"{'kind':9s} {'fraction':>8s} {'executed tokens':>16s} "
        + " ".join(f"{'macro@' + str(lam):>11s} {'$/query':>9s}" for lam in LAMS)
        + "  fit s"
    )
    for kind, f in runs:
        grounded = np.sort(order[: max(1, round(f * train.n_items))])
        start = time.perf_counter()
        method = fit_grounded(
            train, emb, grounded, guided=kind == "guided", config=config, seed=args.seed, prices=prices
        )
        fit_s = time.perf_counter() - start
        tokens = executed_tokens(train.rows(grounded))
        results = []
        for lam in LAMS:
            routed = metrics.score_routes(test, method.route(test, knob=lam))
            results.append((metrics.macro_accuracy(routed.score, test.benchmarks), metrics.cost_per_query(routed.cost)))
        rows.append((kind, f, tokens, results))
        cells = " ".join(f"{acc:11.4f} {cost:9.2e}" for acc, cost in results)
        print(f"{kind:9s} {f:8.2f} {tokens:16,.0f} {cells}  {fit_s:5.0f}", flush=True)
    executed = [r for r in rows if r[0] == "executed"]
    targets = args.target or sorted({r[3][0][0] for r in executed})
    print("\nfewest executed tokens reaching a target macro accuracy at λ=0 (fraction in brackets)")
    print("\n".join(fewest_tokens(rows, targets)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
