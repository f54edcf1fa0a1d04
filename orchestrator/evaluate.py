"""Offline evaluation of routers on recorded outcomes: the learned policy and every baseline, side by side.

    python -m orchestrator.evaluate --outcomes FILE [FILE ...] [--train FILE ...] [--probe K]
        [--seed S] [--json OUT.json] [--plot OUT.png] [--methods a,b,...] [--prices P]
        [--max-train-items N] [--max-test-items N] [--checkpoint POLICY.pt] [--engine core|vectorized]

- With only --outcomes: split by item (the upstream split where every item has one, else a
  seeded 80/20), fit every method on train, report on test.
- With --train: fit on those files and test on --outcomes. Where the --outcomes pool has
  pairs that --train lacks, --probe K reveals K items of it (all their pairs) for
  calibration, to every method alike; those items leave the test set.
- --max-train-items / --max-test-items keep a seeded random subset of that many items of
  each side (after the split and the probe), for a quick run.
- --checkpoint: the learned policy is that trained checkpoint (`train_policy`, or one of the
  studio's), with the calibration it carries, instead of one fitted here: the figures of the
  policy that the studio serves (`bench/parity.py` compares them with live runs).
- --engine: how the learned method plays its items. `core` (the default): each item is a
  run of the orchestration core, the decisions a live run makes (`orchestrator.offline.shell`).
  `vectorized`: the batched episodes training plays, which decide the same
  (`tests/orchestrator/test_core_offline.py`) and take a fraction of the time.

Every method is scored on the same test items by `orchestrator.routing.metrics`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from orchestrator import cli
from orchestrator.baselines import BASELINES
from orchestrator.evaluate_frontier import dominated_counts, frontier_lines, preset_checks
from orchestrator.evaluate_report import LEARNED, MethodResult, PointResult, Setting, finite, format_table, plot, report
from orchestrator.outcomes import read_prices
from orchestrator.routing import metrics
from orchestrator.routing.clean import without_seen
from orchestrator.routing.methods import Method, NotApplicable
from orchestrator.routing.table import OutcomeTable, default_prices, load_table, probe_split, split_table

METHOD_NAMES = (LEARNED, *BASELINES)

# on_progress(done, total, method): called before each method is fitted (done = methods
# finished so far) and once more at the end with done == total and method "".
OnProgress = Callable[[int, int, str], None]


def prepare(args: argparse.Namespace, prices: Path | None) -> Setting:
    """Load the tables, make the split the CLI describes, then apply the item caps."""
    setting = _split(args, prices)
    train = subsample(setting.train, getattr(args, "max_train_items", None), seed=args.seed)
    test = subsample(setting.test, getattr(args, "max_test_items", None), seed=args.seed + 1)
    if train is setting.train and test is setting.test:
        return setting
    how = f"{setting.description}; capped at {train.n_items} train and {test.n_items} test items (seed {args.seed})"
    return Setting(train, test, setting.probe, how)


def subsample(table: OutcomeTable, cap: int | None, *, seed: int) -> OutcomeTable:
    """A seeded random `cap` items of the table, in their original order; the table itself when it is no larger."""
    if cap is None or table.n_items <= cap:
        return table
    keep = np.sort(np.random.default_rng(seed).choice(table.n_items, size=cap, replace=False))
    return table.rows(keep)


def _split(args: argparse.Namespace, prices: Path | None) -> Setting:
    outcomes = load_table(args.outcomes, prices=prices)
    if args.train is None:
        train, test = split_table(outcomes, seed=args.seed)
        upstream = {"train", "test"} == set(outcomes.splits)
        how = "upstream split" if upstream else f"seeded 80/20 split (seed {args.seed})"
        return Setting(train, drop_unroutable(test), None, how)

    train = load_table(args.train, prices=prices)
    if not train.n_items:
        raise UsageError(f"--train {' '.join(map(str, args.train))}: no records to fit on")
    seen = set(train.keys())
    fresh = [i for i, key in enumerate(outcomes.keys()) if key not in seen]
    test = without_seen(outcomes.rows(fresh), train)  # and by text: two sources share no keys
    if not test.n_items:
        raise UsageError("every --outcomes item is also in --train (by key or text): nothing is left to test on")
    test = drop_unroutable(test)
    if test.pairs == train.pairs and not args.probe:
        return Setting(train, test, None, "train on --train, test on --outcomes (same pool)")
    if not args.probe:
        raise UsageError("the --outcomes pairs differ from --train's: pass --probe K to calibrate on K items")
    probe, test = probe_split(test, k=args.probe, seed=args.seed)
    unseen = sorted({m for m, _ in test.pairs} - {m for m, _ in train.pairs})
    how = f"train on --train, test on --outcomes, {args.probe} probe items ({len(unseen)} unseen models)"
    return Setting(train, test, probe, how)


def drop_unroutable(table: OutcomeTable) -> OutcomeTable:
    """Items with no available pair (no recording with a known cost) cannot be routed; leave them out."""
    keep = np.flatnonzero(table.available().any(axis=1))
    if len(keep) < table.n_items:
        print(f"left out {table.n_items - len(keep)} test items with no pair of known cost", file=sys.stderr)
    return table.rows(keep)


class UsageError(Exception):
    """A bad combination of arguments; the CLI reports it as an argparse error."""


def single_pair_points(test: OutcomeTable) -> dict[str, metrics.Point]:
    """(cost per query, macro pass@1) of always calling one pair, over the test items where it is available."""
    available = test.available()
    points: dict[str, metrics.Point] = {}
    for j, (model, primitive) in enumerate(test.pairs):
        rows = np.flatnonzero(available[:, j])
        if len(rows) == 0:
            continue
        benchmarks = [test.benchmarks[i] for i in rows]
        name = model if primitive == "direct" else f"{model}/{primitive}"
        points[name] = (float(test.cost[rows, j].mean()), metrics.macro_accuracy(test.score[rows, j], benchmarks))
    return points


def anchors_of(singles: dict[str, metrics.Point]) -> metrics.Anchors:
    """Weak = the cheapest single pair, strong = the most accurate (the cheaper of equals)."""
    weak = min(singles.values(), key=lambda p: (p[0], -p[1]))
    strong = max(singles.values(), key=lambda p: (p[1], -p[0]))
    return metrics.Anchors(weak=weak, strong=strong)


def make_method(
    name: str, learned_config: dict[str, Any] | None, checkpoint: Path | None = None, engine: str = "core"
) -> Method:
    if name == LEARNED:
        from orchestrator.learning.method import LearnedMethod  # lazy: torch training code

        method: Method = LearnedMethod(learned_config, checkpoint=checkpoint, engine=engine)
        return method
    return BASELINES[name]()


def run_method(method: Method, setting: Setting, seed: int, *, fitted: bool = False) -> MethodResult:
    """Fit once (unless `fitted`), route the test items at every knob, score each point."""
    result = MethodResult(name=method.name)
    start = time.perf_counter()
    try:
        if not fitted:
            method.fit(setting.train, seed=seed, probe=setting.probe)
    except NotApplicable as exc:
        result.not_applicable = str(exc)
        return result
    result.fit_s = time.perf_counter() - start
    start = time.perf_counter()
    test = setting.test
    knobs: Sequence[float | None] = method.knobs or (None,)
    for knob in knobs:
        outcome = metrics.score_routes(test, method.route(test, knob=knob))
        result.points.append(
            PointResult(
                knob=knob,
                macro_acc=metrics.macro_accuracy(outcome.score, test.benchmarks),
                cost_per_query=metrics.cost_per_query(outcome.cost),
                calls_per_query=float(outcome.calls.mean()),
                per_domain=metrics.group_accuracy(outcome.score, test.domains),
                per_benchmark=metrics.group_accuracy(outcome.score, test.benchmarks),
                violations=outcome.violations,
            )
        )
    result.route_s = time.perf_counter() - start
    return result


def add_frontier_metrics(result: MethodResult, cost_range: tuple[float, float], anchors: metrics.Anchors) -> None:
    if not result.points:
        return
    points = result.frontier()
    result.aiq = metrics.aiq(points, cost_range)
    result.aiq_rb = metrics.aiq_routerbench(points, cost_range[1])
    result.apgr = metrics.apgr(points, anchors)
    result.cpt50 = metrics.cpt(points, anchors, 0.5)
    result.cpt80 = metrics.cpt(points, anchors, 0.8)


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", nargs="+", required=True, type=Path, help="outcome files to test on")
    parser.add_argument("--train", nargs="+", type=Path, help="outcome files to fit on (else split --outcomes)")
    parser.add_argument("--probe", type=int, default=0, help="items of an unseen pool revealed for calibration")
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--plot", type=Path, help="write the Pareto plot (PNG) here")
    parser.add_argument("--methods", help=f"comma-separated subset of: {','.join(METHOD_NAMES)}")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first --outcomes file)")
    parser.add_argument("--learned-config", type=Path, help="JSON config for the learned policy")
    parser.add_argument("--max-train-items", type=int, help="fit on a seeded random subset of this many train items")
    parser.add_argument("--max-test-items", type=int, help="test on a seeded random subset of this many test items")
    parser.add_argument("--checkpoint", type=Path, help="the learned policy: this trained checkpoint, not one fit here")
    parser.add_argument(
        "--engine", choices=("core", "vectorized"), default="core",
        help="the learned method's items: runs of the orchestration core (default), or batched episodes",
    )  # fmt: skip
    args = parser.parse_args(argv)
    for path in [*args.outcomes, *(args.train or []), *([args.prices] if args.prices else [])]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    for option in ("learned_config", "checkpoint"):
        if getattr(args, option) is not None and not getattr(args, option).is_file():
            parser.error(f"no such file: {getattr(args, option)}")
    if args.probe < 0:
        parser.error("--probe must be a non-negative number of items")
    for cap in ("max_train_items", "max_test_items"):
        if getattr(args, cap) is not None and getattr(args, cap) < 1:
            parser.error(f"--{cap.replace('_', '-')} must be a positive number of items")
    if args.probe and args.train is None:
        parser.error("--probe needs --train: it calibrates on an unseen pool")
    args.method_names = METHOD_NAMES if args.methods is None else method_names(parser, args.methods)
    return parser, args


def method_names(parser: argparse.ArgumentParser, text: str) -> tuple[str, ...]:
    """`--methods a,b`: known method names, else a one-line usage error."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in METHOD_NAMES]
    if unknown or not names:
        parser.error(f"unknown method(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHOD_NAMES)}")
    return names


