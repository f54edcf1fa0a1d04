"""Offline evaluation of routers on recorded outcomes: the learned policy and every baseline, side by side.

    python -m orchestrator.evaluate --outcomes FILE [FILE ...] [--train FILE ...] [--probe K]
        [--seed S] [--json OUT.json] [--plot OUT.png] [--methods a,b,...] [--prices P]
        [--max-train-items N] [--max-test-items N] [--checkpoint POLICY.pt]

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

Every method is scored on the same test items by `orchestrator.routing.metrics`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from orchestrator import cli
from orchestrator.baselines import BASELINES
from orchestrator.outcomes import read_prices
from orchestrator.routing import metrics
from orchestrator.routing.methods import Method, NotApplicable, knob_label
from orchestrator.routing.table import OutcomeTable, default_prices, load_table, probe_split, split_table

LEARNED = "learned"
METHOD_NAMES = (LEARNED, *BASELINES)

# on_progress(done, total, method): called before each method is fitted (done = methods
# finished so far) and once more at the end with done == total and method "".
OnProgress = Callable[[int, int, str], None]


@dataclass
class PointResult:
    """One operating point of a method: its knob value and what it achieved on test."""

    knob: float | None
    macro_acc: float
    cost_per_query: float
    calls_per_query: float
    per_domain: dict[str, float]
    per_benchmark: dict[str, float]
    violations: int


@dataclass
class MethodResult:
    name: str
    points: list[PointResult] = field(default_factory=list)
    fit_s: float = 0.0
    route_s: float = 0.0
    not_applicable: str | None = None
    aiq: float = float("nan")
    apgr: float = float("nan")
    cpt50: float | None = None
    cpt80: float | None = None

    @property
    def headline(self) -> PointResult:
        """The most accurate point (the cheaper of equals): the row a table shows."""
        return max(self.points, key=lambda p: (p.macro_acc, -p.cost_per_query))

    def frontier(self) -> list[metrics.Point]:
        return [(p.cost_per_query, p.macro_acc) for p in self.points]


@dataclass(frozen=True)
class Setting:
    """What is evaluated: the fitting table, the test table, and the probe for an unseen pool."""

    train: OutcomeTable
    test: OutcomeTable
    probe: OutcomeTable | None
    description: str


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
    if not fresh:
        raise UsageError("every --outcomes item is also in --train: nothing is left to test on")
    test = drop_unroutable(outcomes.rows(fresh))
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


def make_method(name: str, learned_config: dict[str, Any] | None, checkpoint: Path | None = None) -> Method:
    if name == LEARNED:
        from orchestrator.learning.method import LearnedMethod  # lazy: torch training code

        method: Method = LearnedMethod(learned_config, checkpoint=checkpoint)
        return method
    return BASELINES[name]()


def run_method(method: Method, setting: Setting, seed: int) -> MethodResult:
    """Fit once, route the test items at every knob, score each point."""
    result = MethodResult(name=method.name)
    start = time.perf_counter()
    try:
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
    result.apgr = metrics.apgr(points, anchors)
    result.cpt50 = metrics.cpt(points, anchors, 0.5)
    result.cpt80 = metrics.cpt(points, anchors, 0.8)


def _fmt(value: float | None, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def format_table(results: list[MethodResult], domains: list[str]) -> str:
    """One row per method (the learned policy also at each λ); columns as in issue 5."""
    header = ["method", "macro", *domains, "$/query", "AIQ", "APGR", "CPT50", "CPT80"]
    rows: list[list[str]] = []
    for result in results:
        if result.not_applicable is not None:
            rows.append([result.name, f"n/a: {result.not_applicable}"])
            continue
        sweep = result.points if result.name == LEARNED and len(result.points) > 1 else []
        for point in sweep:
            label = "" if point.knob is None else knob_label(point.knob)
            rows.append(
                [f"  {result.name} {label}", _fmt(point.macro_acc, ".3f")]
                + [_fmt(point.per_domain.get(d), ".3f") for d in domains]
                + [_fmt(point.cost_per_query, ".2e"), "", "", "", ""]
            )
        best = result.headline
        knob = "" if best.knob is None else f" (best @ {knob_label(best.knob)})"
        rows.append(
            [result.name + knob, _fmt(best.macro_acc, ".3f")]
            + [_fmt(best.per_domain.get(d), ".3f") for d in domains]
            + [
                _fmt(best.cost_per_query, ".2e"),
                _fmt(result.aiq, ".3f"),
                _fmt(result.apgr, ".3f"),
                _percent(result.cpt50),
                _percent(result.cpt80),
            ]
        )
    widths = [max(len(r[k]) for r in [header, *rows] if k < len(r) and len(r) > 2) for k in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    for row in rows:
        if len(row) == 2:
            lines.append(f"{row[0].ljust(widths[0])}  {row[1]}")
        else:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def report(
    results: list[MethodResult], setting: Setting, singles: dict[str, metrics.Point], **extra: Any
) -> dict[str, Any]:
    """The JSON report: {"methods": {name: {...}}, "items": N, "models": [...], ...}."""
    methods: dict[str, Any] = {}
    for result in results:
        if result.not_applicable is not None:
            methods[result.name] = {"not_applicable": result.not_applicable}
            continue
        best = result.headline
        methods[result.name] = {
            "macro_acc": best.macro_acc,
            "cost_per_query": best.cost_per_query,
            "aiq": result.aiq,
            "apgr": result.apgr,
            "cpt50": result.cpt50,
            "cpt80": result.cpt80,
            "points": [[p.cost_per_query, p.macro_acc] for p in result.points],
            "knobs": [p.knob for p in result.points],
            "per_domain": best.per_domain,
            "per_benchmark": best.per_benchmark,
            "calls_per_query": best.calls_per_query,
            "violations": sum(p.violations for p in result.points),
            "fit_s": result.fit_s,
            "route_s": result.route_s,
            "sweep": [vars(p) for p in result.points],
        }
    return {
        "methods": methods,
        "items": setting.test.n_items,
        "models": sorted({m for m, _ in setting.test.pairs}),
        "pairs": [list(p) for p in setting.test.pairs],
        "train_items": setting.train.n_items,
        "probe_items": 0 if setting.probe is None else setting.probe.n_items,
        "split": setting.description,
        "single_pairs": {name: list(point) for name, point in singles.items()},
        **extra,
    }


def finite(value: Any) -> Any:
    """The report with every NaN or infinity as null, so the JSON is standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def plot(results: list[MethodResult], singles: dict[str, metrics.Point], path: Path, title: str) -> None:
    """Accuracy against $/query (log x): each method's points and hull, each single pair as a grey dot.

    The hull is drawn from the method's cheapest point on, sampled densely, since a segment
    that is straight in cost is curved on a log axis.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for name, (cost, acc) in singles.items():
        ax.scatter([cost], [acc], color="0.6", s=14, zorder=1)
        label = name.split("/")[-1][:22]
        ax.annotate(label, (cost, acc), fontsize=6, color="0.45", xytext=(3, -2), textcoords="offset points")
    for result in results:
        positive = [(c, a) for c, a in result.frontier() if c > 0]
        if not positive:
            continue
        hull = metrics.nondecreasing_hull(positive)
        start = min(c for c, _ in positive)  # the ramp from the abstain point (0, 0) has no place on a log axis
        xs = np.geomspace(start, max(start, hull[-1][0]), 200)
        label = f"{result.name} (AIQ {result.aiq:.3f})"
        line = ax.plot(xs, [metrics.hull_value(hull, x) for x in xs], lw=1.5, label=label)[0]
        ax.scatter([c for c, _ in positive], [a for _, a in positive], s=12, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("$ / query (log)")
    ax.set_ylabel("macro pass@1")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


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
    names = METHOD_NAMES if args.methods is None else tuple(n.strip() for n in args.methods.split(",") if n.strip())
    unknown = [n for n in names if n not in METHOD_NAMES]
    if unknown or not names:
        parser.error(f"unknown method(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHOD_NAMES)}")
    args.method_names = names
    return parser, args


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

    embedded = [m for m in args.method_names if m in ("knn", "mf", "cascade", LEARNED)]
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
            method = make_method(name, learned_config, args.checkpoint)
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
    extra = {"seed": args.seed, "anchors": {"weak": [weak, *anchors.weak], "strong": [strong, *anchors.strong]}}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = finite(report(results, setting, singles, cost_range=cost_range, **extra))
        args.json.write_text(json.dumps(data, indent=1, allow_nan=False))
    if args.plot:
        plot(results, singles, args.plot, f"{', '.join(p.name for p in args.outcomes)}: {setting.description}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
