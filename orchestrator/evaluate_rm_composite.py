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
from collections.abc import Sequence
from pathlib import Path

from orchestrator import cli
from orchestrator.evaluate_composite import add_draw_arguments
from orchestrator.offline.composites import ASSUMPTIONS
from orchestrator.offline.rm_composite_report import report
from orchestrator.offline.rm_composite_seed import run_seed
from orchestrator.outcomes import read_prices
from orchestrator.routing.table import default_prices, load_routable
from orchestrator.train_rm import RMConfig


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