def check_checkpoint(path: Path) -> None:
    """A --checkpoint the learned method can use: a policy checkpoint carrying its calibration."""
    from orchestrator.learning.model import checkpoint_file_facts

    try:
        _, calibration = checkpoint_file_facts(path)
    except Exception as exc:  # torch.load raises many kinds
        raise UsageError(f"--checkpoint {path} cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not calibration:
        raise UsageError(f"--checkpoint {path} carries no calibration (trained before checkpoints did): train it again")


def main(argv: Sequence[str] | None = None, on_progress: OnProgress | None = None) -> int:
    parser, args = parse_args(argv)
    prices = default_prices(args.outcomes, args.prices)
    try:
        cli.check_output(args.json, "--json")
        cli.check_output(args.plot, "--plot")
        learned_config = cli.read_config(args.learned_config, "--learned-config")
        if args.checkpoint is not None:
            check_checkpoint(args.checkpoint)
        if LEARNED in args.method_names:  # checked now, not after the embedding
            from orchestrator.learning.method import LearnedConfig

            prices_file = LearnedConfig.from_mapping(learned_config).prices
            if prices_file:
                read_prices(prices_file)
        setting = prepare(args, prices)
    except (UsageError, ValueError) as exc:
        parser.error(str(exc))
    except OSError as exc:
        parser.error(f"cannot read the outcome files: {exc}")
    test = setting.test
    if test.n_items == 0:
        parser.error("no test item has a pair with a known score and cost")
    sizes = f"{setting.train.n_items} train items, {test.n_items} test items, {test.n_pairs} pairs"
    print(f"{setting.description}: {sizes}")

    embedded = [m for m in args.method_names if m in ("knn", "cluster", "mf", "cascade", LEARNED)]
    if embedded:
        from orchestrator.embedding import embed

        prompts = setting.train.prompts + test.prompts + (setting.probe.prompts if setting.probe else [])
        print(f"embedding {len(prompts)} prompts (cached per text)", file=sys.stderr)
        embed(prompts, progress=True)

    results: list[MethodResult] = []
    for done, name in enumerate(tqdm(args.method_names, desc="methods", file=sys.stderr)):
        if on_progress is not None:
            on_progress(done, len(args.method_names), name)
        try:
            method = make_method(name, learned_config, args.checkpoint, args.engine)
        except ImportError as exc:
            print(f"{name}: not available ({exc})")
            continue
        results.append(run_method(method, setting, args.seed))
    if on_progress is not None:
        on_progress(len(args.method_names), len(args.method_names), "")

    singles = single_pair_points(test)
    anchors = anchors_of(singles)
    cost_range = (min(c for c, _ in singles.values()), max(c for c, _ in singles.values()))
    for result in results:
        add_frontier_metrics(result, cost_range, anchors)
    domains = sorted(set(test.domains))
    print(format_table(results, domains))
    weak = next(n for n, p in singles.items() if p == anchors.weak)
    strong = next(n for n, p in singles.items() if p == anchors.strong)
    print(
        f"anchors: weak {weak} ({anchors.weak[1]:.3f} at ${anchors.weak[0]:.2e}), "
        f"strong {strong} ({anchors.strong[1]:.3f} at ${anchors.strong[0]:.2e}); "
        f"AIQ over ${cost_range[0]:.2e}..${cost_range[1]:.2e}; CPT in % of the strong pair's cost"
    )
    beaten = dominated_counts(results, singles)
    presets = preset_checks(results, singles)
    for line in frontier_lines(results, beaten, presets):
        print(line)
    extra = {"seed": args.seed, "anchors": {"weak": [weak, *anchors.weak], "strong": [strong, *anchors.strong]},
             "dominated_points": beaten, "presets": presets}  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = finite(report(results, setting, singles, cost_range=cost_range, **extra))
        args.json.write_text(json.dumps(data, indent=1, allow_nan=False))
    if args.plot:
        plot(results, singles, args.plot, f"{', '.join(p.name for p in args.outcomes)}: {setting.description}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
